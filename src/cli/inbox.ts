// `conversation inbox [--watch] [--json]`: the conversations whose agents need a person
// (waiting-approval, waiting-input, failed, stalled), oldest wait first, each with its reason,
// its waiting time and the `attach` line that opens it. The same AttentionWatch the board's
// inbox uses (src/attention/watch.ts): one observe-only connection per running controller.
// --watch keeps watching and prints each change until Ctrl-C.

import { type RowHead, rowHead } from "../attention/row-head.ts";
import { needsYou, waited } from "../attention/states.ts";
import { AttentionWatch, type InboxRow } from "../attention/watch.ts";
import { placesFor } from "../control/registry/places.ts";
import { makeVisible } from "../present/visible.ts";
import { commandLine } from "./invocation.ts";
import type { Io } from "./io.ts";

export type InboxCommand = {
  name: "inbox";
  json: boolean;
  watch: boolean;
  stateDir?: string;
  /** The observe-only grant the watch connects with. */
  grant: string;
  stallMs: number;
};

/** The JSON form of a row (`--json`, and the board's /api/inbox). */
export type InboxJson = RowHead & {
  waitingMs: number;
  reason: string;
  attach: string;
};

/** The `attach` line for a row: the grant that steers, the state dir the inbox read. */
export function attachLine(row: InboxRow, stateDir: string | undefined): string {
  const stateArgs = stateDir === undefined ? [] : ["--state-dir", stateDir];
  return commandLine(["attach", row.conversation, ...stateArgs, "--grant", row.steerGrant]);
}

export function inboxJson(row: InboxRow, now: number, stateDir: string | undefined): InboxJson {
  const a = row.attention;
  return {
    ...rowHead(row),
    waitingMs: Math.max(0, now - a.since),
    reason: a.reason,
    attach: attachLine(row, stateDir),
  };
}

/** Lists (or, with --watch, keeps listing) what needs a person. Exit 0; 130 never: Ctrl-C is 0. */
export async function runInbox(cmd: InboxCommand, io: Io, signal: AbortSignal): Promise<number> {
  const places = placesFor(cmd.stateDir);
  const problems: string[] = [];
  const watch = new AttentionWatch({
    registryDir: places.registry,
    grant: cmd.grant,
    stallMs: cmd.stallMs,
    log: (line) => problems.push(line),
  });
  try {
    await watch.start();
    for (const p of problems.splice(0)) io.err(`conversation: ${makeVisible(p)}\n`);
    const now = Date.now();
    const rows = watch.inbox();
    if (cmd.json) {
      io.out(`${JSON.stringify({ inbox: rows.map((r) => inboxJson(r, now, cmd.stateDir)) })}\n`);
    } else {
      io.out(listing(rows, watch.rows().length, now, cmd.stateDir, places.registry));
    }
    if (!cmd.watch) return 0;
    watch.onChange((row) => {
      const at = Date.now();
      if (cmd.json) {
        io.out(`${JSON.stringify({ change: inboxJson(row, at, cmd.stateDir) })}\n`);
        return;
      }
      io.out(changeLine(row, at, cmd.stateDir));
    });
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      signal.addEventListener("abort", () => resolve(), { once: true });
    });
    return 0;
  } finally {
    await watch.close();
  }
}

function listing(
  rows: InboxRow[],
  watched: number,
  now: number,
  stateDir: string | undefined,
  registry: string,
): string {
  const v = (s: string) => makeVisible(s, { showNewlines: true });
  if (rows.length === 0) {
    const running =
      watched === 0
        ? `no controller is running (registry: ${v(registry)})`
        : `${watched} running, none waiting`;
    return `Nothing needs you: ${running}.\n`;
  }
  const blocks = rows.map((r) => block(r, now, stateDir));
  return `Needs you (${rows.length}), oldest wait first:\n\n${blocks.join("\n\n")}\n`;
}

function block(r: InboxRow, now: number, stateDir: string | undefined): string {
  const v = (s: string) => makeVisible(s, { showNewlines: true });
  const where = `${r.project.split("/").at(-1) ?? r.project}/${r.seat}`;
  return [
    `${r.attention.state}  ${waited(now - r.attention.since)}  ${r.conversation}  ${v(where)}`,
    `  ${v(r.attention.reason)}`,
    `  ${v(attachLine(r, stateDir))}`,
  ].join("\n");
}

function changeLine(r: InboxRow, now: number, stateDir: string | undefined): string {
  const time = new Date(now).toISOString().slice(11, 19);
  const v = (s: string) => makeVisible(s, { showNewlines: true });
  const head = `${time} ${r.attention.state}  ${r.conversation}  ${v(r.attention.reason)}`;
  return needsYou(r.attention.state) ? `${head}\n  ${v(attachLine(r, stateDir))}\n` : `${head}\n`;
}
