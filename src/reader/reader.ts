// The reader (CHAT-02): catalogue, open, next. It never writes a file, never resumes or
// controls anything, and takes no path from a caller: a conversation id is resolved by listing
// the current roots. Refusals are values: every Refusal thrown below is returned here as
// `{ ok: false, refusal }`, and anything else is a bug and propagates.
import type {
  Catalogue,
  Cursor,
  ForkedFrom,
  Page,
  RefusalRecord,
  View,
} from "../protocol/chat-01.ts";
import { type Cached, listRoot, parentRow, readCatalogue, readRow } from "./catalogue.ts";
import type { PrefixCheck, ProofPolicy } from "./change-time.ts";
import { type Binding, type CursorState, CursorStore } from "./cursors.ts";
import type { EntryRec } from "./entries.ts";
import { approvalKey, expandRoots } from "./expand.ts";
import { listAgentFiles } from "./harness/claude-code/store.ts";
import { harnessOf } from "./harness/index.ts";
import { type BranchItems, branchItems, extendBranchItems } from "./items.ts";
import { PageBytes, WindowCache } from "./page-bytes.ts";
import { ParseCache, type Parsed } from "./parse-cache.ts";
import { ExtendedParse, FreshParse } from "./parse-sink.ts";
import { fillPage, type Position, type SizedPart } from "./parts.ts";
import { isRefusal, Refusal } from "./refusal.ts";
import { createItemRenderer } from "./render.ts";
import { closeFile, type FileIdentity, openSessionFile } from "./safe-fs.ts";
import {
  type ByteProof,
  checkPinned,
  epochOf,
  followPinned,
  openSnapshot,
  readPinned,
  type Sinks,
  type Verified,
} from "./snapshot.ts";
import {
  type ClaudeRoot,
  conversationIdOf,
  type FileRoot,
  type Root,
  unsupportedRowId,
} from "./sources.ts";
import { branchName, defaultBranch, findBranch } from "./tree.ts";
import { viewFor } from "./view.ts";

type Sink = FreshParse | ExtendedParse;

export const ACTOR = "local-operator";
export const PURPOSE = "history";

export type ReaderOptions = {
  roots: Root[] | (() => Root[]);
  /**
   * How `next` checks the pinned bytes: `auto` trusts the change time where a settled read
   * proves a file untouched (change-time.ts) and compares the bytes otherwise; `bytes` always
   * compares.
   */
  prefixCheck?: PrefixCheck;
  /**
   * Tests only: the racy window in ms instead of the one derived from the kernel's writeback
   * settings. A shorter window than writeback needs lets writes through a mapping go unseen.
   */
  racyWindowMs?: number;
  /** Milliseconds now: cursor expiry, and when a racy snapshot is verified in full again. */
  now?: () => number;
  cursorCap?: number;
  cursorTtlMs?: number;
};

export type OpenRequest = {
  conversation: string;
  branch?: string;
  actor?: string;
  purpose?: string;
};
export type NextRequest = {
  cursor: string;
  conversation: string;
  branch: string;
  actor?: string;
  purpose?: string;
};

export type ReadResult =
  | { ok: true; page: Page; cursor: Cursor | null; follow: Cursor | null; view: View }
  | { ok: false; refusal: RefusalRecord };

export type Reader = {
  catalogue(): Catalogue;
  open(request: OpenRequest): ReadResult;
  next(request: NextRequest): ReadResult;
};

