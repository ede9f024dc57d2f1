// How a person runs the `conversation` command from where this process was started, so that
// every command line we print (help, hints, the controller's `Attach:` line) runs as printed.
// From the checkout's sources (`npm run conversation`, `npm start`) the bin is not on PATH;
// installed, it is on PATH (a global prefix), or reached with npx (a project).
import { realpathSync, statSync } from "node:fs";
import { delimiter, join, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { makeVisible } from "../present/visible.ts";

/** The commands whose mentions in help texts name the program (`conversation read …`). */
const COMMANDS =
  /(^|[\s`"'(])conversation(?= (?:catalogue|read|follow|search|usage|export|serve|control|attach|controllers|inbox|audit|logins|seats|<command>|--help)(?=[\s`"'),.]|$))/gm;

export type Invocation = {
  /** Set by npm for `npm exec` and `npx`. */
  npmCommand?: string | undefined;
  /** process.argv[1]: the script node was started with. */
  script?: string | undefined;
  /** The PATH a shell would search. */
  path?: string | undefined;
  /** Whether this module runs from the checkout's TypeScript sources. */
  fromSource?: boolean;
};

function current(): Invocation {
  return {
    npmCommand: process.env.npm_command,
    script: process.argv[1],
    path: process.env.PATH,
    fromSource: import.meta.url.endsWith(".ts"),
  };
}

/**
 * What to type for `conversation`: `npm run conversation --` from the checkout's sources;
 * `npx conversation` under npx, or for a bin in a project's node_modules that PATH doesn't
 * reach; `conversation` when PATH (without npm's own node_modules/.bin entries) finds this
 * very bin; else the bin's absolute path.
 */
export function commandPrefix(inv: Invocation = current()): string {
  if (inv.fromSource) return "npm run conversation --";
  if (inv.npmCommand === "exec") return "npx conversation";
  const script = inv.script;
  if (script === undefined) return "conversation";
  const real = realOrNull(script);
  if (real !== null && isOnPath("conversation", real, inv.path ?? "")) return "conversation";
  if (script.includes(`${sep}node_modules${sep}`)) return "npx conversation";
  return shellWord(script);
}

/** A command line that runs `conversation <args...>` as printed, from here. */
export function commandLine(args: readonly string[], prefix: string = commandPrefix()): string {
  return [prefix, ...args.map(shellWord)].join(" ");
}

/** `name` on PATH resolves to `real`. Entries ending in node_modules/.bin are npm's, for its scripts. */
function isOnPath(name: string, real: string, path: string): boolean {
  for (const dir of path.split(delimiter)) {
    if (dir === "" || dir.endsWith(`node_modules${sep}.bin`)) continue;
    const candidate = join(dir, name);
    try {
      if (!statSync(candidate).isFile()) continue;
    } catch {
      // Not in this directory: keep looking, as a shell does.
      continue;
    }
    return realOrNull(candidate) === real;
  }
  return false;
}

function realOrNull(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    // A script that is gone can't be found on PATH either; the caller falls back.
    return null;
  }
}

/**
 * A help or usage text with each `conversation <command>` as it is run from here. The help
 * texts are laid out for 80 columns with `conversation`; with a longer prefix the synopsis is
 * wrapped again, and so is a paragraph or line it pushes past 80 columns.
 */
export function asInvoked(text: string, prefix: string = commandPrefix()): string {
  if (prefix === "conversation") return text;
  const named = text.replace(COMMANDS, (_m, before: string) => `${before}${prefix}`);
  const [usage = "", ...rest] = named.split("\n\n");
  return [wrapUsage(usage), ...rest.map(wrapParagraph)].join("\n\n");
}

const WIDTH = 80;

/** The synopsis, wrapped again: continuation lines indented 8, a bracketed group kept whole. */
function wrapUsage(block: string): string {
  if (!block.startsWith("Usage: ") || (!block.includes("\n") && block.length <= WIDTH)) {
    return block;
  }
  return fill("", "        ", groups(block.replace(/\s+/g, " ").trim()));
}

/** Words of a synopsis; a space inside () or [] doesn't split. */
function groups(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let word = "";
  for (const c of text) {
    if (c === "(" || c === "[") depth++;
    if (c === ")" || c === "]") depth = Math.max(0, depth - 1);
    if (c === " " && depth === 0) {
      if (word !== "") out.push(word);
      word = "";
    } else word += c;
  }
  if (word !== "") out.push(word);
  // A group too long for a line of its own breaks after its alternatives' bars.
  return out.flatMap((g) =>
    g.length <= WIDTH - 8
      ? [g]
      : g.split(" | ").map((part, i, all) => (i < all.length - 1 ? `${part} |` : part)),
  );
}

/** Prose is re-flowed whole; an indented or columned line past 80 is wrapped on its own. */
function wrapParagraph(p: string): string {
  const lines = p.split("\n");
  if (lines.every((l) => l.length <= WIDTH)) return p;
  if (lines.every((l) => /^\S/.test(l) && !/\S {2,}\S/.test(l))) {
    return fill("", "", p.split(/\s+/).filter(Boolean));
  }
  return lines.map(wrapLine).join("\n");
}

/** A line past 80 columns, wrapped under its text (an option's description, or its indent). */
function wrapLine(line: string): string {
  if (line.length <= WIDTH) return line;
  const m = /^(\s*\S.*?\s{2,})(\S.*)$/.exec(line) ?? /^(\s*)(.*)$/.exec(line);
  const head = m?.[1] ?? "";
  return fill(head, " ".repeat(head.length), (m?.[2] ?? line).split(" ").filter(Boolean));
}

function fill(head: string, indent: string, words: string[]): string {
  const lines: string[] = [];
  let line = head;
  let empty = true;
  for (const w of words) {
    if (!empty && line.length + 1 + w.length > WIDTH) {
      lines.push(line);
      line = indent;
      empty = true;
    }
    line += empty ? w : ` ${w}`;
    empty = false;
  }
  lines.push(line);
  return lines.join("\n");
}

/**
 * One shell word for `arg`: as is when it needs no quoting, else in single quotes. Control and
 * bidi characters are shown visibly instead (a printed line must not drive the terminal), and
 * then the line is not meant to be pasted.
 */
export function shellWord(arg: string): string {
  const visible = makeVisible(arg, { showNewlines: true });
  if (visible !== arg) return visible;
  if (/^[A-Za-z0-9_/.:=@%+,-]+$/.test(arg)) return arg;
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

/**
 * This package's docs folder: `docs/` beside `src/` in a checkout, beside `dist/` where the
 * package is installed (package.json `files` ships `docs/*.md`).
 */
export const DOCS_DIR = fileURLToPath(new URL("../../docs/", import.meta.url)).replace(/\/$/, "");

/** A help text that names `docs/…` files, with a last line saying where they are from here. */
export function withDocsPlace(text: string, docs: string = DOCS_DIR): string {
  if (!text.includes("docs/")) return text;
  // The path on a line of its own: it is not wrapped, and it can be long.
  return `${text.replace(/\n*$/, "\n")}\nThe docs/ files named here are in\n  ${shellWord(docs)}\n`;
}
