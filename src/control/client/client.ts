// ConversationClient: the library every client of a controller uses (seed: Mediated control).
// Its typed requests: each checks its arguments here (a bad one refuses `malformed`, nothing
// written) and settles as an Outcome. The socket, the hello, the pending requests and the
// reconnect are the connection's (client-connection.ts). What requests answer (outcomes.ts),
// what goes wrong (client-issues.ts) and the options (client-options.ts) are files of their
// own, re-exported here: this module is what a client imports.
import { randomUUID } from "node:crypto";
import {
  type BudgetLimits,
  CONFIRMED_OPERATIONS,
  type ConfirmedOperation,
  DECISIONS,
  type Decision,
  parseBudgetLimits,
  type Reply,
} from "../protocol.ts";
import { ClientConnection, type RequestBody } from "./client-connection.ts";
import { isId, isObj } from "./controller-message.ts";
import {
  type Confirmed,
  type ConfirmOutcome,
  type ControlOutcome,
  idIn,
  localRefusal,
  type ObserveOutcome,
  type Outcome,
  outcomeOf,
  type PromptOutcome,
  type RecoverOutcome,
  readSeam,
  type Settled,
} from "./outcomes.ts";

export { type ClientIssue, ConnectError, type ConnectErrorCode } from "./client-issues.ts";
export {
  type ConversationClientOptions,
  parseEventId,
  RECONNECT_DELAYS_MS,
} from "./client-options.ts";
export { type ParsedControllerMessage, parseControllerMessage } from "./controller-message.ts";
export type {
  Confirmed,
  ConfirmOutcome,
  ControlOutcome,
  ObserveOutcome,
  Outcome,
  PromptOutcome,
  RecoverOutcome,
  Refused,
  Seam,
  Unknown,
} from "./outcomes.ts";