export function createReader(options: ReaderOptions): Reader {
  const now = options.now ?? Date.now;
  const policy: ProofPolicy = {
    prefixCheck: options.prefixCheck ?? "auto",
    // The clock of cursor expiry times racy re-verification too, so tests can move both.
    ...(options.now ? { clock: options.now } : {}),
    ...(options.racyWindowMs === undefined
      ? {}
      : { racyWindowNs: BigInt(Math.round(options.racyWindowMs * 1e6)) }),
  };
  const cursors = new CursorStore({
    now,
    ...(options.cursorCap === undefined ? {} : { cap: options.cursorCap }),
    ...(options.cursorTtlMs === undefined ? {} : { ttlMs: options.cursorTtlMs }),
  });
  const rowCache = new Map<string, Cached>();
  const parents = new WeakMap<Parsed, ForkedFrom | null>();
  const located = new Map<string, { key: string; root: FileRoot; name: string }>();
  const parses = new ParseCache();
  const windows = new WindowCache();
  const renderItem = createItemRenderer();
  const currentRoots = (): Root[] =>
    typeof options.roots === "function" ? options.roots() : options.roots;

  function locate(conversation: string): { root: FileRoot; name: string } {
    const roots = currentRoots();
    const remembered = located.get(conversation);
    if (remembered) {
      const approver = roots.find((r) => approvalKey(r) === remembered.key);
      // A repository root is taken as it is now (its registrations may have changed); a folder
      // listed from a store or a Claude seat is rebuilt from it, which is approved still.
      if (approver?.kind === "pi") return { root: approver, name: remembered.name };
      if (approver) return { root: remembered.root, name: remembered.name };
    }
    const claude: { root: ClaudeRoot; names: string[] }[] = [];
    for (const root of expandRoots(roots)) {
      if (root.kind === "refused-store") {
        if (remembered?.key === root.key) throw root.refusal;
        continue;
      }
      if (root.kind === "unsupported") {
        if (unsupportedRowId(root) === conversation) {
          throw new Refusal(
            "unsupported-harness",
            `Seat ${root.seat} runs ${root.harness}, not Pi; its history cannot be read here.`,
          );
        }
        continue;
      }
      let names: string[];
      try {
        names = listRoot(root).names;
      } catch (e) {
        if (!isRefusal(e)) throw e;
        // A root that cannot be listed can still be the one the caller meant.
        if (remembered?.root.sessionsDir === root.sessionsDir) throw e;
        continue;
      }
      for (const name of names) {
        if (conversationIdOf(root, name) === conversation) {
          located.set(conversation, { key: approvalKey(root), root, name });
          return { root, name };
        }
      }
      if (root.kind === "claude") claude.push({ root, names: listRoot(root, true).names });
    }
    // Not a session: a subagent's transcript, reached from its Agent call (not a catalogue row).
    for (const { root, names } of claude) {
      for (const agent of listAgentFiles(root, names)) {
        if (conversationIdOf(agent.root, agent.name) === conversation) {
          located.set(conversation, { key: approvalKey(root), ...agent });
          return agent;
        }
      }
    }
    if (remembered) {
      throw new Refusal(
        "unknown-conversation",
        "This conversation's root is no longer approved; reload the catalogue.",
      );
    }
    throw new Refusal(
      "unknown-conversation",
      "No approved session root holds this conversation now; reload the catalogue.",
    );
  }

  /**
   * The parse of a verified snapshot: the cached one when nothing was read (or when the same
   * bytes were parsed before), else what the read's sink parsed — the file from its start, or
   * `prev` (the parse of the snapshot it continues) extended with the lines appended.
   */
  function adopt(v: Verified<Sink>, root: FileRoot, prev?: Parsed): Parsed {
    const { data, sink } = v;
    const hit = parses.get(cacheKey(root), data);
    if (hit) {
      // Bytes verified again: later checks may rely on the newer stamp. A whole-file read's
      // stamp comes with whether the file ends part way through a line: kept together, so a
      // later read that the stamp proves untouched (and returns this data as it is) reports it.
      if (hit.data !== data) {
        hit.data.stamp = data.stamp;
        hit.data.checkedAt = data.checkedAt;
        hit.data.checkMs = data.checkMs;
        if (data.stamp.whole) hit.data.incomplete = data.incomplete;
      }
      return hit;
    }
    if (!sink) throw new Error("a snapshot proved unchanged is not in the parse cache");
    const session = sink instanceof ExtendedParse ? sink.finish() : sink.finish(data.incomplete);
    if (sink instanceof ExtendedParse && !prev) throw new Error("an extension without its parse");
    const parsed: Parsed = { data, session, items: new Map() };
    parses.put(cacheKey(root), parsed);
    return parsed;
  }

  /** Sinks for a read of a file under `root`: from its start, or continuing `prev`'s parse. */
  function sinksFor(root: FileRoot, prev: Parsed | undefined): Sinks<Sink> {
    // Every harness's file is read by the same passes; only its format parses the lines.
    const format = harnessOf(root).format(root);
    return {
      fresh: () => new FreshParse(format),
      extend: () => {
        if (!prev) throw new Error("no parse to extend");
        return new ExtendedParse(prev.session);
      },
    };
  }

  /**
   * The items of a branch, cached per parse; after a follow, extended from `prev`'s (the parse
   * the follow started from) in time proportional to what was appended, when it can be.
   */
  function itemsOf(parsed: Parsed, branch: string, prev?: Parsed): BranchItems | null {
    const b = findBranch(parsed.session, branch);
    if (b < 0) return null;
    const cached = parsed.items.get(b);
    if (cached) return cached;
    const before = prev?.items.get(b);
    const items =
      (prev && before && extendBranchItems(prev.session, before, parsed.session, b)) ??
      branchItems(parsed.session, b);
    parsed.items.set(b, items);
    return items;
  }

  function respond(
    parsed: Parsed,
    bytes: PageBytes,
    binding: Binding,
    sourceEpoch: string,
    items: BranchItems,
    start: Position,
    incomplete: boolean,
  ): ReadResult {
    const lines = (rec: EntryRec) => bytes.entry(rec);
    const partsOf = (i: number): SizedPart[] => {
      const { buf, item } = bytes.item(items.at(i));
      return renderItem(parsed.session, buf, item, lines);
    };
    const { parts, next } = fillPage(items.length, start, partsOf);
    const pinned = {
      snapshot: parsed.data.snapshot,
      sourceEpoch,
      dev: parsed.data.dev,
      ino: parsed.data.ino,
    };
    let cursor: Cursor | null = null;
    let follow: Cursor | null = null;
    if (next) {
      cursor = cursors.issue("page", binding, pinned, {
        position: next,
        itemCount: 0,
        itemsDigest: "",
        incomplete,
      });
    } else {
      follow = cursors.issue("follow", binding, pinned, {
        position: { item: items.length, part: 0 },
        itemCount: items.length,
        itemsDigest: items.digestOf(items.length),
        incomplete,
      });
    }
    const page: Page = {
      conversation: binding.conversation,
      branch: binding.branch,
      parts,
      nextCursor: cursor?.id ?? null,
      snapshot: parsed.data.snapshot,
      sourceEpoch,
    };
    const shown = findBranch(parsed.session, binding.branch);
    const from = forkedFromOf(parsed, binding.conversation);
    return {
      ok: true,
      page,
      cursor,
      follow,
      view: viewFor(parsed.session, shown, incomplete, lines, from),
    };
  }

  /**
   * The conversation a forked session came from, once per parse: its header's parent path
   * matched as text to an approved root, and that one file's row read through the root (as a
   * listing reads it). A path naming nothing approved is never opened.
   */
  function forkedFromOf(parsed: Parsed, self: string): ForkedFrom | null {
    const known = parents.get(parsed);
    if (known !== undefined) return known;
    const path = parsed.session.header.parentPath;
    const row =
      path === undefined
        ? null
        : parentRow(
            currentRoots(),
            path,
            (_id, root, name) => readRow(root, name, rowCache) ?? undefined,
          );
    const from =
      row === null || row.conversation === self
        ? null
        : { conversation: row.conversation, title: row.title };
    parents.set(parsed, from);
    return from;
  }

  function open(req: OpenRequest): ReadResult {
    const { actor, purpose } = checkAudience(req);
    const conversation = checkString(req.conversation, "unknown-conversation", "conversation id");
    const { root, name } = locate(conversation);
    const file = openSessionFile(root.projectRoot, root.sessionsDir, name);
    try {
      // Opening again a file proved untouched reuses its latest snapshot (the fstat of the open
      // is the proof; see snapshot.ts), else the file is verified and read on, or read whole.
      const { identity } = file;
      const latest = parses.latest(cacheKey(root), identity.dev, identity.ino);
      const v = openSnapshot(file, latest?.data, policy, sinksFor(root, latest));
      // A file that grew since its latest snapshot is parsed by extending that snapshot's parse.
      const prev = v.sink instanceof ExtendedParse ? latest : undefined;
      const parsed = adopt(v, root, prev);
      const { data } = parsed;
      const branch =
        req.branch === undefined
          ? branchName(parsed.session, defaultBranch(parsed.session))
          : checkString(req.branch, "unknown-branch", "branch");
      const items = itemsOf(parsed, branch, prev);
      if (!items)
        throw new Refusal(
          "unknown-branch",
          `This conversation has no branch ${JSON.stringify(branch.slice(0, 80))}.`,
        );
      const epoch = epochOf(data.dev, data.ino, data.snapshot.digest);
      const binding = { actor, purpose, conversation, branch };
      const bytes = new PageBytes(file, data, v, windows);
      const start = { item: 0, part: 0 };
      const result = respond(parsed, bytes, binding, epoch, items, start, data.incomplete);
      bytes.finish();
      return result;
    } finally {
      closeFile(file);
    }
  }

  function next(req: NextRequest): ReadResult {
    const { actor, purpose } = checkAudience(req);
    const id = checkString(req.cursor, "cursor-unknown", "cursor");
    const conversation = checkString(req.conversation, "cursor-foreign", "conversation id");
    const branch = checkString(req.branch, "cursor-foreign", "branch");
    const binding: Binding = { actor, purpose, conversation, branch };
    const state = cursors.check(id, binding);
    const { root, name } = locate(conversation);
    try {
      const result = resume(state, root, name, binding);
      cursors.consume(id);
      return result;
    } catch (e) {
      if (isRefusal(e) && e.code === "source-replaced") cursors.consume(id);
      throw e;
    }
  }

  function resume(state: CursorState, root: FileRoot, name: string, binding: Binding): ReadResult {
    const pinned = { dev: state.dev, ino: state.ino, snapshot: state.record.snapshot };
    const file = openSessionFile(root.projectRoot, root.sessionsDir, name);
    try {
      // The pinned snapshot's parse, or (let go by the cache) the pinned snapshot read again.
      let known = parses.get(cacheKey(root), pinned);
      if (!known) {
        const read = readPinned(file, pinned, policy, sinksFor(root, undefined).fresh);
        known = adopt(read, root);
      }
      let parsed = known;
      let prev: Parsed | undefined;
      let proof: { proof: ByteProof; since: FileIdentity };
      if (state.record.kind === "page") {
        proof = checkPinned(file, known.data, policy);
      } else {
        const v = followPinned(file, known.data, policy, sinksFor(root, known).extend);
        prev = v.sink ? known : undefined;
        parsed = adopt(v, root, prev);
        proof = v;
      }
      const items = itemsOf(parsed, binding.branch, prev);
      if (!items) throw replacedBranch("this branch is gone");
      const bytes = new PageBytes(file, parsed.data, proof, windows);
      let result: ReadResult;
      if (state.record.kind === "page") {
        const { sourceEpoch } = state.record;
        result = respond(
          parsed,
          bytes,
          binding,
          sourceEpoch,
          items,
          state.position,
          state.incomplete,
        );
      } else {
        if (
          items.length < state.itemCount ||
          items.digestOf(state.itemCount) !== state.itemsDigest
        ) {
          throw replacedBranch("this branch's earlier history changed");
        }
        const start = { item: state.itemCount, part: 0 };
        const { sourceEpoch } = state.record;
        result = respond(parsed, bytes, binding, sourceEpoch, items, start, parsed.data.incomplete);
      }
      bytes.finish();
      return result;
    } finally {
      closeFile(file);
    }
  }

  return {
    catalogue: () => readCatalogue(currentRoots(), rowCache, new Date(now())),
    open: (req) => settle(() => open(req)),
    next: (req) => settle(() => next(req)),
  };
}

