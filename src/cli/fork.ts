// `conversation control --fork-from <id>` (issue 24 item 7): a conversation of Pi's own store is
// continued the way Pi continues a session elsewhere (`pi --fork`): a new session in the seat,
// its header naming the original as `parentSession`, with the whole history, written by Pi's
// own SessionManager.forkFrom. The store stays a live root that nothing here writes.
//
// forkFrom reads its source by path with a plain open (following links) and appends "\n" to a
// source whose last line is unfinished (session-manager.js loadEntriesFromFile), which would be
// a write to the store while Pi is writing it. So the source's bytes are read here the reader's
// way (the descriptor walk, no link followed, the file's identity the same before and after),
// up to its last whole line, into a private copy; during the one synchronous forkFrom call Pi's
// file-system calls on the original's path are served by that copy and a write to it throws
// (module.syncBuiltinESMExports makes Pi's imported bindings see the stand-ins). Pi still
// writes every byte of the fork and records the original's path, as `pi --fork` would. The
// fork is made in a folder beside the seat's sessions that the reader does not list, then
// linked to its final name (never replacing a file), so no half-written session is ever seen.
import { randomBytes } from "node:crypto";
import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import type { CatalogueRow } from "../protocol/chat-01.ts";
import { listRoot } from "../reader/catalogue.ts";
import { expandRoots } from "../reader/expand.ts";
import { parseHeader } from "../reader/harness/pi/pi.ts";
import { isRefusal } from "../reader/refusal.ts";
import { closeFile, openSessionFile, readRange } from "../reader/safe-fs.ts";
import { conversationIdOf, type PiRoot, rootsFromSpecs } from "../reader/sources.ts";
import { type Checked, fail } from "./config.ts";

/** The largest session forked (the reader's own bound, LIMITS.fileBytes). */
const FORK_MAX_BYTES = 256 * 1024 * 1024;

export type Forked = {
  /** The new session in the seat. */
  file: string;
  /** The original, as its header's `parentSession` names it. */
  parent: string;
  /** The original's conversation id and title. */
  conversation: string;
  title: string | null;
};

/** The store conversation `id` names: its folder root and file name, or null. */
export function storeFileOf(store: string, id: string): { root: PiRoot; name: string } | null {
  const roots = rootsFromSpecs([{ kind: "pi-agent", sessionsDir: store }], []);
  for (const root of expandRoots(roots)) {
    if (root.kind !== "pi") continue;
    let names: string[];
    try {
      names = listRoot(root).names;
    } catch (e) {
      if (isRefusal(e)) continue;
      throw e;
    }
    for (const name of names) if (conversationIdOf(root, name) === id) return { root, name };
  }
  return null;
}

/**
 * Forks store conversation `row` (found in `store`) into `sessionsDir` (created 0700), its
 * header's cwd the project. Fails with words a person acts on; never writes the store.
 */
export async function forkIntoSeat(options: {
  store: string;
  row: CatalogueRow;
  projectRoot: string;
  sessionsDir: string;
}): Promise<Checked<Forked>> {
  const found = storeFileOf(options.store, options.row.conversation);
  if (found === null) {
    return fail(
      `no conversation ${options.row.conversation} in Pi's session store ${options.store}`,
    );
  }
  const bytes = readWholeLines(found.root, found.name);
  if (!bytes.ok) return bytes;
  const original = join(found.root.sessionsDir, found.name);
  const { SessionManager } = await import("@earendil-works/pi-coding-agent");
  fs.mkdirSync(options.sessionsDir, { recursive: true, mode: 0o700 });
  const copyDir = fs.mkdtempSync(join(tmpdir(), "conversation-fork-"));
  // Not `*.jsonl` and not a file: the reader never lists what Pi is still writing here.
  const staging = join(options.sessionsDir, `.fork-${randomBytes(8).toString("hex")}`);
  fs.mkdirSync(staging, { mode: 0o700 });
  try {
    const copy = join(copyDir, basename(found.name));
    fs.writeFileSync(copy, bytes.value, { flag: "wx", mode: 0o600 });
    const sm = servedFrom(original, copy, () =>
      SessionManager.forkFrom(original, options.projectRoot, staging),
    );
    const written = sm.getSessionFile();
    if (written === undefined) throw new Error("Pi's SessionManager wrote no fork");
    const file = join(options.sessionsDir, basename(written));
    fs.linkSync(written, file);
    return {
      ok: true,
      value: {
        file,
        parent: sm.getHeader()?.parentSession ?? original,
        conversation: options.row.conversation,
        title: options.row.title,
      },
    };
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
    fs.rmSync(copyDir, { recursive: true, force: true });
  }
}

