// `conversation attach`: the mediated terminal (seed: The terminal), a thin view over
// ConversationClient and Transcript. On a terminal it runs in raw mode with bracketed paste
// (and the alternate screen unless --no-alt-screen); otherwise (pipes, tests) it reads the
// same key bytes from stdin and writes each changed screen as plain text frames, with no
// control sequences at all. Invariants: every text from the engine, the transcript or the
// controller passes src/present/visible.ts (through wrap.ts or makeVisible) before it is
// written, so the only control sequences on the terminal are this file's own; a request is
// sent once and a lost outcome is reported, never resent.
import { ConnectError, ConversationClient, RECONNECT_DELAYS_MS } from "../control/client/client.ts";
import type { ControlOutcome } from "../control/client/outcomes.ts";
import { Transcript, type TranscriptItem } from "../control/client/transcript.ts";
import type { ControllerState, Dialog } from "../control/protocol.ts";
import { placesFor } from "../control/registry/places.ts";
import { findController } from "../control/registry/registry.ts";
import { budgetMeterText } from "../present/budget-meter.ts";
import { makeVisible } from "../present/visible.ts";
import {
  ApprovalBoard,
  type ApprovalView,
  answerRefusalWords,
  approvalLines,
  endedWords,
} from "./attach-approvals.ts";
import type { AttachCommand } from "./attach-args.ts";
import { budgetHead, budgetKey } from "./attach-budget.ts";
import { fitLine, renderItems } from "./attach-lines.ts";
import { processScreen, type Screen } from "./attach-screen.ts";
import { commandLine } from "./invocation.ts";
import { Composer, type ComposerEffect, InputDecoder, type KeyAction } from "./terminal-input.ts";
import { textWidth, wrapText } from "./wrap.ts";

/** The lone-ESC pause: after it a held ESC is the Escape key (terminal-input.ts). */
export const ESC_TIMEOUT_MS = 50;
const HINTS =
  "Enter send · ^J newline · ^T control · ^G interrupt · ^O reread · ^R recall · ^C quit";
const CSI = "\x1b[";

/** Runs the terminal until the person quits or `signal` aborts. */
export async function runAttach(
  cmd: AttachCommand,
  err: (text: string) => void,
  signal: AbortSignal,
  screen: Screen = processScreen(cmd),
): Promise<number> {
  let socketPath: string;
  if ("socket" in cmd.target) socketPath = cmd.target.socket;
  else {
    const found = findSocket(cmd.target.conversation, cmd.target.stateDir);
    if (!found.ok) {
      err(`conversation: cannot attach: ${makeVisible(found.error, { showNewlines: true })}\n`);
      return 1;
    }
    socketPath = found.value;
  }
  const client = new ConversationClient({
    socketPath,
    grant: cmd.grant,
    clientName: "conversation attach",
    // A short drop (a restarted controller socket, a suspended laptop) resumes by itself, and
    // the replay fills the gap, so the transcript shows no seam (issue 16).
    reconnect: { delaysMs: RECONNECT_DELAYS_MS },
  });
  const transcript = new Transcript({ client });
  try {
    await client.connect();
  } catch (e) {
    transcript.close();
    const why = e instanceof ConnectError ? `${e.code}: ${e.message}` : String(e);
    err(`conversation: cannot attach: ${makeVisible(why, { showNewlines: true })}\n`);
    return 1;
  }
  const app = new AttachApp(client, transcript, screen, cmd.altScreen);
  return app.run(signal);
}

/** The socket of the live controller of `conversation`, by the registry. */
function findSocket(
  conversation: string,
  stateDir: string | undefined,
): { ok: true; value: string } | { ok: false; error: string } {
  const places = placesFor(stateDir);
  let entry: ReturnType<typeof findController>;
  try {
    entry = findController(places.registry, conversation);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    return { ok: false, error: `the registry ${places.registry} can't be used: ${why}` };
  }
  if (entry !== null) return { ok: true, value: entry.socket };
  const where = stateDir === undefined ? "" : ` under ${stateDir}`;
  return {
    ok: false,
    error:
      `no controller runs ${conversation}${where}. See the running ones with ` +
      `"${commandLine(["controllers", ...(stateDir === undefined ? [] : ["--state-dir", stateDir])])}", ` +
      `or start one (see "${commandLine(["control", "--help"])}")`,
  };
}

