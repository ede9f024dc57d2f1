// The live-session guard (seed: Choices, Live roots and Startup; G1-G3). It refuses any path
// inside a live root, as written or by real path (G1, G2), and any path whose resolution changed
// between construction and bind (G3). It resolves symlinks itself, as the kernel would, so a
// dangling link into a live root is caught too. Reads metadata only; never opens a file.
import { type BigIntStats, lstatSync, readlinkSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { ControlRefusal } from "../refusal.ts";
import type { SessionPlace } from "./harness.ts";

/** The live roots under each home: Pi's, Claude's, and the Mosaic dev tree's. */
export const LIVE_DIRS = [".pi", ".claude", ".mosaic-dev"] as const;

/** A seat name, as the reader's sources take it. */
const SEAT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** Linux's MAXSYMLINKS: more links than this in one resolution is a loop. */
const MAX_LINKS = 40;

/** One component met while resolving a path: its lstat identity, or where resolution ran out. */
export type Step =
  | { path: string; kind: "dir" | "file" | "symlink" | "other"; dev: string; ino: string }
  | { path: string; kind: "missing" };

/** What construction saw of a path, for bindCheck. */
export type PathStamp = {
  /** The path as given. */
  path: string;
  /** Its real path; for a path that doesn't exist yet, the real path of what does, then the rest. */
  real: string;
  steps: readonly Step[];
  /** Set when the path was checked as the session file (with the place it was checked at). */
  session?: { seat: string | undefined; place: SessionPlace };
};

export type GuardOptions = {
  /** Every session file must sit inside it: `<project>/.pi/state/<seat>/sessions/<name>.jsonl`. */
  fixtureRoot: string;
  /** More homes whose live roots are protected, such as the real home under a scratch `HOME`. */
  homes?: readonly string[] | undefined;
};

function live(message: string): ControlRefusal {
  return new ControlRefusal("live-session-refused", message);
}

function configuration(message: string): ControlRefusal {
  return new ControlRefusal("configuration", message);
}

/**
 * Pi's sessions: `<project>/.pi/state/<seat>/sessions/<name>.jsonl`, the directory the reader
 * lists for that project and seat (reader/sources.ts).
 */
export const PI_SESSION_PLACE: SessionPlace = {
  projectOf(file, seat) {
    const sessions = dirname(file);
    const seatDir = dirname(sessions);
    const state = dirname(seatDir);
    const dotPi = dirname(state);
    const name = basename(file);
    const placed =
      name.endsWith(".jsonl") &&
      name !== ".jsonl" &&
      basename(sessions) === "sessions" &&
      basename(state) === "state" &&
      basename(dotPi) === ".pi" &&
      SEAT_NAME.test(basename(seatDir)) &&
      (seat === undefined || basename(seatDir) === seat);
    return placed ? dirname(dotPi) : null;
  },
  describe: (seat) => `<project>/.pi/state/${seat ?? "<seat>"}/sessions/<name>.jsonl`,
};

/** A seat name, as the reader's sources take it (for the places of other harnesses). */
export function isSeatName(name: string): boolean {
  return SEAT_NAME.test(name);
}

function isInside(path: string, root: string): boolean {
  return path === root || path.startsWith(root === "/" ? root : `${root}/`);
}

function kindOf(st: { isDirectory(): boolean; isFile(): boolean; isSymbolicLink(): boolean }) {
  if (st.isSymbolicLink()) return "symlink";
  if (st.isDirectory()) return "dir";
  return st.isFile() ? "file" : "other";
}

function errnoOf(e: unknown): string {
  return (e as NodeJS.ErrnoException).code ?? String(e);
}

/**
 * Resolves an absolute path component by component, following symlinks (a dangling one too) and
 * `..` the way the kernel does. Stops at the first missing component: nothing below it exists.
 * Refuses `live-session-refused` when it can't tell where the path leads (a loop, EACCES).
 */
export function followPath(path: string): { real: string; steps: Step[] } {
  const steps: Step[] = [];
  const pending = path.split("/").filter((c) => c !== "");
  let current = "/";
  let links = 0;
  for (let c = pending.shift(); c !== undefined; c = pending.shift()) {
    if (c === ".") continue;
    if (c === "..") {
      current = dirname(current);
      continue;
    }
    const next = join(current, c);
    let st: BigIntStats;
    try {
      st = lstatSync(next, { bigint: true });
    } catch (e) {
      const code = errnoOf(e);
      if (code !== "ENOENT" && code !== "ENOTDIR") {
        throw live(`can't tell where ${JSON.stringify(path)} leads: ${code} at ${next}`);
      }
      steps.push({ path: next, kind: "missing" });
      return { real: resolve(next, ...pending), steps };
    }
    const kind = kindOf(st);
    steps.push({ path: next, kind, dev: String(st.dev), ino: String(st.ino) });
    if (kind !== "symlink") {
      current = next;
      continue;
    }
    if (++links > MAX_LINKS) throw live(`${JSON.stringify(path)} has a symlink loop`);
    let target: string;
    try {
      target = readlinkSync(next);
    } catch (e) {
      throw live(`can't tell where ${JSON.stringify(path)} leads: ${errnoOf(e)} at ${next}`);
    }
    pending.unshift(...target.split("/").filter((t) => t !== ""));
    if (isAbsolute(target)) current = "/";
  }
  return { real: current, steps };
}

function sameStep(a: Step, b: Step): boolean {
  if (a.path !== b.path || a.kind === "missing" || b.kind === "missing") return false;
  return a.kind === b.kind && a.dev === b.dev && a.ino === b.ino;
}

/** Refuses live sessions and paths under live roots. Construct once; check, then bindCheck. */
export class LiveSessionGuard {
  readonly fixtureRoot: string;
  /** `<home>/.pi`, `<home>/.claude`, `<home>/.mosaic-dev` for `os.homedir()` and each of homes. */
  readonly liveRoots: readonly string[];

  /**
   * Refuses `configuration` when fixtureRoot or a home is missing or not absolute, or fixtureRoot
   * is not a directory; `live-session-refused` when fixtureRoot is inside a live root.
   */
  constructor(options: GuardOptions) {
    const homes = [homedir(), ...(options.homes ?? [])];
    for (const home of homes) {
      if (typeof home !== "string" || !isAbsolute(home)) {
        throw configuration(`a home must be an absolute path, not ${JSON.stringify(home)}`);
      }
    }
    this.liveRoots = [...new Set(homes.flatMap((h) => LIVE_DIRS.map((d) => join(h, d))))];
    const root = options.fixtureRoot;
    if (typeof root !== "string" || !isAbsolute(root)) {
      throw configuration(`fixtureRoot must be an absolute path, not ${JSON.stringify(root)}`);
    }
    this.fixtureRoot = resolve(root);
    const stamp = this.check(this.fixtureRoot);
    if (stamp.steps.at(-1)?.kind !== "dir") {
      throw configuration(`fixtureRoot ${JSON.stringify(root)} is not a directory`);
    }
  }

  /** The live root an absolute path is inside, as written or by real path; null when none. */
  liveRootOf(path: string): string | null {
    const absolute = isAbsolute(path) ? path : `${process.cwd()}/${path}`;
    return this.#rootOf(resolve(absolute), followPath(absolute).real);
  }

  #rootOf(written: string, real: string): string | null {
    for (const root of this.liveRoots) {
      const rootReal = followPath(root).real;
      for (const p of [written, real]) {
        if (isInside(p, root) || isInside(p, rootReal)) return root;
      }
    }
    return null;
  }

  /**
   * G1 and G2: refuses `live-session-refused` when the path, as written or by real path, is inside
   * a live root (a symlink into one included, dangling or not). Returns the stamp for bindCheck.
   */
  check(path: string): PathStamp {
    if (typeof path !== "string" || !isAbsolute(path)) {
      throw configuration(`a guarded path must be absolute, not ${JSON.stringify(path)}`);
    }
    const { real, steps } = followPath(path);
    const root = this.#rootOf(resolve(path), real);
    if (root !== null) {
      const via = real === resolve(path) ? "" : ` (it resolves to ${real})`;
      throw live(`${JSON.stringify(path)} is inside the live root ${root}${via}`);
    }
    return { path, real, steps };
  }

  /**
   * check, plus the session file's place: refuses `configuration` unless the path is absolute,
   * normalized and `<project>/.pi/state/<seat>/sessions/<name>.jsonl` with the project inside
   * fixtureRoot, the seat named as the reader names seats (`[A-Za-z0-9][A-Za-z0-9._-]*`) and
   * equal to seat when given; refuses `live-session-refused` when its real path leaves
   * fixtureRoot, which is what protects the real live roots under a scratch HOME.
   */
  checkSessionFile(
    sessionFile: string,
    seat?: string | undefined,
    place: SessionPlace = PI_SESSION_PLACE,
  ): PathStamp {
    if (typeof sessionFile !== "string" || sessionFile === "") {
      throw configuration("the session file is required");
    }
    if (!isAbsolute(sessionFile) || resolve(sessionFile) !== sessionFile) {
      throw configuration(`the session file must be an absolute normalized path: ${sessionFile}`);
    }
    const stamp = this.check(sessionFile);
    const project = place.projectOf(sessionFile, seat);
    if (project === null || !isInside(project, this.fixtureRoot)) {
      const where = `${this.fixtureRoot}/…/${place.describe(seat)}`;
      throw configuration(`the session file ${sessionFile} is not at ${where}`);
    }
    const fixtureReal = followPath(this.fixtureRoot).real;
    if (!isInside(stamp.real, fixtureReal)) {
      throw live(`the session file ${sessionFile} resolves to ${stamp.real}, outside fixtureRoot`);
    }
    return { ...stamp, session: { seat, place } };
  }

  /**
   * G3, right before spawn: the construction check again, and the same resolution as then. Every
   * component that existed at construction must be the same inode, reached the same way; one
   * created since is allowed (and checked). Refuses `live-session-refused` on a swap.
   */
  bindCheck(path: string, atConstruction: PathStamp): PathStamp {
    if (path !== atConstruction.path) {
      throw live(`bind names ${JSON.stringify(path)}, construction ${atConstruction.path}`);
    }
    const now =
      atConstruction.session === undefined
        ? this.check(path)
        : this.checkSessionFile(path, atConstruction.session.seat, atConstruction.session.place);
    for (const [i, was] of atConstruction.steps.entries()) {
      if (was.kind === "missing") break;
      const is = now.steps[i];
      if (is === undefined || !sameStep(was, is)) {
        throw live(`${path} changed between construction and bind at ${was.path}`);
      }
    }
    return now;
  }
}
