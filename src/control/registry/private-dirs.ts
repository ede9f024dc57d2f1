// The private-folder rule (src/fs/private-folder.ts) as the control layer applies it: every
// folder it makes or trusts (the state dir, claims, the registry, sockets, agent copies, the
// engine's home) is checked up to `/`, and a folder that fails refuses `configuration` with the
// rule's own message, which says what to run or choose instead.
import {
  checkPrivateFolder,
  ensurePrivateFolder,
  type PlaceWords,
  type PrivateCheck,
} from "../../fs/private-folder.ts";
import { ControlRefusal } from "../refusal.ts";

/** What a person can do about a control folder that is not private. */
export const CHOOSE_STATE_DIR = "choose another with --state-dir";

/** The words for one of the control layer's places: `what` names it in the message. */
export function controlPlace(what: string, instead: string = CHOOSE_STATE_DIR): PlaceWords {
  return { what, instead };
}

/**
 * Creates `dir` (and missing parents) 0700 when absent, then refuses `configuration` unless it
 * is a private folder of this user with no folder above it that others could change.
 */
export function ensurePrivateDir(
  dir: string,
  words: PlaceWords = controlPlace("the folder"),
): void {
  refuseUnless(ensurePrivateFolder(dir, words));
}

/**
 * checkPrivateDir's check without creating. A missing folder throws its ENOENT as fs would,
 * so a caller that reads ("no registry yet") can tell absence from a refusal.
 */
export function checkPrivateDir(dir: string, words: PlaceWords = controlPlace("the folder")): void {
  const check = checkPrivateFolder(dir, words);
  if (!check.ok && check.problem.code === "missing") {
    throw Object.assign(new Error(check.problem.message), { code: "ENOENT", path: dir });
  }
  refuseUnless(check);
}

/** The rule's refusal as the control layer's. */
export function refuseUnless(check: PrivateCheck): void {
  if (!check.ok) throw new ControlRefusal("configuration", check.problem.message);
}
