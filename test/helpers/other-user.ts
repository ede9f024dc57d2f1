// Sends an HTTP request from a process of another user of this machine (uid 65534, `nobody`),
// for the board's peer check: under root every test process is root, so "another user" has to
// be a real other uid. setpriv(1) switches the child's uids and groups before node starts; the
// request itself is a small script written to a temporary folder the other user can read.
import { execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCaptured } from "./no-dac.ts";

export const OTHER_UID = 65534;

const SCRIPT = `
import { request } from "node:http";
const [port, spec] = [Number(process.argv[2]), JSON.parse(process.argv[3])];
const req = request({ host: "127.0.0.1", port, path: spec.path, method: spec.method,
  headers: spec.headers, agent: false, signal: AbortSignal.timeout(10000) }, (res) => {
  const chunks = [];
  res.on("data", (c) => chunks.push(c));
  res.on("end", () => process.stdout.write(JSON.stringify({ uid: process.getuid(),
    status: res.statusCode, body: Buffer.concat(chunks).toString("utf8") })));
});
req.on("error", (e) => { process.stderr.write(String(e)); process.exit(1); });
req.end(spec.body);
`;

let probed: string | false | undefined;

/** False when a child can run as another uid here; else why not (the caller skips or fails). */
export function whyNoOtherUser(): string | false {
  if (probed !== undefined) return probed;
  probed = false;
  if (process.getuid?.() !== 0) probed = "switching to another uid needs root";
  else {
    try {
      execFileSync(
        "setpriv",
        ["--reuid", String(OTHER_UID), "--regid", "65534", "--clear-groups", "true"],
        {
          stdio: "ignore",
        },
      );
    } catch (e) {
      probed = `setpriv cannot switch to uid ${OTHER_UID} here: ${String(e)}`;
    }
  }
  return probed;
}

export type Sent = {
  path: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
};
export type Received = { uid: number; status: number; body: string };

/** Sends `spec` to 127.0.0.1:`port` as uid 65534; what came back. Rejects after a deadline. */
export async function requestAsOtherUser(port: number, spec: Sent): Promise<Received> {
  const dir = mkdtempSync(join(tmpdir(), "other-user-"));
  try {
    chmodSync(dir, 0o755);
    const script = join(dir, "request.mjs");
    writeFileSync(script, SCRIPT, { mode: 0o644 });
    const args = [
      ...["--reuid", String(OTHER_UID), "--regid", "65534", "--clear-groups", "--"],
      ...[process.execPath, script, String(port), JSON.stringify({ method: "GET", ...spec })],
    ];
    const run = await runCaptured("setpriv", args, 20_000, "the other user's request");
    if (run.code !== 0) {
      throw new Error(`the other user's request failed (${run.code}): ${run.stderr}`);
    }
    const out = run.stdout;
    return JSON.parse(out) as Received;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
