// The mediated terminal's input (seed: The terminal): InputDecoder turns raw-mode bytes into key
// actions, Composer holds the local draft. Pure: no I/O, no timers. Invariants: a byte inside a
// bracketed paste is never a key, so a paste never submits; an escape sequence or UTF-8
// character split across chunks is decoded as if it came whole; Enter takes the draft at that
// key, so text after it in the same chunk starts the next message.
import { StringDecoder } from "node:string_decoder";
import { makeVisible } from "../present/visible.ts";

export type KeyAction =
  /** Typed text: printable characters, TAB included. */
  | { type: "insert"; text: string }
  /** Bracketed paste content, literal; one paste may come as several pieces. */
  | { type: "paste"; text: string }
  /** Ctrl-J, Alt-Enter. */
  | { type: "newline" }
  /** Enter. */
  | { type: "submit" }
  /** Backspace (DEL) or Ctrl-H. */
  | { type: "backspace" }
  /** Ctrl-T. */
  | { type: "takeover" }
  /** Ctrl-G. */
  | { type: "interrupt" }
  /** Ctrl-O: reconnect if needed and re-read the page. */
  | { type: "reread" }
  /** Ctrl-R: bring back the draft a change of controller set aside. */
  | { type: "recall" }
  /** Ctrl-Y, Ctrl-N: allow or deny the open approval (attach-approvals.ts). */
  | { type: "answer"; decision: "allow" | "deny" }
  /** PageUp / PageDown. */
  | { type: "scroll"; direction: "up" | "down" }
  /** Ctrl-C, Ctrl-D. */
  | { type: "quit" }
  /** ESC alone, reported by flushTimeout. */
  | { type: "escape" }
  /** A control character or escape sequence the terminal does not use. */
  | { type: "ignored"; sequence: string };

const ESC = "\x1b";
const PASTE_START = "\x1b[200~";
const PASTE_END = "\x1b[201~";
/** A CSI longer than this without its final byte is not one: it is dropped as ignored. */
const CSI_MAX = 32;

const CONTROL_KEYS: Record<string, KeyAction> = {
  "\r": { type: "submit" },
  "\n": { type: "newline" },
  "\x7f": { type: "backspace" },
  "\b": { type: "backspace" },
  "\x14": { type: "takeover" },
  "\x07": { type: "interrupt" },
  "\x0f": { type: "reread" },
  "\x12": { type: "recall" },
  "\x19": { type: "answer", decision: "allow" },
  "\x0e": { type: "answer", decision: "deny" },
  "\x03": { type: "quit" },
  "\x04": { type: "quit" },
};

/** An Enter that sent nothing says why and what to do; the draft stays (S5). */
// The status line is one line (cut at the terminal's width): the seed's words first, then the key.
export const OBSERVING = "not admitted: controller · ^T takes control, draft kept";
export const NOT_CONNECTED = "not admitted: channel · ^O reconnects, draft kept";

/** C0 controls, DEL and C1 controls: never inserted as typed text. TAB is typed text. */
const isControl = (c: number): boolean => (c < 0x20 && c !== 0x09) || (c >= 0x7f && c <= 0x9f);

/**
 * Decodes raw-mode terminal input chunk by chunk. A trailing incomplete escape sequence waits
 * for the next chunk; `waiting` says so, and the caller calls `flushTimeout` after a short
 * pause (50 ms) to take a lone ESC as the Escape key. Inside a paste nothing is flushed: only
 * the end marker ends a paste.
 */
export class InputDecoder {
  readonly #utf8 = new StringDecoder("utf8");
  #pending = "";
  #inPaste = false;
  /** The last paste piece ended in CR: an LF starting the next piece is the same newline. */
  #pasteCR = false;

  /** True when input is held back waiting for the rest of an escape sequence or paste marker. */
  get waiting(): boolean {
    return this.#pending !== "";
  }

  /** True between a paste's start marker and its end marker. */
  get inPaste(): boolean {
    return this.#inPaste;
  }

  /** The actions of one chunk, in input order. Strings are taken as already decoded. */
  push(chunk: Uint8Array | string): KeyAction[] {
    const text = this.#pending + (typeof chunk === "string" ? chunk : this.#utf8.write(chunk));
    this.#pending = "";
    const out: KeyAction[] = [];
    let i = 0;
    while (i < text.length) {
      const next = this.#inPaste ? this.#pasteFrom(text, i, out) : this.#keyFrom(text, i, out);
      if (next === null) {
        this.#pending = text.slice(i);
        break;
      }
      i = next;
    }
    return out;
  }

