// The private-folder rule, in one place for the control layer (state dir, claims, registry,
// sockets, agent copies) and the search cache. A private folder is a real folder (no link) of
// this user with mode 0700, and nobody else can change a folder above it, up to `/`: each is
// this user's or root's and not writable by group or others, unless it is sticky (as /tmp),
// where what sits in it must be this user's or root's (the sticky bit keeps others from
// renaming or deleting it). A link on the way is followed and its target checked the same way.
// Files in a private folder are regular files of this user, one link, no group or other bits.
// Answers are values: nothing here throws for a refusal; each layer turns one into its own code.
import { chmodSync, lstatSync, mkdirSync, realpathSync, type Stats } from "node:fs";
import { dirname, join, resolve } from "node:path";

export type PrivateProblemCode =
  /** The folder or file, or a folder above it, is not there (checks that do not create). */
  | "missing"
  /** A step of the path could not be looked at (EACCES, ENOTDIR, ELOOP, …). */
  | "unusable"
  /** Not a folder (or, for a file, not a regular file). */
  | "not-a-folder"
  | "not-a-file"
  /** A symbolic link where a real folder or file must be. */
  | "link"
  /** Owned by another user. */
  | "not-yours"
  /** Group or others have bits on it. */
  | "open"
  /** A second name (hard link) reaches the file. */
  | "linked-twice"
  /** A folder above it that someone else could change. */
  | "unsafe-parent";

export type PrivateProblem = { code: PrivateProblemCode; path: string; message: string };
export type PrivateCheck = { ok: true } | { ok: false; problem: PrivateProblem };

/**
 * How a message names the place and what else the person can do, e.g.
 * `{ what: "the state dir", instead: "choose another with --state-dir" }`.
 */
export type PlaceWords = { what: string; instead: string };

const OK: PrivateCheck = { ok: true };
/** Links followed on one path before it is taken for a loop. */
const MAX_LINKS = 40;

/** This process's uid; -1 where there are none (no POSIX ids: nothing is "ours"). */
function myUid(): number {
  return process.getuid?.() ?? -1;
}

/**
 * Creates `dir` and any missing folder above it with mode 0700, then checks it as
 * checkPrivateFolder does. Nothing is created under a folder that fails the parent rule.
 */
export function ensurePrivateFolder(dir: string, words: PlaceWords): PrivateCheck {
  const target = resolve(dir);
  const missing: string[] = [];
  let existing = target;
  for (;;) {
    const st = lstatOrCode(existing);
    if (typeof st !== "string") break;
    if (st !== "ENOENT") return unusable(existing, st, target, words, "made");
    missing.unshift(existing);
    const up = dirname(existing);
    if (up === existing) break;
    existing = up;
  }
  if (missing.length > 0) {
    const parents = checkChain(existing, target, words);
    if (!parents.ok) return parents;
    for (const folder of missing) {
      try {
        mkdirSync(folder, { mode: 0o700 });
        // The umask can only remove bits from 0700; set it exactly so the folder is usable.
        chmodSync(folder, 0o700);
      } catch (e) {
        // Made meanwhile by another process of ours (two controllers starting): checked below.
        const code = codeOf(e);
        if (code !== "EEXIST") return unusable(folder, code, target, words, "made");
      }
    }
  }
  return checkPrivateFolder(target, words);
}

/**
 * `dir` is a real folder of this user, mode 0700, and every folder above it is safe. The
 * folders above are checked first: the highest one at fault is the cause a person can fix.
 */
export function checkPrivateFolder(dir: string, words: PlaceWords): PrivateCheck {
  const path = resolve(dir);
  const parents = checkParents(path, words);
  if (!parents.ok) return parents;
  const st = lstatOrCode(path);
  if (typeof st === "string") {
    if (st === "ENOENT") return problem("missing", path, `${say(words, path)} does not exist`);
    return unusable(path, st, path, words);
  }
  return checkOwnFolder(path, st, words);
}