/**
 * The file's bytes up to its last whole line, read through the root (no link followed), its
 * header checked as the reader checks it, and the file still the one opened.
 */
function readWholeLines(root: PiRoot, name: string): Checked<Buffer> {
  let file: ReturnType<typeof openSessionFile>;
  try {
    file = openSessionFile(root.projectRoot, root.sessionsDir, name);
  } catch (e) {
    if (isRefusal(e)) return fail(`the conversation can't be read: ${e.code}: ${e.message}`);
    throw e;
  }
  try {
    const size = file.identity.size;
    if (size > FORK_MAX_BYTES) return fail("the conversation is over 256 MiB; it is not forked");
    const buf = readRange(file.fd, 0, size);
    const whole = buf.subarray(0, buf.lastIndexOf(0x0a) + 1);
    try {
      parseHeader(whole, whole.length < buf.length, root);
    } catch (e) {
      if (isRefusal(e)) return fail(`the conversation can't be forked: ${e.code}: ${e.message}`);
      throw e;
    }
    const after = fs.fstatSync(file.fd, { bigint: true });
    if (after.dev !== file.identity.dev || after.ino !== file.identity.ino) {
      return fail("the conversation's file was replaced while it was read; try again");
    }
    return { ok: true, value: whole };
  } finally {
    closeFile(file);
  }
}

/**
 * Runs `fn` (synchronous) with Pi's file-system calls on `original` served by `copy`: it exists,
 * opening it for reading opens the copy, and anything else on it (an append, a write) throws.
 * Every other path is untouched, and the real functions are back before this returns.
 */
function servedFrom<T>(original: string, copy: string, fn: () => T): T {
  const target = resolve(original);
  const isOriginal = (p: unknown) => typeof p === "string" && resolve(p) === target;
  const real = {
    existsSync: fs.existsSync,
    openSync: fs.openSync,
    appendFileSync: fs.appendFileSync,
    writeFileSync: fs.writeFileSync,
  };
  const refuse = (what: string): never => {
    throw new Error(`refused to ${what} ${target}: Pi's store is never written`);
  };
  const patched: typeof real = {
    existsSync: ((p: fs.PathLike) =>
      isOriginal(p) ? true : real.existsSync(p)) as typeof fs.existsSync,
    openSync: ((p: fs.PathLike, flags?: fs.OpenMode, mode?: fs.Mode) => {
      if (!isOriginal(p)) return real.openSync(p, flags ?? "r", mode);
      if (flags !== undefined && flags !== "r") refuse("open for writing");
      return real.openSync(copy, "r");
    }) as typeof fs.openSync,
    appendFileSync: ((
      p: fs.PathOrFileDescriptor,
      ...rest: [string | Uint8Array, fs.WriteFileOptions?]
    ) =>
      isOriginal(p)
        ? refuse("append to")
        : real.appendFileSync(p, ...rest)) as typeof fs.appendFileSync,
    writeFileSync: ((
      p: fs.PathOrFileDescriptor,
      ...rest: [string | NodeJS.ArrayBufferView, fs.WriteFileOptions?]
    ) =>
      isOriginal(p) ? refuse("write") : real.writeFileSync(p, ...rest)) as typeof fs.writeFileSync,
  };
  Object.assign(fs, patched);
  syncBuiltinESMExports();
  try {
    return fn();
  } finally {
    Object.assign(fs, real);
    syncBuiltinESMExports();
  }
}