  /** The pause after a chunk ended: a held lone ESC is the Escape key, a held partial
   * sequence is ignored. Nothing happens inside a paste. */
  flushTimeout(): KeyAction[] {
    if (this.#pending === "" || this.#inPaste) return [];
    const held = this.#pending;
    this.#pending = "";
    return [held === ESC ? { type: "escape" } : { type: "ignored", sequence: held }];
  }

  // One key from `text[i]`: its actions go to `out`. Returns where the next key starts, or
  // null when the sequence is incomplete and must wait for more input.
  #keyFrom(text: string, i: number, out: KeyAction[]): number | null {
    const c = text.charCodeAt(i);
    if (text[i] === ESC) return this.#escapeFrom(text, i, out);
    const control = CONTROL_KEYS[text[i] ?? ""];
    if (control) {
      out.push(control);
      return i + 1;
    }
    if (isControl(c)) {
      out.push({ type: "ignored", sequence: text[i] ?? "" });
      return i + 1;
    }
    let end = i + 1;
    while (end < text.length && !isControl(text.charCodeAt(end))) end++;
    out.push({ type: "insert", text: text.slice(i, end) });
    return end;
  }

  #escapeFrom(text: string, i: number, out: KeyAction[]): number | null {
    const n = text[i + 1];
    if (n === undefined) return null;
    if (n === "\r" || n === "\n") {
      out.push({ type: "newline" });
      return i + 2;
    }
    if (n === ESC) {
      out.push({ type: "escape" });
      return i + 1;
    }
    if (n === "O") {
      // SS3 (F1–F4, keypad, application-mode arrows): three characters.
      if (i + 2 >= text.length) return null;
      out.push({ type: "ignored", sequence: text.slice(i, i + 3) });
      return i + 3;
    }
    if (n !== "[") {
      // Alt with a character: not a key of this terminal.
      const cp = text.codePointAt(i + 1) ?? 0;
      const end = i + 1 + (cp > 0xffff ? 2 : 1);
      out.push({ type: "ignored", sequence: text.slice(i, end) });
      return end;
    }
    // CSI: parameter bytes 0x30–0x3F, intermediate bytes 0x20–0x2F, a final byte 0x40–0x7E.
    let j = i + 2;
    while (j < text.length) {
      const b = text.charCodeAt(j);
      if (b >= 0x40 && b <= 0x7e) break;
      if (b < 0x20 || b > 0x3f || j - i >= CSI_MAX) {
        out.push({ type: "ignored", sequence: text.slice(i, j) });
        return j;
      }
      j++;
    }
    if (j >= text.length) return null;
    const seq = text.slice(i, j + 1);
    out.push(...this.#csi(seq));
    return j + 1;
  }

  #csi(seq: string): KeyAction[] {
    if (seq === PASTE_START) {
      this.#inPaste = true;
      this.#pasteCR = false;
      return [];
    }
    // PageUp/PageDown, with or without modifiers (`ESC[5;2~`).
    const m = /^\[([56])(;\d+)?~$/.exec(seq.slice(1));
    if (m) return [{ type: "scroll", direction: m[1] === "5" ? "up" : "down" }];
    return [{ type: "ignored", sequence: seq }];
  }

  // Paste content up to the end marker, literal. A tail that may be the start of the end
  // marker waits for the next chunk.
  #pasteFrom(text: string, i: number, out: KeyAction[]): number | null {
    const end = text.indexOf(PASTE_END, i);
    if (end >= 0) {
      this.#pastePiece(text.slice(i, end), out);
      this.#inPaste = false;
      this.#pasteCR = false;
      return end + PASTE_END.length;
    }
    let keep = 0;
    for (let k = Math.min(PASTE_END.length - 1, text.length - i); k > 0; k--) {
      if (PASTE_END.startsWith(text.slice(text.length - k))) {
        keep = k;
        break;
      }
    }
    if (keep === text.length - i) return null;
    this.#pastePiece(text.slice(i, text.length - keep), out);
    return text.length - keep;
  }

  // Terminals send a pasted newline as CR (or CRLF): in the draft it is LF.
  #pastePiece(piece: string, out: KeyAction[]): void {
    if (piece === "") return;
    let text = piece;
    if (this.#pasteCR && text.startsWith("\n")) text = text.slice(1);
    this.#pasteCR = text.endsWith("\r");
    text = text.replace(/\r\n?/g, "\n");
    if (text !== "") out.push({ type: "paste", text });
  }
}

const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });
/** Code units looked at to find the last grapheme cluster: longer clusters are not real text. */
const CLUSTER_TAIL = 64;

