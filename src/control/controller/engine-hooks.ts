// The hooks one execution's engine reports through (harness.ts EngineHooks): a prompt's answer,
// turn signals, events, dialogs, spend, withdrawals and a lost binding. Each acts only while its
// execution is still the controller's current one, so a replaced engine's late lines reach no
// client of the next.
import type { Spend } from "../../usage/lines.ts";
import type { EngineHooks } from "../engine/harness.ts";
import { type DialogOutlet, disabledDialog, endApproval, openApproval } from "./dialogs.ts";
import type { Execution } from "./execution.ts";
import type { ControlRecord } from "./records.ts";
import type { PromptResponse } from "./turns.ts";

export type EngineHooksHost = {
  /** The execution these hooks belong to while it is the current one; null otherwise. */
  current(): Execution | null;
  promptAcked(success: boolean, response: PromptResponse): void;
  broadcastLine(line: string): void;
  /** Where the dialogs' records and messages go. */
  outlet: DialogOutlet;
  spent(spend: Spend): void;
  record(record: ControlRecord): void;
  broadcastState(): void;
};

export function engineHooks(host: EngineHooksHost): EngineHooks {
  return {
    prompted: (ack) => {
      if (!host.current()) return;
      host.promptAcked(
        ack.success,
        ack.success ? { disposition: ack.disposition ?? null } : { error: ack.error },
      );
    },
    signal: (signal) => {
      host.current()?.tracker.onSignal(signal);
    },
    event: (event) => {
      const exec = host.current();
      if (exec) host.broadcastLine(exec.stream.next(event).line);
    },
    dialog: (d) => {
      const exec = host.current();
      if (!exec) return;
      if (d.kind === "ui") recordDisabled(exec, host.outlet, d.native, d.method, d.title);
      else openApproval(exec, host.outlet, d.native, d.tool);
    },
    spent: (spend) => {
      if (host.current()) host.spent(spend);
    },
    withdrawn: (native) => {
      const exec = host.current();
      if (!exec) return;
      const id = exec.approvals.idOf(native);
      if (id === null) return;
      endApproval(exec, host.outlet, id, "closed", { reason: "the engine withdrew it" });
    },
    unbound: (why) => {
      const exec = host.current();
      if (!exec) return;
      exec.closers.add("uncertain");
      exec.binding = { ...exec.binding, state: "uncertain", reason: `unbound: ${why}` };
      host.record(exec.binding);
      host.broadcastState();
    },
  };
}

function recordDisabled(
  exec: Execution,
  outlet: DialogOutlet,
  native: string,
  method: string,
  title: string | undefined,
): void {
  const { record, message } = disabledDialog(exec.execution, native, method, title);
  exec.dialogs.push(record);
  outlet.record(record);
  outlet.broadcast(message);
}
