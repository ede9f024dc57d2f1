// The launch record (docs/claim.md, Recovery after a crash): what a controller writes, before it
// takes the claim, about how it will run its engine: the launcher kind, the cgroup scope it will
// use (CgroupLauncher's scope name is fixed by the execution id), and the boot. A controller
// that is SIGKILLed leaves it behind; the next one reads it to prove the dead execution's stop
// from what the launcher left (cohort-proof.ts). One file per execution,
// `<claim root>/launch/<execution>.json`, created exclusively and never rewritten.
import { constants } from "node:fs";
import { open, unlink } from "node:fs/promises";
import { isAbsolute, join, resolve } from "node:path";
import { ID_PATTERN } from "../../protocol/chat-01.ts";
import type { LauncherKind } from "../cohort/launcher.ts";
import { ControlRefusal } from "../refusal.ts";
import { controlPlace, ensurePrivateDir } from "../registry/private-dirs.ts";
import { errnoOf, parseKeys, type SeatKey } from "./claim-record.ts";

export type LaunchRecord = {
  version: 2;
  kind: "launch-record";
  execution: string;
  incarnation: string;
  seatKey: SeatKey;
  sessionKey: string;
  host: string;
  bootId: string;
  launcher: LauncherKind;
  /** The cgroup scope directory the engine runs under; null for launchers without one. */
  scope: string | null;
  at: string;
};

const LAUNCHERS: readonly LauncherKind[] = ["pgroup", "fake", "cgroup", "scope"];
const KEYS = "version kind execution incarnation seatKey sessionKey host bootId launcher scope at";
const MAX_BYTES = 16 * 1024;

export function launchRecordPath(claimRoot: string, execution: string): string {
  if (!ID_PATTERN.test(execution)) throw new TypeError(`execution ${execution} is not an id`);
  return join(claimRoot, "launch", `${execution}.json`);
}

/** Writes the record exclusively (0600) and syncs it and its directory before returning. */
export async function writeLaunchRecord(claimRoot: string, record: LaunchRecord): Promise<void> {
  const problem = parseLaunchRecord(record);
  if (typeof problem === "string") throw new TypeError(`launch record: ${problem}`);
  const dir = join(claimRoot, "launch");
  ensurePrivateDir(dir, controlPlace("the launch records folder"));
  const fh = await open(launchRecordPath(claimRoot, record.execution), "wx", 0o600);
  try {
    await fh.writeFile(`${JSON.stringify(record, null, 2)}\n`);
    await fh.sync();
  } finally {
    await fh.close();
  }
  const dh = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}

/**
 * The record of `execution`, or null when there is none. One that is unreadable or does not
 * parse refuses `unsafe-replacement`: nothing may be proven from it.
 */
export async function readLaunchRecord(
  claimRoot: string,
  execution: string,
): Promise<LaunchRecord | null> {
  const path = launchRecordPath(claimRoot, execution);
  let text: string;
  try {
    const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      const st = await fh.stat();
      if (!st.isFile() || st.size > MAX_BYTES) {
        throw new ControlRefusal("unsafe-replacement", `${path} is not a launch record.`);
      }
      text = await fh.readFile("utf8");
    } finally {
      await fh.close();
    }
  } catch (e) {
    if (e instanceof ControlRefusal) throw e;
    if (errnoOf(e) === "ENOENT") return null;
    throw new ControlRefusal("unsafe-replacement", `${path} is unreadable: ${errnoOf(e)}.`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ControlRefusal("unsafe-replacement", `${path} is not JSON.`);
  }
  const record = parseLaunchRecord(value);
  if (typeof record === "string") {
    throw new ControlRefusal("unsafe-replacement", `${path} is not a launch record: ${record}.`);
  }
  if (record.execution !== execution) {
    throw new ControlRefusal("unsafe-replacement", `${path} names execution ${record.execution}.`);
  }
  return record;
}

/** Removes a record nobody needs any more (an acquire that was refused); absent is fine. */
export async function removeLaunchRecord(claimRoot: string, execution: string): Promise<void> {
  try {
    await unlink(launchRecordPath(claimRoot, execution));
  } catch (e) {
    if (errnoOf(e) !== "ENOENT") throw e;
  }
}

/** Checks an untrusted value; a string says what is wrong. */
export function parseLaunchRecord(v: unknown): LaunchRecord | string {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return "not an object";
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o).sort().join(" ");
  if (keys !== KEYS.split(" ").sort().join(" ")) return `fields ${keys}`;
  if (o.version !== 2 || o.kind !== "launch-record") return "not a version 2 launch record";
  const { execution, incarnation, seatKey, host, bootId, launcher, scope, at } = o;
  if (typeof execution !== "string" || !ID_PATTERN.test(execution)) return "bad execution";
  if (typeof incarnation !== "string" || !ID_PATTERN.test(incarnation)) return "bad incarnation";
  if (typeof seatKey !== "object" || seatKey === null) return "bad seatKey";
  const seat = parseKeys(seatKey as Record<string, unknown>, o.sessionKey);
  if (typeof seat === "string") return seat;
  if (typeof host !== "string" || host === "" || host.length > 255) return "bad host";
  if (typeof bootId !== "string" || !/^[0-9a-f-]{1,64}$/.test(bootId)) return "bad bootId";
  if (!LAUNCHERS.includes(launcher as LauncherKind)) return "bad launcher";
  if (
    scope !== null &&
    (typeof scope !== "string" || !isAbsolute(scope) || resolve(scope) !== scope)
  )
    return "bad scope";
  if (typeof at !== "string" || Number.isNaN(Date.parse(at))) return "bad at";
  return {
    version: 2,
    kind: "launch-record",
    execution,
    incarnation,
    ...seat,
    host,
    bootId,
    launcher: launcher as LauncherKind,
    scope: scope as string | null,
    at,
  };
}