/** What the terminal does after a key reached the composer. */
export type ComposerEffect =
  | { type: "none" }
  /** Send this text as a prompt; the composer is already cleared. */
  | { type: "prompt"; text: string }
  /** Show this one-line notice; the draft is kept. */
  | { type: "notice"; text: string }
  | { type: "takeover" }
  | { type: "interrupt" }
  | { type: "reread" }
  /** Answer the open approval; the draft is kept (it is not the answer's message). */
  | { type: "answer"; decision: "allow" | "deny" }
  | { type: "scroll"; direction: "up" | "down" }
  | { type: "quit" };

/** The controller facts that decide whether the draft is kept (S4). */
export type ControllerFacts = { generation: number; controllerConnection: string | null };

/**
 * The local draft. It clears after each submit and whenever the controller changes (S4); an
 * observer's Enter sends nothing and keeps it (S5). It may hold any text, ESC included; show
 * it only through `render`.
 */
export class Composer {
  #text = "";
  #controller: ControllerFacts | null = null;

  get text(): string {
    return this.#text;
  }

  get isEmpty(): boolean {
    return this.#text === "";
  }

  insert(text: string): void {
    this.#text += text;
  }

  newline(): void {
    this.#text += "\n";
  }

  /** Removes the last grapheme cluster (an emoji with its joiners goes at once). */
  backspace(): void {
    if (this.#text === "") return;
    const tail = this.#text.slice(-CLUSTER_TAIL);
    let last = "";
    for (const { segment } of graphemes.segment(tail)) last = segment;
    this.#text = this.#text.slice(0, this.#text.length - last.length);
  }

  /** The draft, which is cleared. */
  take(): string {
    const text = this.#text;
    this.#text = "";
    return text;
  }

  clear(): void {
    this.#text = "";
  }

  /** The last draft a change of controller set aside, until Ctrl-R brings it back. */
  #setAside = "";

  /** True while a draft set aside by a change of controller can be brought back. */
  get hasSetAside(): boolean {
    return this.#setAside !== "";
  }

  /** The draft set aside, for the words said when the terminal closes with it unsent. */
  get setAside(): string {
    return this.#setAside;
  }

  /**
   * Records the controller state; starts a new draft when the controller changed (S4). The old
   * draft is set aside, never dropped: only the person's Ctrl-R puts it in the new draft, so
   * text written for one controller is never sent under another without them choosing it.
   * True when it set a draft aside.
   */
  observeController(facts: ControllerFacts): boolean {
    const prior = this.#controller;
    this.#controller = {
      generation: facts.generation,
      controllerConnection: facts.controllerConnection,
    };
    const changed =
      prior !== null &&
      (prior.generation !== facts.generation ||
        prior.controllerConnection !== facts.controllerConnection);
    if (!changed || this.#text === "") return false;
    // A second change before Ctrl-R adds to what is set aside: nothing typed is lost.
    this.#setAside = this.#setAside === "" ? this.#text : `${this.#setAside}\n${this.#text}`;
    this.#text = "";
    return true;
  }

  /** The draft made visible (src/present/visible.ts): LF stays a line break, ESC shows as `^[`. */
  render(): string {
    return makeVisible(this.#text);
  }

  /**
   * Applies one key. `role` is this connection's role, null when not connected. Enter as the
   * controller takes the draft (`prompt`); as an observer it keeps the draft and answers
   * `not admitted: controller` (S5); unconnected, `not admitted: channel`. An empty draft
   * sends nothing.
   */
  apply(action: KeyAction, role: "controller" | "observer" | null): ComposerEffect {
    switch (action.type) {
      case "insert":
      case "paste":
        this.insert(action.text);
        return { type: "none" };
      case "newline":
        this.newline();
        return { type: "none" };
      case "backspace":
        this.backspace();
        return { type: "none" };
      case "submit":
        if (this.#text === "") return { type: "none" };
        if (role === null) return { type: "notice", text: NOT_CONNECTED };
        if (role === "observer") return { type: "notice", text: OBSERVING };
        return { type: "prompt", text: this.take() };
      case "recall":
        if (this.#setAside === "") return { type: "notice", text: "no draft set aside" };
        this.insert(this.#setAside);
        this.#setAside = "";
        return { type: "notice", text: "your set-aside draft is back: Enter sends it" };
      case "takeover":
      case "interrupt":
      case "reread":
      case "quit":
        return { type: action.type };
      case "scroll":
        return { type: "scroll", direction: action.direction };
      case "answer":
        return { type: "answer", decision: action.decision };
      case "escape":
      case "ignored":
        return { type: "none" };
      default: {
        const never: never = action;
        throw new Error(`unhandled key ${JSON.stringify(never)}`);
      }
    }
  }
}