/**
 * Every folder above `path` (not `path` itself), from `/` down: each this user's or root's and
 * not writable by group or others unless sticky; in a sticky folder, the next step this user's
 * or root's. A link is followed and its target checked the same way.
 */
export function checkParents(path: string, words: PlaceWords): PrivateCheck {
  const full = resolve(path);
  const up = dirname(full);
  if (up === full) return OK;
  return checkChain(up, full, words);
}

/**
 * A file in a private folder: a regular file of this user, one link, and no bits for group or
 * others. `missing` when it is not there. The folder is the caller's to check.
 */
export function checkPrivateFile(path: string, words: PlaceWords): PrivateCheck {
  const st = lstatOrCode(path);
  if (typeof st === "string") {
    if (st === "ENOENT") return problem("missing", path, `${say(words, path)} does not exist`);
    return unusable(path, st, path, words);
  }
  if (st.isSymbolicLink()) {
    return problem(
      "link",
      path,
      `${say(words, path)} is a symbolic link; it must be a file of its own: remove the link, or ${words.instead}`,
    );
  }
  if (!st.isFile()) {
    return problem(
      "not-a-file",
      path,
      `${say(words, path)} is not a regular file: remove it, or ${words.instead}`,
    );
  }
  if (st.uid !== myUid()) return notYours(path, st.uid, words);
  if (st.nlink !== 1) {
    return problem(
      "linked-twice",
      path,
      `${say(words, path)} has ${st.nlink} names (hard links): another name could reach it. Remove it, or ${words.instead}`,
    );
  }
  if ((st.mode & 0o077) !== 0) {
    return problem(
      "open",
      path,
      `${say(words, path)} has mode ${modeOf(st)}: other users could read it. Make it 0600 (chmod 600 ${path}), or ${words.instead}`,
    );
  }
  return OK;
}

/** The folder itself: real, this user's, nothing for group or others. */
function checkOwnFolder(path: string, st: Stats, words: PlaceWords): PrivateCheck {
  if (st.isSymbolicLink()) {
    return problem(
      "link",
      path,
      `${say(words, path)} is a symbolic link; it must be a real folder: remove the link, or ${words.instead}`,
    );
  }
  if (!st.isDirectory()) {
    return problem(
      "not-a-folder",
      path,
      `${say(words, path)} is not a folder: remove it, or ${words.instead}`,
    );
  }
  if (st.uid !== myUid()) return notYours(path, st.uid, words);
  if ((st.mode & 0o077) !== 0) {
    const how = (st.mode & 0o022) !== 0 ? "is writable by others" : "can be entered by others";
    return problem(
      "open",
      path,
      `${say(words, path)} ${how} (mode ${modeOf(st)}): make it yours and 0700 (chmod 700 ${path}), or ${words.instead}`,
    );
  }
  return OK;
}

/**
 * Checks every folder from `/` down to `folder` (included) by the parent rule; `wanted` is the
 * place the caller asked about, named in messages.
 */
function checkChain(folder: string, wanted: string, words: PlaceWords, links = 0): PrivateCheck {
  const root = lstatOrCode("/");
  if (typeof root === "string") return unusable("/", root, wanted, words);
  const top = checkParentFolder("/", root, wanted, words);
  if (!top.ok) return top;
  let cur = "/";
  let curSt = root;
  for (const name of folder.split("/").filter((s) => s !== "")) {
    const next = join(cur, name);
    const st = lstatOrCode(next);
    if (typeof st === "string") return unusable(next, st, wanted, words);
    // In a sticky folder others may write, only an entry's owner (or the folder's, or root)
    // can rename or remove it: it must be ours or root's, a link included.
    if (isSharedSticky(curSt) && st.uid !== myUid() && st.uid !== 0) {
      return problem(
        "unsafe-parent",
        next,
        `${next}, on the way to ${say(words, wanted)}, is in the shared folder ${cur} and belongs to uid ${st.uid}: that user could replace it. Use a folder of your own, or ${words.instead}`,
      );
    }
    if (st.isSymbolicLink()) {
      // The link sits in `cur`, which is checked: only its owner or root could change it.
      // Where it leads is checked from the top.
      if (links >= MAX_LINKS) return unusable(next, "ELOOP", wanted, words);
      let real: string;
      try {
        real = realpathSync(next);
      } catch (e) {
        return unusable(next, codeOf(e), wanted, words);
      }
      const through = checkChain(real, wanted, words, links + 1);
      if (!through.ok) return through;
      const realSt = lstatOrCode(real);
      if (typeof realSt === "string") return unusable(real, realSt, wanted, words);
      cur = real;
      curSt = realSt;
      continue;
    }
    const safe = checkParentFolder(next, st, wanted, words);
    if (!safe.ok) return safe;
    cur = next;
    curSt = st;
  }
  return OK;
}

