// Sends an HTTP request from a process of another user of this machine (uid 65534, `nobody`),
// for the board's peer check: under root every test process is root, so "another user" has to
// be a real other uid. setpriv(1) switches the child's uids and groups before node starts; the
// request itself is a small script written to a temporary folder the other user can read.
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

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
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn("setpriv", args, { stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => {
        stdout += d;
      });
      child.stderr.setEncoding("utf8").on("data", (d: string) => {
        stderr += d;
      });
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        reject(new Error("the other user's request did not finish within 20 s"));
      }, 20_000);
      child.on("error", (e) => {
        clearTimeout(timer);
        reject(e);
      });
      child.on("close", (code) => {
        clearTimeout(timer);
        if (code === 0) resolve(stdout);
        else reject(new Error(`the other user's request failed (${code}): ${stderr}`));
      });
    });
    return JSON.parse(out) as Received;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
