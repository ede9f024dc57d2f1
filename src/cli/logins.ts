// `conversation logins [--revoke ID] [--json] [--state-dir DIR]`: the device login links a
// `serve --phone` minted (device-links.ts), from `<state-dir>/board/logins.json`; --revoke writes
// the revocation the board looks for at the link's next use and at its login's next act.
import { closeSync, constants, existsSync, openSync } from "node:fs";
import { join, resolve } from "node:path";
import type { DeviceRecord } from "../board/device-links.ts";
import { placesFor } from "../control/registry/places.ts";
import { ensurePrivateFolder } from "../fs/private-folder.ts";
import { readNoFollow } from "../fs/read-no-follow.ts";
import { makeVisible } from "../present/visible.ts";
import { parseFlags } from "./flags.ts";
import { commandLine } from "./invocation.ts";
import type { Io } from "./io.ts";

export type LoginsCommand = { name: "logins"; revoke?: string; json: boolean; stateDir?: string };

export const LOGINS_HELP = `Usage: conversation logins [--revoke ID] [--json] [--state-dir DIR]

Lists the device login links \`conversation serve --phone\` minted: id, the
person, when it expires, and whether it is unused, used, expired or revoked.
A link logs in once, within 10 minutes.

  --revoke ID        revoke a link: it no longer logs in, and the login it
                     made is signed out at its next act
  --json             one JSON document: { "links": [...] }
  --state-dir DIR    the state directory serve was started with
  -h, --help         this help
`;

export function parseLogins(
  args: string[],
):
  | { ok: true; command: LoginsCommand | { name: "help"; text: string } }
  | { ok: false; error: string; usage: string } {
  const { values, positionals } = parseFlags(args, {
    revoke: { type: "string" },
    json: { type: "boolean" },
    "state-dir": { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) return { ok: true, command: { name: "help", text: LOGINS_HELP } };
  if (positionals.length > 0) {
    return {
      ok: false,
      error: `unexpected argument ${JSON.stringify(positionals[0])}`,
      usage: LOGINS_HELP,
    };
  }
  if (values.revoke !== undefined && !/^dl-[0-9a-f]{12}$/.test(values.revoke)) {
    return {
      ok: false,
      error: `--revoke ${JSON.stringify(values.revoke)} is not a device link id (dl-…)`,
      usage: LOGINS_HELP,
    };
  }
  const command: LoginsCommand = { name: "logins", json: values.json ?? false };
  if (values.revoke !== undefined) command.revoke = values.revoke;
  if (values["state-dir"] !== undefined) command.stateDir = resolve(values["state-dir"]);
  return { ok: true, command };
}

export function runLogins(cmd: LoginsCommand, io: Io): number {
  const dir = placesFor(cmd.stateDir).board;
  // A revocation the board has not seen yet (no use since) is still a revocation.
  const links = readLinks(join(dir, "logins.json"))?.map((l) =>
    existsSync(join(dir, "revoked", l.id)) ? { ...l, state: "revoked" as const } : l,
  );
  if (links === undefined) {
    io.err(
      `conversation: no device links in ${makeVisible(dir)}: start \`${commandLine(withStateDir(cmd, ["serve", "--phone"]))}\` to mint one.\n`,
    );
    return 1;
  }
  if (cmd.revoke !== undefined) {
    if (!links.some((l) => l.id === cmd.revoke)) {
      io.err(
        `conversation: no device link ${makeVisible(cmd.revoke)}: \`${commandLine(withStateDir(cmd, ["logins"]))}\` lists them.\n`,
      );
      return 1;
    }
    const folder = ensurePrivateFolder(join(dir, "revoked"), {
      what: "the board's login folder",
      instead: "choose another with --state-dir",
    });
    if (!folder.ok) {
      io.err(`conversation: ${makeVisible(folder.problem.message)}\n`);
      return 1;
    }
    closeSync(
      openSync(
        join(dir, "revoked", cmd.revoke),
        constants.O_CREAT | constants.O_WRONLY | constants.O_NOFOLLOW,
        0o600,
      ),
    );
    io.out(
      `Revoked ${cmd.revoke}: it logs in no more, and the login it made is signed out at its next act.\n`,
    );
    return 0;
  }
  if (cmd.json) {
    io.out(`${JSON.stringify({ links })}\n`);
    return 0;
  }
  if (links.length === 0) io.out("No device link was minted.\n");
  for (const l of links) {
    io.out(`${l.id}  ${makeVisible(l.identity)}  ${l.state}  expires ${l.expiresAt}\n`);
  }
  return 0;
}

function readLinks(file: string): DeviceRecord[] | undefined {
  let text: string;
  try {
    text = readNoFollow(file);
  } catch {
    // No list yet (or not one we may read): there is nothing to show.
    return undefined;
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  const links = (v as { links?: unknown }).links;
  if (!Array.isArray(links)) return undefined;
  return links.filter(
    (l): l is DeviceRecord =>
      typeof l === "object" &&
      l !== null &&
      typeof l.id === "string" &&
      typeof l.identity === "string" &&
      typeof l.state === "string" &&
      typeof l.expiresAt === "string",
  );
}

/** `args` with this command's --state-dir, so the printed command reads the same folder. */
function withStateDir(cmd: LoginsCommand, args: string[]): string[] {
  return cmd.stateDir === undefined ? args : [...args, "--state-dir", cmd.stateDir];
}