/** One folder on the way: a folder of this user or root that group and others can't write. */
function checkParentFolder(
  path: string,
  st: Stats,
  wanted: string,
  words: PlaceWords,
): PrivateCheck {
  const above = path === wanted ? say(words, wanted) : `${path}, above ${say(words, wanted)},`;
  if (!st.isDirectory()) {
    return problem("unsafe-parent", path, `${above} is not a folder; ${words.instead}`);
  }
  if (st.uid !== myUid() && st.uid !== 0) {
    return problem(
      "unsafe-parent",
      path,
      `${above} belongs to uid ${st.uid}: that user could replace what is in it. Use a folder of your own, or ${words.instead}`,
    );
  }
  if ((st.mode & 0o022) !== 0 && (st.mode & 0o1000) === 0) {
    const who = (st.mode & 0o002) !== 0 ? "others" : "its group";
    return problem(
      "unsafe-parent",
      path,
      `${above} is writable by ${who} (mode ${modeOf(st)}): they could replace what is in it. Make it writable only by its owner (chmod go-w ${path}), or ${words.instead}`,
    );
  }
  return OK;
}

/** A sticky folder group or others may write in (as /tmp). */
function isSharedSticky(st: Stats): boolean {
  return (st.mode & 0o1000) !== 0 && (st.mode & 0o022) !== 0;
}

function notYours(path: string, uid: number, words: PlaceWords): PrivateCheck {
  return problem(
    "not-yours",
    path,
    `${say(words, path)} belongs to uid ${uid}, not to you (uid ${myUid()}): whoever owns it could read or replace what is in it. Use a folder of your own, or ${words.instead}`,
  );
}

function unusable(
  at: string,
  code: string,
  wanted: string,
  words: PlaceWords,
  doing = "checked",
): PrivateCheck {
  const where = at === wanted ? "" : ` (at ${at})`;
  return problem(
    code === "ENOENT" ? "missing" : "unusable",
    at,
    `${say(words, wanted)} cannot be ${doing}${where}: ${describeErrno(code)}; ${words.instead}`,
  );
}

function problem(code: PrivateProblemCode, path: string, message: string): PrivateCheck {
  return { ok: false, problem: { code, path, message } };
}

function say(words: PlaceWords, path: string): string {
  return `${words.what} ${path}`;
}

function modeOf(st: Stats): string {
  return (st.mode & 0o7777).toString(8);
}

/** lstat's answer, or its errno code. */
function lstatOrCode(path: string): Stats | string {
  try {
    return lstatSync(path);
  } catch (e) {
    return codeOf(e);
  }
}

function codeOf(e: unknown): string {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  if (typeof code === "string") return code;
  throw e;
}

function describeErrno(code: string): string {
  switch (code) {
    case "ENOENT":
      return "a part of the path does not exist (ENOENT)";
    case "ENOTDIR":
      return "a part of the path is a file, not a folder (ENOTDIR)";
    case "EACCES":
    case "EPERM":
      return `permission denied (${code})`;
    case "ELOOP":
      return "too many symbolic links (ELOOP)";
    case "EROFS":
      return "the file system is read-only (EROFS)";
    case "ENOSPC":
    case "EDQUOT":
      return `no space left on the device (${code})`;
    default:
      return code;
  }
}
