// Claude Code's OAuth credentials (`.credentials.json`, what `claude` writes at /login) for a
// sealed engine: Claude Code reads them only from its config folder, which for a controlled
// engine is the seat's (claude-files.ts). So the file the agent directory holds (a private copy
// `--agent-from` made, docs/claude-control.md) is copied there, 0600, right before each launch,
// and removed when the engine exits; a controller killed outright leaves it to the watcher that
// removes its agent copy (registry/leftovers.ts), and the next launch replaces whatever is left.
// Nothing is written back to where it came from; the contents are never read here, so never shown.
import { chmodSync, constants, copyFileSync, lstatSync, rmSync } from "node:fs";
import { join } from "node:path";
import { ControlRefusal } from "../../refusal.ts";
import { claudeConfigDir } from "./claude-files.ts";

/** The file's name, in an agent directory and in Claude Code's config folder alike. */
export const CLAUDE_CREDENTIALS = ".credentials.json";

/** Where a seat's engine reads its OAuth credentials. */
export function seatCredentials(projectRoot: string, seat: string): string {
  return join(claudeConfigDir(projectRoot, seat), CLAUDE_CREDENTIALS);
}

/**
 * Puts `agentDir`'s credentials (if it has any) in the seat's config folder for the next engine,
 * replacing any left there; removes a leftover when it has none. Refuses `configuration` for a
 * credentials file that is not a regular file.
 */
export function placeCredentials(
  agentDir: string | undefined,
  projectRoot: string,
  seat: string,
): void {
  const target = seatCredentials(projectRoot, seat);
  rmSync(target, { force: true });
  if (agentDir === undefined) return;
  const source = join(agentDir, CLAUDE_CREDENTIALS);
  let st: ReturnType<typeof lstatSync>;
  try {
    st = lstatSync(source);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return;
    throw e;
  }
  if (!st.isFile()) {
    throw new ControlRefusal(
      "configuration",
      `${source} is not a regular file; Claude Code's credentials are one`,
    );
  }
  // The config folder is private (the seat's); EXCL: nothing there since the removal above.
  copyFileSync(source, target, constants.COPYFILE_EXCL);
  chmodSync(target, 0o600);
}

/** The engine exited: its credentials go with it. */
export function removeCredentials(projectRoot: string, seat: string): void {
  rmSync(seatCredentials(projectRoot, seat), { force: true });
}
