// The Pi session parser, pinned against @earendil-works/pi-coding-agent 0.85.1
// (docs/session-format.md, dist/core/session-manager.js, cited as SM:<line>): the header, and a
// scan of the snapshot's lines into entry records (tree.ts builds the tree and branches from
// them). Entry content is parsed again only when a page renders it, so a record holds a byte
// range and the three keys the tree needs, not the object: memory per entry stays small.
import {
  continuedScan,
  emptyTable,
  forEachLine,
  internType,
  isObject,
  parseLine,
  pushEntry,
  type Scanner,
  type ScanState,
  type SessionHead,
  sharedScan,
} from "../../entries.ts";
import { Refusal } from "../../refusal.ts";
import { isCwdInsideProject } from "../../safe-fs.ts";
import type { PiRoot } from "../../sources.ts";
import { scanLine } from "./line-scan.ts";
import { checkStoreCwd } from "./pi-store.ts";

export type Header = SessionHead & {
  id: string;
  cwd: string;
  timestamp: string | null;
  version: number;
};

const NL = 0x0a;
/** The longest recorded time CHAT-01 copies (`recordedTime`). */
const RECORDED_TIME_MAX = 256;

/**
 * Checks line 1 of a snapshot: a complete Pi header whose cwd is inside the project (or, in Pi's
 * own store, encodes to the root's directory name). `buf` is the snapshot (whole lines only);
 * `hasPartial` says bytes followed the last newline.
 */
export function parseHeader(
  buf: Buffer,
  hasPartial: boolean,
  root: Pick<PiRoot, "projectRoot" | "store">,
): Header {
  const nl = buf.indexOf(NL);
  if (nl < 0) {
    throw new Refusal(
      "incomplete-header",
      hasPartial
        ? "The session header is not complete yet (no newline after line 1)."
        : "The session file is empty; Pi has not written its header yet.",
    );
  }
  const obj = parseLine(buf, 0, nl);
  if (!isObject(obj) || obj.type !== "session" || typeof obj.id !== "string") {
    throw new Refusal("not-a-pi-session", "Line 1 is not a Pi session header.");
  }
  const cwd = obj.cwd;
  if (typeof cwd !== "string" || cwd.length === 0) {
    throw new Refusal("foreign-project", "The session header records no working directory.");
  }
  if (root.store) checkStoreCwd(cwd, root.store.dirName);
  else if (!isCwdInsideProject(cwd, root.projectRoot)) {
    throw new Refusal(
      "foreign-project",
      "The session's working directory is relative or outside this project.",
    );
  }
  // A missing version is v1, and Pi compares whatever is there with `<` (SM:75-85), so "1" is v1
  // too and a version that is not a number at all is not.
  const raw = obj.version ?? 1;
  const n = typeof raw === "number" || typeof raw === "string" ? Number(raw) : Number.NaN;
  const version = Number.isNaN(n) ? 3 : n;
  return {
    id: obj.id,
    cwd,
    // CHAT-01 copies recorded times of at most 256 characters (catalogue `createdAt`).
    timestamp:
      typeof obj.timestamp === "string" && obj.timestamp.length <= RECORDED_TIME_MAX
        ? obj.timestamp
        : null,
    version,
    parentSession: typeof obj.parentSession === "string" && obj.parentSession.length > 0,
    ...(typeof obj.parentSession === "string" && obj.parentSession.length > 0
      ? { parentPath: obj.parentSession }
      : {}),
  };
}

/** Pi's scan: a v1 file's entries are chained in file order, so it remembers the last. */
export type PiScan = ScanState & { lastV1: string | null };

/** A scan that starts after the header line of `buf`. */
export function firstScan(buf: Buffer): PiScan {
  return {
    entries: emptyTable(),
    lineNotices: [],
    notices: 0,
    malformed: 0,
    scanned: buf.indexOf(NL) + 1,
    line: 1,
    lastV1: null,
  };
}

/**
 * Scans the whole lines of `buf` from `scan.scanned` on, adding to `scan`. `buf` holds the
 * snapshot's bytes from offset `base` (the snapshot is read in steps and not kept whole).
 */
export function scanLines(buf: Buffer, header: Header, scan: PiScan, base = 0): PiScan {
  const v1 = header.version < 2;
  forEachLine(buf, scan, base, (line, start, end) => {
    // Exactly what JSON.parse would say about validity and the three keys, without building
    // the object (line-scan.ts); the content is parsed only when a page renders the entry.
    const f = scanLine(buf, start, end);
    const at = { start: base + start, end: base + end };
    if (f.json && f.object && f.type === "session") {
      // Pi ignores header lines after the first (research §1.2, fixture 16).
      scan.lineNotices.push({ line, ...at, kind: "ignored-header" });
      scan.notices++;
    } else if (f.json && f.object && (v1 || (typeof f.id === "string" && f.id.length > 0))) {
      // v1 files have no ids: Pi's migration chains them linearly in file order (SM:31-54).
      const id = v1 || typeof f.id !== "string" ? `line-${line}` : f.id;
      const parentId = v1 ? scan.lastV1 : typeof f.parentId === "string" ? f.parentId : null;
      if (v1) scan.lastV1 = id;
      const type = typeof f.type === "string" ? internType(f.type) : "";
      const parent = parentId === "" ? null : parentId;
      pushEntry(scan.entries, id, parent, type, line, at.start, at.end);
    } else {
      scan.lineNotices.push({ line, ...at, kind: "malformed-line" });
      scan.notices++;
      scan.malformed++;
    }
  });
  return scan;
}

/** Pi's scan, as tree.ts drives it. */
export const PI_SCANNER: Scanner<Header, PiScan> = {
  first: (buf) => firstScan(buf),
  lines: scanLines,
  continued: continuedScan,
  shared: sharedScan,
};
