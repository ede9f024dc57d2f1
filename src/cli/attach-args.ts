// The flags of `conversation attach` and its help: a conversation id (found in the registry)
// or --socket PATH, the grant, a fixed size off a terminal, and the alternate screen.
import { resolve } from "node:path";
import { parseFlags } from "./flags.ts";

export type AttachCommand = {
  name: "attach";
  /** The controller's socket, or where to find it: the conversation in the registry. */
  target: { socket: string } | { conversation: string; stateDir?: string };
  grant: string;
  /** Fixed size (required off a terminal for a useful layout; defaults 80 x 24). */
  columns?: number;
  rows?: number;
  altScreen: boolean;
};

export type AttachParsed =
  | { ok: true; command: AttachCommand | { name: "help"; text: string } }
  | { ok: false; error: string; usage: string };

export const ATTACH_HELP = `Usage: conversation attach <conversation-id> [--grant ID] [--state-dir DIR]
       conversation attach --socket PATH [--grant ID]
                           [--columns N] [--rows N] [--no-alt-screen]

A terminal on a running controller (conversation control prints the line to
run; conversation controllers lists them): the conversation live, and a
composer to steer it. It starts as an observer.

Keys: Enter sends the composer; Ctrl-J or Alt-Enter adds a newline; Ctrl-T
takes control; Ctrl-G interrupts; Ctrl-O reconnects if needed and re-reads
the page; PageUp and PageDown scroll; Ctrl-C or Ctrl-D quits.

Approvals: when the engine asks before a tool runs (Claude Code does), the
tool and its input show above the status line; Ctrl-Y allows it and Ctrl-N
denies it, while this terminal has control (Ctrl-T). When it ends, the
status says who answered, or what ended it (an interrupt, a stop).

  <conversation-id>  the conversation a controller runs (found in the
                     registry of running controllers)
  --state-dir DIR    the state directory the controller was started with
  --socket PATH      the controller's socket, instead of a conversation id
  --grant ID         the grant to connect with (default: operator, the
                     default grant of conversation control)
  --columns N        the width when not a terminal (default 80; 40 or more)
  --rows N           the height when not a terminal (default 24; 8 or more)
  --no-alt-screen    draw on the main screen instead of the alternate one
  -h, --help         this help

Off a terminal (pipes) it reads key bytes from stdin and writes each new
screen as plain text after a line "=== frame N ===". Engine text is shown
with control characters made visible (^[, <U+202E>). Exit status: 0 quit;
1 no such controller, or could not connect; 2 usage error.
`;

export function parseAttach(args: string[]): AttachParsed {
  const bad = (error: string): AttachParsed => ({ ok: false, error, usage: ATTACH_HELP });
  const { values, positionals } = parseFlags(args, {
    socket: { type: "string" },
    "state-dir": { type: "string" },
    grant: { type: "string" },
    columns: { type: "string" },
    rows: { type: "string" },
    "no-alt-screen": { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return { ok: true, command: { name: "help", text: ATTACH_HELP } };
  const [conversation, extra] = positionals;
  if (extra !== undefined) return bad(`unexpected argument ${JSON.stringify(extra)}`);
  for (const flag of ["socket", "state-dir", "grant"] as const) {
    if (values[flag] === "") return bad(`--${flag} needs a value`);
  }
  let target: AttachCommand["target"];
  if (values.socket !== undefined) {
    if (conversation !== undefined) {
      return bad("name the conversation or --socket PATH, not both");
    }
    if (values["state-dir"] !== undefined) return bad("--state-dir goes with a conversation id");
    target = { socket: values.socket };
  } else {
    if (conversation === undefined) return bad("name the <conversation-id> (or --socket PATH)");
    const stateDir = values["state-dir"];
    target = { conversation, ...(stateDir === undefined ? {} : { stateDir: resolve(stateDir) }) };
  }
  const command: AttachCommand = {
    name: "attach",
    target,
    grant: values.grant ?? "operator",
    altScreen: values["no-alt-screen"] !== true,
  };
  for (const [key, min] of [
    ["columns", 40],
    ["rows", 8],
  ] as const) {
    const v = values[key];
    if (v === undefined) continue;
    const n = /^\d{1,4}$/.test(v) ? Number(v) : Number.NaN;
    if (!(n >= min && n <= 1000)) return bad(`--${key} ${JSON.stringify(v)} is not ${min}-1000`);
    command[key] = n;
  }
  return { ok: true, command };
}
