// The approvals `conversation attach` shows (issue 26; docs/control-protocol.md, Approvals): what
// the engine asks to run, in a panel above the status line, with the keys to allow (^Y) or deny
// (^N) while this connection holds control, and otherwise who can answer and how to take
// control; when an approval ends, who answered and what, or that an interrupt, a stop or the
// engine ended it; and an answer the controller refused, in words with what to do. Pure: the
// app (attach.ts) feeds it the dialogs and states the client is pushed and draws its lines.
// Every text that came from the engine or a client goes through wrap.ts (the visible-text rule).
import type { Dialog } from "../control/protocol.ts";
import { budgetEndedWords, budgetFiguresLine, budgetHead, budgetKeys } from "./attach-budget.ts";
import { answeredByWords } from "./dialog-answerer.ts";
import { renderToolCall } from "./render.ts";
import { wrapText } from "./wrap.ts";

/** What the panel needs of this connection and the controller. */
export type ApprovalView = {
  /** This connection's role; null while not connected. */
  role: "controller" | "observer" | null;
  /** This connection's id (to say "you" for its own answers). */
  connection: string | null;
  /** The connection that controls now, or null (nobody). */
  controllerConnection: string | null;
};

/** The keys, as the panel and the help name them. */
export const ALLOW_KEY = "^Y";
export const DENY_KEY = "^N";

/**
 * The approvals this terminal knows of, as pushed: open ones oldest first, and the one that ended
 * last (shown until the next one opens or ends). A new welcome starts afresh: the controller
 * sends every approval still open right after it, and one that ended while the connection was
 * away is not pushed again.
 */
export class ApprovalBoard {
  readonly #open = new Map<string, Dialog>();
  /** Open approvals this connection controlled after they opened and then lost control of. */
  readonly #lost = new Set<string>();
  #ended: Dialog | null = null;