/**
 * The parse cache's key for a root: the project root (its header check depends on nothing else),
 * or, in Pi's store, the directory (the check is against its name).
 */
function cacheKey(root: FileRoot): string {
  // A Claude folder's parse names its agents' conversations by the folder's identity.
  if (root.kind === "claude") return JSON.stringify([...root.identity, root.sessionsDir]);
  return root.store ? root.sessionsDir : root.projectRoot;
}

function settle(fn: () => ReadResult): ReadResult {
  try {
    return fn();
  } catch (e) {
    if (isRefusal(e)) return { ok: false, refusal: e.toRecord() };
    throw e;
  }
}

function replacedBranch(why: string): Refusal {
  return new Refusal(
    "source-replaced",
    `The session file changed under this view (${why}); read it again from the start.`,
  );
}

function checkAudience(req: { actor?: unknown; purpose?: unknown }): {
  actor: string;
  purpose: string;
} {
  const actor = req.actor ?? ACTOR;
  const purpose = req.purpose ?? PURPOSE;
  if (actor !== ACTOR) {
    throw new Refusal(
      "unknown-actor",
      `Only ${ACTOR} may read on this route; authenticated actors are not supported.`,
    );
  }
  if (purpose !== PURPOSE)
    throw new Refusal("unsupported-purpose", `The only purpose supported is ${PURPOSE}.`);
  return { actor, purpose };
}

function checkString(
  v: unknown,
  code: "unknown-conversation" | "unknown-branch" | "cursor-unknown" | "cursor-foreign",
  what: string,
): string {
  if (typeof v !== "string" || v.length === 0 || v.length > 512)
    throw new Refusal(code, `The ${what} is missing or not valid.`);
  return v;
}
