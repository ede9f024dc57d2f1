// The cgroup v2 file system, as the cohort needs it: find a hierarchy we can write, read
// `cgroup.events` and the members of a subtree, write the control files, remove a subtree.
// Invariant: an unreadable or missing file is an `absent` result carrying its errno, never an
// empty one; errno codes become values here and nowhere else.
import { watch } from "node:fs";
import { access, mkdir, readdir, readFile, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

export type Cgroup2Hierarchy = {
  /** Where the cgroup2 file system is mounted (mountinfo field 5). */
  mountPoint: string;
  /** The mount's root inside the hierarchy (mountinfo field 4), in this cgroup namespace. */
  mountRoot: string;
  /** This process's cgroup, the `0::` line of /proc/self/cgroup. */
  cgroupPath: string;
  /** The directory of `cgroupPath` under `mountPoint`: new cgroups go below it. */
  dir: string;
  /** Per-mount and super options together (`nsdelegate` is a super option). */
  options: string[];
  nsdelegate: boolean;
};

export type HierarchyFound =
  | { ok: true; hierarchy: Cgroup2Hierarchy }
  | { ok: false; reason: string };

export type EventsRead =
  | { status: "observed"; populated: boolean; frozen: boolean }
  | { status: "absent"; reason: string };

export type EventsWant = { populated?: boolean; frozen?: boolean };

export type EventsWait = { events: EventsRead; met: boolean };

export type MembersRead =
  | { status: "observed"; pids: number[] }
  | { status: "absent"; reason: string };

export type WriteResult = { status: "written" } | { status: "failed"; errno: string };

export type ControlFile = "cgroup.freeze" | "cgroup.kill" | "cgroup.procs";

/** The errno code of a failed fs call; anything else is a bug and is rethrown. */
export function errnoOf(e: unknown): string {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  if (typeof code !== "string") throw e;
  return code;
}

/**
 * The cgroup2 mount that holds this process's cgroup, from `<procSelf>/mountinfo` (proc(5):
 * fields, then ` - `, then type, source, super options) and the `0::` line of
 * `<procSelf>/cgroup`. Says why not when there is none, or this cgroup lies outside every
 * cgroup2 mount (a path starting `/..` lies outside this namespace's view).
 */
export async function findCgroup2(procSelf = "/proc/self"): Promise<HierarchyFound> {
  let mountinfo: string;
  let cgroup: string;
  try {
    mountinfo = await readFile(join(procSelf, "mountinfo"), "utf8");
    cgroup = await readFile(join(procSelf, "cgroup"), "utf8");
  } catch (e) {
    return { ok: false, reason: `${procSelf}: ${errnoOf(e)}` };
  }
  const line = cgroup.split("\n").find((l) => l.startsWith("0::"));
  if (line === undefined) return { ok: false, reason: `${procSelf}/cgroup has no 0:: line` };
  const cgroupPath = line.slice(3);
  if (!cgroupPath.startsWith("/") || cgroupPath.split("/").includes("..")) {
    return { ok: false, reason: `this cgroup (${cgroupPath}) is outside the namespace's view` };
  }
  const mounts = mountinfo.split("\n").flatMap((l) => {
    const m = parseMountinfoLine(l);
    return m?.fstype === "cgroup2" ? [m] : [];
  });
  if (mounts.length === 0) return { ok: false, reason: "no cgroup2 mount in mountinfo" };
  for (const m of mounts) {
    const root = m.root === "/" ? "" : m.root;
    if (cgroupPath !== root && !cgroupPath.startsWith(`${root}/`)) continue;
    const rest = cgroupPath.slice(root.length);
    const options = [...new Set([...m.mountOptions, ...m.superOptions])];
    return {
      ok: true,
      hierarchy: {
        mountPoint: m.mountPoint,
        mountRoot: m.root,
        cgroupPath,
        dir: rest === "" || rest === "/" ? m.mountPoint : join(m.mountPoint, rest),
        options,
        nsdelegate: options.includes("nsdelegate"),
      },
    };
  }
  return {
    ok: false,
    reason: `no cgroup2 mount shows this cgroup (${cgroupPath}); mounts at ${mounts.map((m) => `${m.mountPoint} (root ${m.root})`).join(", ")}`,
  };
}

type MountinfoLine = {
  root: string;
  mountPoint: string;
  mountOptions: string[];
  fstype: string;
  superOptions: string[];
};

function parseMountinfoLine(line: string): MountinfoLine | null {
  const dash = line.indexOf(" - ");
  if (dash === -1) return null;
  const head = line.slice(0, dash).split(" ");
  const tail = line.slice(dash + 3).split(" ");
  const [root, mountPoint, mountOptions] = [head[3], head[4], head[5]];
  const [fstype, , superOptions] = tail;
  if (root === undefined || mountPoint === undefined || fstype === undefined) return null;
  return {
    root: unescapeOctal(root),
    mountPoint: unescapeOctal(mountPoint),
    mountOptions: (mountOptions ?? "").split(","),
    fstype,
    superOptions: (superOptions ?? "").split(","),
  };
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
function unescapeOctal(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
}

/**
 * Whether cgroups can be made under `dir` and carry what the force stop needs: makes a child,
 * checks for `cgroup.events`, `cgroup.freeze` and `cgroup.kill` (Linux 5.14), removes it.
 */
export async function probeCgroupDir(
  dir: string,
): Promise<{ ok: true } | { ok: false; reason: string }> {
  const child = join(dir, `mosaic-probe-${process.pid}-${Math.random().toString(36).slice(2, 10)}`);
  try {
    await mkdir(child);
  } catch (e) {
    return { ok: false, reason: `mkdir ${child}: ${errnoOf(e)}` };
  }
  try {
    for (const file of ["cgroup.events", "cgroup.freeze", "cgroup.kill", "cgroup.procs"]) {
      try {
        await access(join(child, file));
      } catch (e) {
        return { ok: false, reason: `${join(child, file)}: ${errnoOf(e)}` };
      }
    }
    return { ok: true };
  } finally {
    // A fresh empty cgroup: rmdir fails only if something joined it, which nothing knows of.
    await rmdir(child);
  }
}

/** `cgroup.events` of `dir`: `populated` covers the whole subtree, `frozen` the freeze state. */
export async function readEvents(dir: string): Promise<EventsRead> {
  const file = join(dir, "cgroup.events");
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    return { status: "absent", reason: `${file}: ${errnoOf(e)}` };
  }
  const values = new Map<string, string>();
  for (const l of text.split("\n")) {
    const [key, value] = l.split(" ");
    if (key && value !== undefined) values.set(key, value);
  }
  const populated = values.get("populated");
  const frozen = values.get("frozen");
  if ((populated !== "0" && populated !== "1") || (frozen !== "0" && frozen !== "1")) {
    return {
      status: "absent",
      reason: `${file}: unparseable ${JSON.stringify(text.slice(0, 80))}`,
    };
  }
  return { status: "observed", populated: populated === "1", frozen: frozen === "1" };
}

function meets(e: EventsRead, want: EventsWant): boolean {
  if (e.status !== "observed") return false;
  return (
    (want.populated === undefined || e.populated === want.populated) &&
    (want.frozen === undefined || e.frozen === want.frozen)
  );
}

// A change to cgroup.events raises an inotify modify event (cgroup-v2.rst, "cgroup.events"),
// which fs.watch delivers; the slow re-read only guards against a watch that could not start.
const EVENTS_REREAD_MS = 100;

/**
 * Reads `cgroup.events` until it shows `want` or `timeoutMs` passes, and returns the last read.
 * An absent read ends the wait at once: a vanished cgroup will not come back.
 */
export async function waitForEvents(
  dir: string,
  want: EventsWant,
  timeoutMs: number,
): Promise<EventsWait> {
  const first = await readEvents(dir);
  if (first.status === "absent" || meets(first, want))
    return { events: first, met: meets(first, want) };
  return new Promise<EventsWait>((resolve) => {
    let done = false;
    let reading = false;
    let again = false;
    let last: EventsRead = first;
    const finish = (met: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(deadline);
      clearInterval(reread);
      watcher?.close();
      resolve({ events: last, met });
    };
    const check = async (): Promise<void> => {
      if (reading) {
        again = true;
        return;
      }
      reading = true;
      do {
        again = false;
        last = await readEvents(dir);
        if (last.status === "absent") return finish(false);
        if (meets(last, want)) return finish(true);
      } while (again && !done);
      reading = false;
    };
    const deadline = setTimeout(() => {
      void readEvents(dir).then((e) => {
        last = e;
        finish(meets(e, want));
      });
    }, timeoutMs);
    const reread = setInterval(() => void check(), EVENTS_REREAD_MS);
    let watcher: ReturnType<typeof watch> | null = null;
    try {
      watcher = watch(join(dir, "cgroup.events"), () => void check());
      // A watch error (the cgroup removed) is seen by the next read as absent.
      watcher.on("error", () => void check());
    } catch (e) {
      errnoOf(e);
      // The file vanished after the first read: the re-read finds it absent.
    }
    void check();
  });
}

/**
 * The pids in `dir` and every cgroup below it (`cgroup.procs` lists only a cgroup's own
 * members, and a member may make a child cgroup and move into it). Sorted, without repeats.
 * Absent when `dir` itself can't be read; a child cgroup that vanished mid-walk was empty
 * (rmdir refuses a populated cgroup) and is skipped.
 */
export async function listMembers(dir: string): Promise<MembersRead> {
  const pids = new Set<number>();
  const walk = async (d: string, top: boolean): Promise<string | null> => {
    let text: string;
    let entries: string[];
    try {
      text = await readFile(join(d, "cgroup.procs"), "utf8");
      entries = (await readdir(d, { withFileTypes: true }))
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch (e) {
      const code = errnoOf(e);
      if (!top && code === "ENOENT") return null;
      return `${join(d, "cgroup.procs")}: ${code}`;
    }
    for (const l of text.split("\n")) {
      if (l === "") continue;
      const pid = Number(l);
      if (!Number.isSafeInteger(pid) || pid < 1) return `${join(d, "cgroup.procs")}: unparseable`;
      pids.add(pid);
    }
    for (const name of entries) {
      const problem = await walk(join(d, name), false);
      if (problem) return problem;
    }
    return null;
  };
  const problem = await walk(dir, true);
  if (problem) return { status: "absent", reason: problem };
  return { status: "observed", pids: [...pids].sort((a, b) => a - b) };
}

/** Writes one control file of `dir`. */
export async function writeControl(
  dir: string,
  file: ControlFile,
  value: string,
): Promise<WriteResult> {
  try {
    await writeFile(join(dir, file), value);
    return { status: "written" };
  } catch (e) {
    return { status: "failed", errno: errnoOf(e) };
  }
}

export type RemoveResult = { removed: string[]; failed: { dir: string; errno: string }[] };

/**
 * Removes `dir` and the cgroups below it, deepest first. rmdir refuses a cgroup that still has
 * members or children (EBUSY), so a removal is itself a sign the subtree was empty. A `dir`
 * already gone is neither removed nor failed.
 */
export async function removeTree(dir: string): Promise<RemoveResult> {
  const result: RemoveResult = { removed: [], failed: [] };
  const remove = async (d: string): Promise<void> => {
    let names: string[];
    try {
      names = (await readdir(d, { withFileTypes: true }))
        .filter((e) => e.isDirectory())
        .map((e) => e.name);
    } catch (e) {
      const code = errnoOf(e);
      if (code !== "ENOENT") result.failed.push({ dir: d, errno: code });
      return;
    }
    for (const name of names) await remove(join(d, name));
    try {
      await rmdir(d);
      result.removed.push(d);
    } catch (e) {
      const code = errnoOf(e);
      if (code !== "ENOENT") result.failed.push({ dir: d, errno: code });
    }
  };
  await remove(dir);
  return result;
}

/** The `0::` path in `<procRoot>/<pid>/cgroup`, as this process's namespace shows it. */
export async function cgroupOf(pid: number | "self", procRoot = "/proc"): Promise<string | null> {
  let text: string;
  try {
    text = await readFile(join(procRoot, String(pid), "cgroup"), "utf8");
  } catch (e) {
    errnoOf(e);
    // Gone or unreadable: the caller records where it could not look.
    return null;
  }
  const line = text.split("\n").find((l) => l.startsWith("0::"));
  return line === undefined ? null : line.slice(3);
}

export type SurvivorsRead =
  | { status: "observed"; alive: { pid: number; cgroup: string | null }[] }
  | { status: "absent"; reason: string };

/**
 * Which of `pids` are still alive (in `<procRoot>/<pid>/stat`, and not a zombie), with the
 * cgroup each is in now. A pid reused since is reported alive: the safe error.
 */
export async function findSurvivors(
  pids: readonly number[],
  procRoot = "/proc",
): Promise<SurvivorsRead> {
  const alive: { pid: number; cgroup: string | null }[] = [];
  for (const pid of pids) {
    let stat: string;
    try {
      stat = await readFile(join(procRoot, String(pid), "stat"), "utf8");
    } catch (e) {
      const code = errnoOf(e);
      if (code === "ENOENT" || code === "ESRCH") continue;
      return { status: "absent", reason: `${join(procRoot, String(pid), "stat")}: ${code}` };
    }
    // proc(5): field 3, after the parenthesised name, is the state.
    const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
    if (state === "Z" || state === "X") continue;
    alive.push({ pid, cgroup: await cgroupOf(pid, procRoot) });
  }
  return { status: "observed", alive };
}
