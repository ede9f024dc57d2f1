// The host's tools a launcher probes for: unshare(1) able to make a cgroup namespace, and a
// systemd user manager that answers. Each probe says why not; none of them throws.
import { execFile } from "node:child_process";
import { access, constants } from "node:fs/promises";
import { errnoOf } from "./cgroup.ts";

/** The first unshare(1) that can make a cgroup namespace, or why there is none. */
export async function findUnshare(): Promise<
  { ok: true; path: string } | { ok: false; reason: string }
> {
  for (const path of ["/usr/bin/unshare", "/bin/unshare", "/usr/sbin/unshare", "/sbin/unshare"]) {
    try {
      await access(path, constants.X_OK);
    } catch (e) {
      errnoOf(e);
      continue;
    }
    const ran = await run(path, ["--cgroup", "/bin/true"], 5000);
    return ran.ok ? { ok: true, path } : { ok: false, reason: `${path} --cgroup: ${ran.detail}` };
  }
  return { ok: false, reason: "unshare(1) not found" };
}

/** Runs `file` to its end within `timeoutMs`: ok on exit 0, with its output (500 chars at most). */
export function run(
  file: string,
  args: string[],
  timeoutMs: number,
  env: NodeJS.ProcessEnv = { PATH: "/usr/bin:/bin" },
): Promise<{ ok: boolean; detail: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: timeoutMs, env }, (err, stdout, stderr) => {
      const out = `${stdout}${stderr}`.trim().slice(0, 500);
      if (!err) resolve({ ok: true, detail: out });
      else
        resolve({
          ok: false,
          detail: `${err.code ?? err.signal ?? err.message}${out ? `: ${out}` : ""}`,
        });
    });
  });
}

export type UserManagerProbe = { answers: boolean; detail: string };

/** Whether a systemd user manager answers `systemctl --user`, within `timeoutMs`. */
export async function probeUserManager(
  options: { systemctl?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<UserManagerProbe> {
  const r = await run(
    options.systemctl ?? "systemctl",
    ["--user", "show", "--property=Version", "--value"],
    options.timeoutMs ?? 3000,
    options.env ?? process.env,
  );
  return { answers: r.ok, detail: r.ok ? `version ${r.detail}` : r.detail };
}