  /** Takes one pushed dialog; what it changed (nothing for Pi's disabled dialogs). */
  take(d: Dialog): { opened: Dialog } | { ended: Dialog } | null {
    // A budget dialog (the controller's own question) shares the panel and the keys.
    if ((d.method !== "approval" && d.method !== "budget") || d.disabled) return null;
    if (d.state === "open") {
      if (this.#open.has(d.id)) return null;
      this.#open.set(d.id, d);
      return { opened: d };
    }
    // An end of one never seen open (it opened before this connection, ended at once) counts too.
    this.#open.delete(d.id);
    this.#lost.delete(d.id);
    this.#ended = d;
    return { ended: d };
  }

  /** A new welcome: the controller pushes whatever is still open right after it. */
  reset(): void {
    this.#open.clear();
    this.#lost.clear();
  }

  /**
   * Records this connection's role now. A connection that controlled after an approval opened
   * and lost control since may not answer it, even when it takes control again (H7): remembered
   * here so the panel says so before the controller has to.
   */
  observeRole(role: ApprovalView["role"], wasController: boolean): void {
    if (role === "controller" || !wasController) return;
    for (const id of this.#open.keys()) this.#lost.add(id);
  }

  /** The approval the keys answer: the oldest open one. */
  get current(): Dialog | null {
    for (const d of this.#open.values()) return d;
    return null;
  }

  get openCount(): number {
    return this.#open.size;
  }

  get lastEnded(): Dialog | null {
    return this.#ended;
  }

  lostControlOf(id: string): boolean {
    return this.#lost.has(id);
  }
}

/** The tool an approval names, in words (a dialog without one says so). */
function toolName(d: Dialog): string {
  return d.tool?.name ?? "a tool";
}

/**
 * How an approval ended, in words: who answered (you, or the actor and connection) and what; or
 * what else ended it (an interrupt, a force stop, the engine's exit, the engine withdrawing it).
 */
export function endedWords(d: Dialog, me: string | null): string {
  if (d.method === "budget") return budgetEndedWords(d, me);
  const tool = toolName(d);
  const who = answeredByWords(d, me);
  const message = d.message === undefined ? "" : `, saying: ${d.message}`;
  if (d.state === "allowed") return `${tool} allowed by ${who ?? "someone"}: it runs`;
  if (d.state === "denied") {
    if (who !== null) return `${tool} denied by ${who}${message}`;
    return `${tool} denied${d.reason ? ` (${d.reason})` : ""}: it does not run`;
  }
  // Closed: a force stop, the engine's exit or its withdrawing the question; nothing ran.
  return `${tool} not answered, ${d.reason ?? "closed"}: it does not run`;
}

/** What the person can do about the open approval `d`, given who controls. */
function whatToDo(d: Dialog, board: ApprovalBoard, view: ApprovalView): string {
  if (view.role === null) return "not connected: ^O reconnects (the approval stays open)";
  if (board.lostControlOf(d.id)) {
    return (
      "you lost control after it opened, so this connection can't answer it; " +
      (view.role === "controller" && d.method !== "budget"
        ? "^G interrupts, which denies it"
        : "another connection that controls answers it")
    );
  }
  if (view.role === "controller") {
    return d.method === "budget" ? budgetKeys(d) : `${ALLOW_KEY} allows · ${DENY_KEY} denies`;
  }
  const holder =
    view.controllerConnection === null
      ? "nobody controls this conversation"
      : `connection ${view.controllerConnection} controls this conversation and answers`;
  return `only the controller answers: ${holder}; ^T takes control, then ${ALLOW_KEY} or ${DENY_KEY}`;
}

/**
 * The panel's lines, at most `maxRows` of `width` columns: the open approval (what it asks to
 * run, its input as the transcript shows a tool call) and the keys or who can answer; or the
 * last end. Empty when there is nothing to show.
 */
export function approvalLines(
  board: ApprovalBoard,
  view: ApprovalView,
  width: number,
  maxRows: number,
): string[] {
  const d = board.current;
  const one = (text: string, indent = 0) => wrapText(text, { width, indent, oneLine: true });
  if (d === null) {
    const ended = board.lastEnded;
    if (ended === null) return [];
    const kind = ended.method === "budget" ? "budget" : "approval";
    return one(`${kind}: ${endedWords(ended, view.connection)}`).slice(0, 1);
  }
  const count = board.openCount > 1 ? ` (1 of ${board.openCount})` : "";
  if (d.method === "budget") {
    const head = one(`── budget${count}: ${budgetHead(d)}`);
    const meter = budgetFiguresLine(d);
    const figures = meter === null ? [] : one(meter, 2);
    const keys = wrapText(whatToDo(d, board, view), { width, indent: 2 });
    return [...head, ...figures, ...keys].slice(0, Math.max(1, maxRows));
  }
  const name = toolName(d);
  // The title is the tool's name and the engine's reason (dialogs.ts); the name is said already.
  const said = d.title.startsWith(`${name}: `) ? d.title.slice(name.length + 2) : d.title;
  const head = one(`── approval${count}: run ${name}?${said === name ? "" : ` ${said}`}`);
  const input = renderToolCall(name, JSON.stringify(d.tool?.input ?? {}) ?? "{}", width);
  const why = (d.tool?.input as { description?: unknown } | undefined)?.description;
  if (typeof why === "string" && why !== said)
    input.push(...wrapText(`(${why})`, { width, indent: 4 }));
  const keys = wrapText(whatToDo(d, board, view), { width, indent: 2 });
  const room = Math.max(1, maxRows - head.length - keys.length);
  const shown =
    input.length <= room
      ? input
      : [
          ...input.slice(0, Math.max(0, room - 1)),
          ...one(`… ${input.length - room + 1} more lines`, 4),
        ];
  return [...head, ...shown, ...keys].slice(0, Math.max(1, maxRows));
}

/** A refused answer in words, with what to do (the controller's code and message after them). */
export function answerRefusalWords(code: string, message: string): string {
  const said: Record<string, string> = {
    controller:
      "not answered: only the connection in control answers, and not one that lost control " +
      "after the approval opened; ^T takes control (an approval you lost is answered by the " +
      "controller, or denied by ^G)",
    dialog: "not answered: the approval is no longer open (answered, interrupted or closed)",
    generation: "not answered: control changed hands just before; look again, then answer",
    fenced: "not answered: the engine is stopping, so only a deny goes through",
    capability:
      "not answered: this grant may not answer this (a raise needs the budget capability); " +
      "attach with one that may, or ^N stops here",
    budget:
      "not raised: the controller refused the new limit (it must be above what was spent); " +
      "type a larger amount, then ^Y",
    channel: "not sent: the controller can't be reached; ^O reconnects",
  };
  return `${said[code] ?? "not answered"} (${code}: ${message})`;
}
