// `conversation control --new`: a new session written by Pi's own SessionManager, in the seat's
// sessions directory (created 0700 when missing), named as Pi names its sessions
// (`<timestamp>_<session id>.jsonl`). Pi writes every byte: an empty file is created under a
// name the reader does not list, SessionManager.open writes the header (cwd = the project) into
// it and appends the title, model and thinking entries that match the flags; then the file is
// linked to its final name (never replacing a file) and the temporary name removed.
import { randomBytes } from "node:crypto";
import { linkSync, mkdirSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export type NewSession = {
  projectRoot: string;
  sessionsDir: string;
  title?: string;
  /** Pi's `--model` (`provider/id`, or an id with `provider`). */
  model?: string;
  provider?: string;
  thinking?: string;
};

/** Writes the session and returns its path. Throws on a file-system error. */
export async function writeNewSession(options: NewSession): Promise<string> {
  const { SessionManager } = await import("@earendil-works/pi-coding-agent");
  mkdirSync(options.sessionsDir, { recursive: true, mode: 0o700 });
  // `.part` is not `*.jsonl`: the reader never lists a half-written session.
  const temp = join(options.sessionsDir, `.new-${randomBytes(8).toString("hex")}.part`);
  writeFileSync(temp, "", { flag: "wx", mode: 0o600 });
  try {
    // An empty file: Pi writes a fresh header into it (cwd = the override) and appends each
    // later entry at once (session-manager.js, _setSessionFile and _persist).
    const sm = SessionManager.open(temp, options.sessionsDir, options.projectRoot);
    if (options.title !== undefined) sm.appendSessionInfo(options.title);
    const model = modelOf(options);
    if (model !== null) sm.appendModelChange(model.provider, model.id);
    if (options.thinking !== undefined) sm.appendThinkingLevelChange(options.thinking);
    const header = sm.getHeader();
    if (header === null) throw new Error("Pi's SessionManager wrote no header");
    const stamp = header.timestamp.replace(/[:.]/g, "-");
    const target = join(options.sessionsDir, `${stamp}_${header.id}.jsonl`);
    linkSync(temp, target);
    return target;
  } finally {
    unlinkSync(temp);
  }
}

/** The model entry the flags name: `--provider P --model ID`, or `--model P/ID`; else none. */
export function modelOf(o: {
  model?: string;
  provider?: string;
}): { provider: string; id: string } | null {
  if (o.model === undefined) return null;
  if (o.provider !== undefined) return { provider: o.provider, id: o.model };
  const slash = o.model.indexOf("/");
  if (slash <= 0 || slash === o.model.length - 1) return null;
  return { provider: o.model.slice(0, slash), id: o.model.slice(slash + 1) };
}
