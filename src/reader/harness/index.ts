// Which harness reads a root's files.
import type { FileRoot } from "../sources.ts";
import type { Harness } from "./harness.ts";
import { PI_HARNESS } from "./pi/harness.ts";

export type { Harness, HarnessName } from "./harness.ts";

export function harnessOf(_root: FileRoot): Harness {
  return PI_HARNESS;
}