export class ConversationClient extends ClientConnection {
  /** A reader page plus the live stream's seam. `limit` (1–100) is advisory. */
  async observe(options: { limit?: number; cursor?: string } = {}): Promise<ObserveOutcome> {
    const body: RequestBody = { op: "observe" };
    const { limit, cursor } = options;
    if (limit !== undefined) {
      if (!Number.isSafeInteger(limit) || limit < 1 || limit > 100) {
        return localRefusal("malformed", "observe's limit is an integer from 1 to 100");
      }
      body.limit = limit;
    }
    if (cursor !== undefined) {
      if (typeof cursor !== "string" || cursor.length === 0 || cursor.length > 512) {
        return localRefusal("malformed", "observe's cursor is a cursor string");
      }
      body.cursor = cursor;
    }
    return this.#outcome(await this.request(body, false), (reply) => {
      if (!isObj(reply.result)) return "observe's result is not an object";
      const seam = readSeam(reply.result.seam);
      return typeof seam === "string" ? seam : { seam, result: reply.result };
    });
  }

  /** Become the controller (H1–H4). */
  async takeover(): Promise<ControlOutcome> {
    return this.#plain(await this.request({ op: "takeover" }, true));
  }

  async release(): Promise<ControlOutcome> {
    return this.#plain(await this.request({ op: "release" }, true));
  }

  /** Sends `text` with a fresh draft id at revision 1; the library keeps no draft state. */
  async prompt(text: string): Promise<PromptOutcome> {
    if (typeof text !== "string") return localRefusal("malformed", "prompt text is a string");
    const draft = { id: `d-${randomUUID()}`, revision: 1 };
    return this.#outcome(await this.request({ op: "prompt", text, draft }, true), (reply) =>
      reply.receipt ? { receipt: reply.receipt } : "an admitted prompt's reply has no receipt",
    );
  }

  async interrupt(): Promise<ControlOutcome> {
    return this.#plain(await this.request({ op: "interrupt" }, true));
  }

  /** Issues a confirmation for `operation`; use it with forceStop or recover. */
  async confirm(operation: ConfirmedOperation): Promise<ConfirmOutcome> {
    if (!(CONFIRMED_OPERATIONS as readonly unknown[]).includes(operation)) {
      return localRefusal("malformed", "confirm names force-stop or recover");
    }
    return this.#outcome(await this.request({ op: "confirm", operation }, true), (reply) => {
      const confirmation = idIn(reply.result, "confirmation");
      return confirmation === null
        ? "an admitted confirm's result names no confirmation id"
        : { confirmation, result: reply.result };
    });
  }

  async forceStop(confirmation: string): Promise<ControlOutcome> {
    if (!isId(confirmation)) return localRefusal("malformed", "a confirmation is an id");
    return this.#plain(await this.request({ op: "force-stop", confirmation }, true));
  }

  /** After a proven stop: resolves with the single-use eligibility id that `launch` takes. */
  async recover(confirmation: string): Promise<RecoverOutcome> {
    if (!isId(confirmation)) return localRefusal("malformed", "a confirmation is an id");
    return this.#outcome(await this.request({ op: "recover", confirmation }, true), (reply) => {
      const eligibility = idIn(reply.result, "eligibility");
      return eligibility === null
        ? "an admitted recover's result names no eligibility id"
        : { eligibility, result: reply.result };
    });
  }

  /** Issues a confirmation, then uses it: `confirm` then `force-stop` or `recover`. */
  confirmed(operation: "force-stop"): Promise<Confirmed<ControlOutcome>>;
  confirmed(operation: "recover"): Promise<Confirmed<RecoverOutcome>>;
  async confirmed(
    operation: ConfirmedOperation,
  ): Promise<Confirmed<ControlOutcome> | Confirmed<RecoverOutcome>> {
    const issued = await this.confirm(operation);
    if (issued.outcome !== "admitted") return { ...issued, step: "confirm" };
    const used =
      operation === "recover"
        ? await this.recover(issued.confirmation)
        : await this.forceStop(issued.confirmation);
    return { ...used, step: "use" };
  }

  /**
   * Answers an approval the engine asked (`dialog.method === "approval"`): allow or deny, with a
   * message for a deny. Only the controlling connection's answer is admitted, and only the first.
   */
  async answer(dialog: string, decision: Decision, message?: string): Promise<ControlOutcome> {
    if (!isId(dialog)) return localRefusal("malformed", "a dialog is an id");
    if (!(DECISIONS as readonly unknown[]).includes(decision)) {
      return localRefusal("malformed", 'a decision is "allow" or "deny"');
    }
    const body: RequestBody =
      message === undefined
        ? { op: "answer", dialog, decision }
        : { op: "answer", dialog, decision, message };
    return this.#plain(await this.request(body, true));
  }

  /**
   * Answers a budget dialog (`dialog.method === "budget"`) by raising the budget to `limits`
   * (USD in whole cents and/or tokens): needs the controller and the budget capability. To
   * stop instead, `answer(dialog, "deny")`.
   */
  async raiseBudget(dialog: string, limits: BudgetLimits): Promise<ControlOutcome> {
    if (!isId(dialog)) return localRefusal("malformed", "a dialog is an id");
    const checked = parseBudgetLimits(limits);
    if (typeof checked === "string") return localRefusal("malformed", checked);
    return this.#plain(
      await this.request({ op: "answer", dialog, decision: "allow", budget: checked }, true),
    );
  }

  /** Changes the budget (the `budget` op): USD in whole cents and/or tokens; an admin's. */
  async budget(limits: BudgetLimits): Promise<ControlOutcome> {
    const checked = parseBudgetLimits(limits);
    if (typeof checked === "string") return localRefusal("malformed", checked);
    return this.#plain(await this.request({ op: "budget", ...checked }, true));
  }

  /** Launches a recovered execution with a single-use eligibility id (K17, K18). */
  async launch(eligibility: string): Promise<ControlOutcome> {
    if (!isId(eligibility)) return localRefusal("malformed", "an eligibility record is an id");
    return this.#plain(await this.request({ op: "launch", eligibility }, true));
  }

  #plain(settled: Settled): ControlOutcome {
    return this.#outcome(settled, (reply) =>
      reply.result === undefined ? {} : { result: reply.result },
    );
  }

  #outcome<T extends object>(settled: Settled, admitted: (reply: Reply) => T | string): Outcome<T> {
    return outcomeOf(settled, admitted, (issue) => this.issue(issue));
  }
}
