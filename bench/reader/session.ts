// The reader bench's session under test: a cached Pi-written session copied into a fresh
// project of its own, with the roots and conversation id the reader finds it by.
import { join } from "node:path";
import { conversationId, type Root, rootsFromSpecs } from "../../src/index.ts";
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
