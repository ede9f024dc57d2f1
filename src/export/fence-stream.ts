// A fenced code block written as its text arrives, for a string too long to hold whole. A
// fence is closed only by a line of at most three spaces and a run of at least as many
// backticks (then white space); such a line cannot be known to be harmless until it ends, so
// when one begins with a run as long as the fence, the block is closed just before it and
// opened again with a longer fence. Nothing is held but the line's leading spaces and run length.
import { makeVisible } from "../present/visible.ts";

const INFO = /^[A-Za-z0-9+#._-]{1,30}$/;

/** A fenced block that `text` cannot close: the fence is longer than its longest backtick run. */
export function fence(text: string, lang: string): string[] {
  const visible = makeVisible(text);
  const bar = "`".repeat(Math.max(3, longestRun(visible) + 1));
  const body = visible.replace(/\n$/, "");
  return [`${bar}${INFO.test(lang) ? lang : ""}`, ...(body === "" ? [] : body.split("\n")), bar];
}

export class FenceStream {
  readonly #info: string;
  readonly #prefix: string;
  #bar: string;
  /** Where the current line is: its leading spaces, its backtick run, or past both. */
  #phase: "lead" | "ticks" | "rest" = "lead";
  #spaces = 0;
  #ticks = 0;
  #newlines = 0;
  #last = "";

  /** `first` is the text's beginning, to size the first fence; `prefix` starts every line. */
  constructor(first: string, info: string, prefix = "") {
    this.#info = INFO.test(info) ? info : "";
    this.#prefix = prefix;
    this.#bar = "`".repeat(Math.max(3, longestRun(first) + 1));
  }

  /** The opening fence line and the prefix of the first line of text. */
  open(): string {
    return `${this.#prefix}${this.#bar}${this.#info}\n${this.#prefix}`;
  }

  /** The text of `piece` (made visible) inside the block. */
  write(piece: string): string {
    const text = makeVisible(piece);
    if (text === "") return "";
    for (let at = text.indexOf("\n"); at >= 0; at = text.indexOf("\n", at + 1)) this.#newlines++;
    this.#last = text[text.length - 1] ?? "";
    let out = "";
    let i = 0;
    while (i < text.length) {
      if (this.#phase === "rest") {
        const nl = text.indexOf("\n", i);
        if (nl < 0) {
          out += text.slice(i);
          return out;
        }
        out += `${text.slice(i, nl)}\n${this.#prefix}`;
        this.#newLine();
        i = nl + 1;
        continue;
      }
      const c = text[i] as string;
      i++;
      if (this.#phase === "lead" && c === " " && this.#spaces < 3) {
        this.#spaces++;
        continue;
      }
      if (c === "`") {
        this.#phase = "ticks";
        this.#ticks++;
        continue;
      }
      out += this.#settleLine();
      if (c === "\n") {
        out += `\n${this.#prefix}`;
        this.#newLine();
      } else {
        out += c;
        this.#phase = "rest";
      }
    }
    return out;
  }

  /** The end of the block: what the last line held back, and the closing fence. */
  close(): string {
    const atLineStart = this.#phase === "lead" && this.#spaces === 0 && this.#ticks === 0;
    const held = this.#settleLine();
    // At the start of a line its prefix is written already: the fence follows it.
    return atLineStart ? `${held}${this.#bar}` : `${held}\n${this.#prefix}${this.#bar}`;
  }

  /** Lines of text written so far (a final line break ends a line; it starts none). */
  get lines(): number {
    if (this.#last === "") return 0;
    return this.#last === "\n" ? this.#newlines : this.#newlines + 1;
  }

  /** The held spaces and run, written; first a longer fence when the run could close this one. */
  #settleLine(): string {
    let out = "";
    if (this.#ticks >= this.#bar.length) {
      const longer = "`".repeat(this.#ticks + 1);
      out += `${this.#bar}\n${this.#prefix}${longer}${this.#info}\n${this.#prefix}`;
      this.#bar = longer;
    }
    out += " ".repeat(this.#spaces) + "`".repeat(this.#ticks);
    if (this.#spaces > 0 || this.#ticks > 0) this.#phase = "rest";
    this.#spaces = 0;
    this.#ticks = 0;
    return out;
  }

  #newLine(): void {
    this.#phase = "lead";
    this.#spaces = 0;
    this.#ticks = 0;
  }
}

/** The longest run of backticks in `text`. */
export function longestRun(text: string): number {
  let longest = 0;
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) === 0x60) {
      run++;
      if (run > longest) longest = run;
    } else {
      run = 0;
    }
  }
  return longest;
}
