// The reader bench's session under test: a cached Pi-written session copied into a fresh
// project of its own, with the roots and conversation id the reader finds it by.
import { closeSync, fstatSync, openSync, readSync, writeSync } from "node:fs";
import { join } from "node:path";
import { conversationId, type Root, rootsFromSpecs } from "../../src/index.ts";
import { racyWindowNs, trustsChangeTime } from "../../src/reader/change-time.ts";
import { type CachedSession, materialize } from "../fixtures.ts";

export type PiModule = typeof import("@earendil-works/pi-coding-agent");

export const SEAT = "main";
export const SESSION_NAME = "long.jsonl";

export type Session = {
  cached: CachedSession;
  projectRoot: string;
  file: string;
  conversation: string;
  roots: Root[];
};

export function leafIdOf(key: string | null): string {
  if (key === null || !key.startsWith("n.")) throw new Error(`no native default leaf: ${key}`);
  const id = key.slice(2);
  if (id.startsWith("h-")) throw new Error(`the default leaf id was hashed (${key})`);
  return id;
}

export function freshSession(cached: CachedSession, base: string): Session {
  const projectRoot = join(base, `bench-${cached.mib}mib`);
  const file = materialize(cached, projectRoot, SESSION_NAME);
  return {
    cached,
    projectRoot,
    file,
    conversation: conversationId(projectRoot, SEAT, SESSION_NAME),
    roots: rootsFromSpecs([{ kind: "repository", projectRoot, seat: SEAT }], []),
  };
}

/**
 * Makes the session "live" as far as the reader can tell: its last byte is written again with
 * the same value, so the content is unchanged but the change time is now, inside the racy
 * window (src/reader/change-time.ts) for the next 50 s, as a session Pi wrote seconds ago.
 * Returns whether the reader will treat it as racy here (a trusted filesystem and a window).
 */
export function freshen(file: string): boolean {
  const fd = openSync(file, "r+");
  try {
    const size = fstatSync(fd).size;
    const last = Buffer.alloc(1);
    readSync(fd, last, 0, 1, size - 1);
    writeSync(fd, last, 0, 1, size - 1);
    return trustsChangeTime(fd, fstatSync(fd, { bigint: true }).dev) && racyWindowNs() !== null;
  } finally {
    closeSync(fd);
  }
}
