// Runs a script in a child process that permission bits bind. Under root (every machine here,
// CI included), mode 000 does not stop an open; the child drops CAP_DAC_OVERRIDE and
// CAP_DAC_READ_SEARCH from its bounding set with setpriv(1), so EACCES is real for it.
import { execFileSync, spawn } from "node:child_process";
import { DEADLINE_MS } from "./deadline.ts";

export type ChildResult = { code: number | null; stdout: string; stderr: string };

let probed: string | false | undefined;

/** False when the child can drop privileges here; else why not (the caller fails or skips). */
export function whyNoDacDrop(): string | false {
  if (probed !== undefined) return probed;
  probed = false;
  if (process.getuid?.() !== 0) return probed;
  try {
    execFileSync("setpriv", ["--bounding-set", "-dac_override,-dac_read_search", "--", "true"], {
      stdio: "ignore",
    });
  } catch (e) {
    probed = `setpriv cannot drop DAC capabilities here: ${String(e)}`;
  }
  return probed;
}

/** Runs `process.execPath script ...args` without DAC override, with a deadline. */
export function runWithoutDacOverride(
  script: string,
  args: string[],
  timeoutMs = DEADLINE_MS,
): Promise<ChildResult> {
  const asRoot = process.getuid?.() === 0;
  const cmd = asRoot ? "setpriv" : process.execPath;
  const argv = asRoot
    ? ["--bounding-set", "-dac_override,-dac_read_search", "--", process.execPath, script, ...args]
    : [script, ...args];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: ["ignore", "pipe", "pipe"] });
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
      reject(new Error(`${script} did not finish within ${timeoutMs} ms`));
    }, timeoutMs);
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
