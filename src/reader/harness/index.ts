// Which harness reads a root's files.
import type { FileRoot } from "../sources.ts";
import { CLAUDE_HARNESS } from "./claude-code/harness.ts";
import type { Harness } from "./harness.ts";
import { PI_HARNESS } from "./pi/harness.ts";

export type { Harness, HarnessName } from "./harness.ts";

export function harnessOf(root: FileRoot): Harness {
  return root.kind === "claude" ? CLAUDE_HARNESS : PI_HARNESS;
}