class AttachApp {
  readonly #client: ConversationClient;
  readonly #transcript: Transcript;
  readonly #screen: Screen;
  readonly #altScreen: boolean;
  readonly #decoder = new InputDecoder();
  readonly #composer = new Composer();
  readonly #detach: (() => void)[] = [];
  #notice = "";
  /** Lines scrolled up from the bottom; 0 follows the end. */
  #scroll = 0;
  #bodyRows = 1;
  #escTimer: NodeJS.Timeout | null = null;
  #drawQueued = false;
  #lastFrame = "";
  #frames = 0;
  #done: (() => void) | null = null;
  #quitting = false;
  #bodyCache: { items: readonly TranscriptItem[]; width: number; lines: string[] } | null = null;

  constructor(client: ConversationClient, transcript: Transcript, screen: Screen, alt: boolean) {
    this.#client = client;
    this.#lastWelcome = client.welcome;
    this.#transcript = transcript;
    this.#screen = screen;
    this.#altScreen = alt;
  }

  async run(signal: AbortSignal): Promise<number> {
    const finished = new Promise<void>((resolve) => {
      this.#done = resolve;
    });
    const c = this.#client;
    this.#observeState(c.state);
    this.#detach.push(
      c.onState((s) => this.#observeState(s)),
      c.onClose(() => {
        this.#droppedInControl = this.#lastRole === "controller";
        // Control went with the connection, not to another client: not "taken" on reconnect.
        this.#lastRole = null;
        this.#say(
          c.reconnecting ? "disconnected; reconnecting…" : "disconnected; Ctrl-O reconnects",
        );
      }),
      c.onState(() => {
        this.#sayResumed();
        this.#approvalRole = c.role;
        this.#lastRole = c.role;
      }),
      c.onDialog((d) => this.#onDialog(d)),
      c.onError((issue) =>
        this.#say(
          issue.code === "reconnect-failed"
            ? "no controller answers: Ctrl-O tries again, Ctrl-C quits"
            : `${issue.code}: ${issue.message}`,
        ),
      ),
      this.#transcript.onChange(() => {
        this.#sayIfNotRun();
        this.#draw();
      }),
      this.#screen.onResize(() => {
        this.#bodyCache = null;
        this.#draw();
      }),
    );
    const onData = (chunk: Buffer | string) => this.#onInput(chunk);
    const onEnd = () => this.#quit();
    const input = this.#screen.input;
    input.on("data", onData);
    input.on("end", onEnd);
    this.#detach.push(() => {
      input.off("data", onData);
      input.off("end", onEnd);
    });
    const onAbort = () => this.#quit();
    signal.addEventListener("abort", onAbort, { once: true });
    this.#detach.push(() => signal.removeEventListener("abort", onAbort));
    const restore = () => this.#restoreTerminal();
    process.once("exit", restore);
    this.#detach.push(() => process.off("exit", restore));
    this.#enterTerminal();
    if (signal.aborted) this.#quit();
    this.#draw();
    try {
      await finished;
    } finally {
      if (this.#escTimer) clearTimeout(this.#escTimer);
      for (const d of this.#detach.splice(0)) d();
      this.#transcript.close();
      await this.#client.close();
      this.#restoreTerminal();
      input.pause();
      this.#printUnsent();
    }
    return 0;
  }

  #enterTerminal(): void {
    if (!this.#screen.tty) return;
    this.#screen.setRaw(true);
    this.#screen.write(`${this.#altScreen ? `${CSI}?1049h` : ""}${CSI}?2004h${CSI}2J`);
  }

  /** What the person typed and never sent stays on the terminal after it closes (issue 24). */
  #printUnsent(): void {
    const kept: [string, string][] = [
      ["your draft, not sent", this.#composer.text],
      ["the draft set aside by a change of controller, not sent", this.#composer.setAside],
    ];
    for (const [what, text] of kept) {
      if (text !== "") this.#screen.write(`${what}:\n${makeVisible(text)}\n`);
    }
  }

  #terminalRestored = false;
  #restoreTerminal(): void {
    if (!this.#screen.tty || this.#terminalRestored) return;
    this.#terminalRestored = true;
    const { rows } = this.#screen.size();
    const leave = this.#altScreen ? `${CSI}?1049l` : `${CSI}${rows};1H\r\n`;
    this.#screen.write(`${CSI}?2004l${CSI}?25h${leave}`);
    this.#screen.setRaw(false);
  }

  #quit(): void {
    if (this.#quitting) return;
    this.#quitting = true;
    this.#done?.();
  }

  #observeState(state: ControllerState | null): void {
    const role = this.#client.role;
    const welcome = this.#client.welcome;
    // The controller pushes every approval still open right after a welcome: start afresh.
    if (welcome !== this.#approvalWelcome) {
      this.#approvalWelcome = welcome;
      this.#approvals.reset();
    } else {
      this.#approvals.observeRole(role, this.#approvalRole === "controller");
    }
    if (state && this.#composer.observeController(state)) {
      // S4: a change of controller always starts a new draft, this client's own takeover too;
      // the old one is set aside (Ctrl-R), never dropped.
      this.#draftCleared = true;
      this.#say("the controller changed: draft set aside, ^R brings it back");
    } else if (this.#lastRole === "controller" && role === "observer") {
      this.#say("another client took control: Ctrl-T takes it back");
    }
    this.#draw();
  }

  readonly #approvals = new ApprovalBoard();
  /** The welcome the approvals were pushed after; the role seen in the last state. */
  #approvalWelcome: unknown = null;
  #approvalRole: string | null = null;

  #approvalView(): ApprovalView {
    const c = this.#client;
    return {
      role: c.role,
      connection: c.welcome?.connection ?? null,
      controllerConnection: c.state?.controllerConnection ?? null,
    };
  }

  #onDialog(d: Dialog): void {
    if (d.disabled) {
      // Pi's extension dialogs: pushed disabled, never answered (seed P3).
      this.#say(
        `the engine asked (${d.method}) "${d.title}": not answered here (${d.reason ?? "disabled"})`,
      );
      return;
    }
    const changed = this.#approvals.take(d);
    if (changed === null) return;
    if ("opened" in changed && d.method === "budget") {
      this.#say(
        this.#client.role === "controller"
          ? `${budgetHead(d)} ^Y raises to the amount in the draft, ^N stops`
          : `${budgetHead(d)} only the controller answers`,
      );
    } else if ("opened" in changed) {
      const asks = `approval asked: run ${d.tool?.name ?? "a tool"}?`;
      this.#say(
        this.#client.role === "controller"
          ? `${asks} ^Y allows, ^N denies`
          : `${asks} only the controller answers`,
      );
    } else {
      const kind = changed.ended.method === "budget" ? "budget" : "approval";
      this.#say(`${kind}: ${endedWords(changed.ended, this.#approvalView().connection)}`);
    }
  }

  /** ^Y / ^N: answers the oldest open approval, only while this connection controls. */
  #answer(decision: "allow" | "deny"): void {
    const d = this.#approvals.current;
    if (d === null) {
      this.#say("no approval is open: nothing to answer");
      return;
    }
    if (this.#client.role !== "controller") {
      this.#say(
        this.#client.role === null
          ? "not answered: not connected; ^O reconnects"
          : "not answered: only the controller answers; ^T takes control, then ^Y or ^N",
      );
      return;
    }
    let sent: Promise<ControlOutcome>;
    if (d.method === "budget") {
      // ^Y raises to the amount typed in the draft; the draft is cleared only once admitted.
      const key = budgetKey(decision, this.#composer.text, d);
      this.#say(key.saying);
      if (key.send === null) return;
      sent =
        key.send === "raise"
          ? this.#client.raiseBudget(d.id, key.limits).then((o) => {
              if (!("refusal" in o) && o.outcome !== "unknown") this.#composer.clear();
              return o;
            })
          : this.#client.answer(d.id, "deny");
    } else {
      this.#say(decision === "allow" ? "allowing…" : "denying…");
      sent = this.#client.answer(d.id, decision);
    }
    const kind = d.method === "budget" ? "budget" : "approval";
    void sent.then((o) => {
      if ("refusal" in o) this.#say(answerRefusalWords(o.refusal, o.message));
      else if (o.outcome === "unknown")
        this.#say(`answer's outcome unknown: see whether the ${kind} dialog ended`);
      else {
        const ended = (o.result as { dialog?: Dialog } | undefined)?.dialog;
        this.#say(
          `${kind}: ${ended ? endedWords(ended, this.#approvalView().connection) : `${decision} admitted`}`,
        );
      }
    });
  }

  /** The receipt of the last prompt this client sent, until its settling is known. */
  #pendingReceipt: string | null = null;

  /**
   * "prompt admitted" is the controller's word; when Pi then settles that prompt without
   * running it (no model, no credentials), the notice says so too, not only the transcript.
   */
  #sayIfNotRun(): void {
    const id = this.#pendingReceipt;
    if (id === null) return;
    const settled = this.#transcript
      .items()
      .find((i) => i.kind === "receipt" && i.receiptId === id);
    if (settled?.kind !== "receipt") return;
    this.#pendingReceipt = null;
    if (settled.reason === "handled-without-run") {
      this.#say("Pi did not run the prompt: see why above");
    }
  }

  /** Set when a change of controller cleared a draft; the takeover's notice then says so. */
  #draftCleared = false;

  #say(notice: string): void {
    this.#notice = notice;
    this.#draw();
  }

  #onInput(chunk: Buffer | string): void {
    if (this.#quitting) return;
    if (this.#escTimer) {
      clearTimeout(this.#escTimer);
      this.#escTimer = null;
    }
    this.#apply(this.#decoder.push(chunk));
    if (this.#decoder.waiting) {
      this.#escTimer = setTimeout(() => {
        this.#escTimer = null;
        if (this.#decoder.waiting) this.#apply(this.#decoder.flushTimeout());
      }, ESC_TIMEOUT_MS);
    }
  }

  // Synchronous per key, so Enter takes the composer at that key and the rest of the chunk
  // starts the next message.
  #apply(actions: KeyAction[]): void {
    for (const action of actions) {
      if (this.#quitting) return;
      this.#effect(this.#composer.apply(action, this.#client.role));
    }
    this.#draw();
  }

  #effect(e: ComposerEffect): void {
    switch (e.type) {
      case "none":
        return;
      case "notice":
        this.#say(e.text);
        return;
      case "prompt":
        this.#scroll = 0;
        this.#say("sending…");
        void this.#client.prompt(e.text).then((o) => {
          if (o.outcome === "admitted") {
            this.#say("prompt admitted");
            // Pi may settle it without running it before or after this answer comes.
            this.#pendingReceipt = o.receipt.id;
            this.#sayIfNotRun();
          } else if (o.outcome === "unknown") this.#say("outcome unknown, check the transcript");
          else {
            // Refused: nothing was sent to the engine, so the text comes back to the composer.
            if (this.#composer.isEmpty) this.#composer.insert(e.text);
            this.#say(`not admitted: ${o.refusal}: ${o.message}`);
          }
        });
        return;
      case "takeover":
        this.#say("taking control…");
        this.#draftCleared = false;
        void this.#client.takeover().then((o) => {
          const cleared = this.#draftCleared ? "; draft set aside: ^R brings it back" : "";
          this.#outcome(o, `you have control${cleared}`);
        });
        return;
      case "interrupt":
        this.#say("interrupting…");
        void this.#client.interrupt().then((o) => this.#outcome(o, "interrupt admitted"));
        return;
      case "reread":
        void this.#reread();
        return;
      case "answer":
        this.#answer(e.decision);
        return;
      case "scroll": {
        const page = Math.max(1, this.#bodyRows - 1);
        this.#scroll = Math.max(0, this.#scroll + (e.direction === "up" ? page : -page));
        return;
      }
      case "quit":
        this.#quit();
        return;
      default: {
        const never: never = e;
        throw new Error(`unhandled effect ${JSON.stringify(never)}`);
      }
    }
  }

  #outcome(
    o: { outcome: "admitted" } | { outcome: "unknown" } | { refusal: string; message: string },
    ok: string,
  ): void {
    if ("refusal" in o) this.#say(`not admitted: ${o.refusal}: ${o.message}`);
    else if (o.outcome === "unknown") this.#say("outcome unknown, check the transcript");
    else this.#say(ok);
  }

  #lastWelcome: unknown = null;
  /** The role in the last state seen; whether it was `controller` when the socket dropped. */
  #lastRole: string | null = null;
  #droppedInControl = false;

  // A new welcome after a drop: say whether the replay covered the gap.
  #sayResumed(): void {
    const w = this.#client.welcome;
    if (w === null || w === this.#lastWelcome) return;
    this.#lastWelcome = w;
    if (w.replay === undefined) return;
    // Control belongs to a connection: the controller let it go when the old one dropped, and
    // taking it back is the person's choice (someone else may have taken it meanwhile).
    const control = this.#droppedInControl
      ? "; control went with the drop: Ctrl-T takes it again"
      : "";
    this.#droppedInControl = false;
    if (w.replay === "unavailable")
      this.#say(`reconnected; no replay (${w.replayReason}): page re-read${control}`);
    else
      this.#say(
        `reconnected; ${w.replay.toSequence - w.replay.fromSequence + 1} events replayed${control}`,
      );
  }

  async #reread(): Promise<void> {
    if (!this.#client.connected) {
      this.#say("reconnecting…");
      try {
        // The new welcome makes the Transcript read the page.
        await this.#client.connect();
        this.#say("reconnected");
      } catch (e) {
        this.#say(`cannot reconnect: ${e instanceof Error ? e.message : String(e)}`);
      }
      return;
    }
    this.#say("re-reading the page…");
    await this.#transcript.reread();
    this.#say("page re-read");
  }

  #draw(): void {
    if (this.#drawQueued) return;
    this.#drawQueued = true;
    setImmediate(() => {
      this.#drawQueued = false;
      if (!this.#terminalRestored) this.#paint();
    });
  }

  #paint(): void {
    const { columns, rows } = this.#screen.size();
    const width = Math.max(20, columns);
    const height = Math.max(4, rows);
    const header = fitLine(this.#headerText(), width);
    const composer = this.#composerLines(width, Math.max(1, Math.floor(height / 3)));
    const panel = approvalLines(
      this.#approvals,
      this.#approvalView(),
      width,
      Math.max(1, Math.floor((height - 2 - composer.lines.length) / 2)),
    );
    const bodyRows = Math.max(1, height - 2 - composer.lines.length - panel.length);
    this.#bodyRows = bodyRows;
    const body = this.#bodyLines(width);
    const maxScroll = Math.max(0, body.length - bodyRows);
    this.#scroll = Math.min(this.#scroll, maxScroll);
    const end = body.length - this.#scroll;
    const view = body.slice(Math.max(0, end - bodyRows), end);
    while (view.length < bodyRows) view.push("");
    const status = fitLine(this.#statusText(), width);
    const lines = [header, ...view, ...panel, status, ...composer.lines];
    const frame = lines.join("\n");
    if (frame === this.#lastFrame) return;
    this.#lastFrame = frame;
    if (!this.#screen.tty) {
      this.#screen.write(`=== frame ${++this.#frames} ===\n${frame}\n`);
      return;
    }
    const row = 1 + 1 + bodyRows + panel.length + 1 + composer.cursorRow;
    const out = lines.map((l, i) => `${CSI}${i + 1};1H${l}${CSI}K`).join("");
    this.#screen.write(`${CSI}?25l${out}${CSI}J${CSI}${row};${composer.cursorCol + 1}H${CSI}?25h`);
  }

  #headerText(): string {
    const c = this.#client;
    const s = c.state;
    const conversation = c.welcome?.conversation ?? "?";
    // The role first: a long conversation id is what gets cut at the right edge.
    const bits = [c.role ?? "disconnected"];
    if (s) {
      bits.push(`generation ${s.generation}`, `admission ${s.admission}`);
      if (s.binding !== "bound") bits.push(`binding ${s.binding}`);
    }
    bits.push(conversation);
    return bits.join(" · ");
  }

  #statusText(): string {
    const st = this.#transcript.state;
    const bits: string[] = [];
    if (st.running) bits.push("[running]");
    if (this.#transcript.reading) bits.push("[reading]");
    if (this.#scroll > 0) bits.push(`[+${this.#scroll} lines below]`);
    const budget = this.#client.state?.budget;
    if (budget) bits.push(`[${budgetMeterText(budget)}]`);
    bits.push(this.#notice === "" ? HINTS : this.#notice);
    return bits.join(" ");
  }

  #composerLines(
    width: number,
    maxRows: number,
  ): { lines: string[]; cursorRow: number; cursorCol: number } {
    const room = width - 2;
    const all: string[] = [];
    for (const source of this.#composer.text.split("\n")) {
      const shown = makeVisible(source);
      if (!source.includes("\t") && textWidth(shown) <= room) all.push(shown);
      else all.push(...wrapText(source, { width: room }));
    }
    const lines = all
      .slice(-maxRows)
      .map((l, i) => (i === 0 && all.length <= maxRows ? "> " : "  ") + l);
    const last = lines[lines.length - 1] ?? "> ";
    return { lines, cursorRow: lines.length - 1, cursorCol: Math.min(width - 1, textWidth(last)) };
  }

  #bodyLines(width: number): string[] {
    const items = this.#transcript.items();
    const cached = this.#bodyCache;
    if (cached && cached.items === items && cached.width === width) return cached.lines;
    const lines = renderItems(items, width);
    this.#bodyCache = { items, width, lines };
    return lines;
  }
}
