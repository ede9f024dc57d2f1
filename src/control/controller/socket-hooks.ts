// What the controller's socket does with its connections (socket.ts ServerHooks): a hello is
// answered from the grants and the state now (hello.ts); a request is audited (audit-hook.ts),
// announced to every client once admitted (acts.ts), then handed to the operations; a closed
// connection is forgotten and, if it held control, control is free.
import type { ControllerState, Grant } from "../protocol.ts";
import { announcingConnection } from "./acts.ts";
import { type AuditHost, auditedConnection } from "./audit-hook.ts";
import type { BudgetGuard } from "./budget-guard.ts";
import type { Execution } from "./execution.ts";
import { answerHello } from "./hello.ts";
import type { Operations } from "./operations.ts";
import type { ServerHooks } from "./socket.ts";

export type SocketHooksHost = {
  grants: ReadonlyMap<string, Grant>;
  conversation: string;
  controllerConnection(): string | null;
  /** The controlling connection closed: control is free (and the state says so). */
  freeControl(): void;
  state(): ControllerState;
  exec(): Execution | null;
  budget: BudgetGuard;
  ops: Operations;
  broadcastLine(line: string): void;
  /** Where the audit hook reports each answered act (the ledger), and what a failure means. */
  audit: AuditHost;
};

export function socketHooks(host: SocketHooksHost): ServerHooks {
  return {
    hello: (conn, hello) =>
      answerHello(conn, hello, {
        grants: host.grants,
        conversation: host.conversation,
        controllerConnection: host.controllerConnection(),
        state: host.state(),
        stream: host.exec()?.stream,
        openDialogs: [
          ...(host.exec()?.approvals.openMessages() ?? []),
          ...host.budget.openMessages(),
        ],
      }),
    request: (conn, request) => {
      const audited = auditedConnection(conn, request, host.audit);
      if (audited === null) return;
      // Every client is told who did what, once it was admitted (acts.ts).
      const told = announcingConnection(
        audited,
        request,
        () => (conn.grant === null ? null : host.grants.get(conn.grant)?.actor) ?? "unknown",
        (act) => {
          if (act.dialog !== undefined) {
            act.about = host.budget.owns(act.dialog) ? "budget" : "approval";
          }
          const exec = host.exec();
          if (exec) host.broadcastLine(exec.stream.next(act).line);
        },
      );
      host.ops.handle(told, request);
    },
    closed: (conn) => {
      host.ops.forget(conn.id);
      if (host.controllerConnection() === conn.id) host.freeControl();
    },
  };
}
