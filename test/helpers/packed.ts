// The package as a user gets it: `npm pack` of this checkout, installed offline into an empty
// project and into a global prefix, and commands run there as a person types them (a shell
// line, a clean npm-free environment, Node 24 first on PATH). Every child has a deadline and
// is killed when its test ends; every directory is the caller's temp dir.
import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { basename, delimiter, dirname, join, resolve, sep } from "node:path";
import type { TestContext } from "node:test";
import { SLOW_TEST_MS } from "./deadline.ts";

export const ROOT = resolve(import.meta.dirname, "..", "..");
export const PACKAGE = "@mosaic/conversation";

/** The environment a person's shell has: no npm_* variables, Node 24 first on PATH. */
export function userEnv(extraPath: string[] = []): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.toLowerCase().startsWith("npm_")) env[k] = v;
  }
  env.PATH = [...extraPath, dirname(process.execPath), process.env.PATH ?? ""].join(delimiter);
  // Offline and quiet: the cache is warm after `npm ci`; no registry call is needed or wanted.
  env.npm_config_offline = "true";
  env.npm_config_audit = "false";
  env.npm_config_fund = "false";
  env.npm_config_update_notifier = "false";
  return env;
}

/**
 * A contributor's shell in the checkout: no npm_* variables, and PATH without what npm (or
 * this test's Node 24 from node_modules) added, so `npm run` must find Node 24 itself.
 */
export function checkoutEnv(): NodeJS.ProcessEnv {
  const env = userEnv();
  env.PATH = (process.env.PATH ?? "")
    .split(delimiter)
    .filter((d) => !d.includes(`${sep}node_modules${sep}`) && !d.endsWith(`${sep}node_modules`))
    .join(delimiter);
  return env;
}

/**
 * The deadline of one npm step (pack with its build, an offline install): 20-60 s alone, and
 * past 180 s when two full suites ran at once (load 37). Like DEADLINE_MS, it only turns a hang
 * into a failure.
 */
const NPM_MS = 2 * SLOW_TEST_MS;

/** Runs a program to completion, or rejects with its output; `ms` is the deadline. */
export function run(
  file: string,
  args: string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; ms?: number },
): Promise<string> {
  return new Promise((res, reject) => {
    execFile(
      file,
      args,
      {
        cwd: options.cwd,
        env: options.env ?? userEnv(),
        encoding: "utf8",
        timeout: options.ms ?? 120_000,
        killSignal: "SIGKILL",
        maxBuffer: 16 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        if (error)
          reject(new Error(`${file} ${args.join(" ")}: ${error.message}\n${stdout}\n${stderr}`));
        else res(stdout);
      },
    );
  });
}

/** `npm pack` of the checkout into `dest` (prepack builds first); the tarball's path. */
export async function pack(dest: string): Promise<string> {
  const out = await run("npm", ["pack", "--pack-destination", dest, "--silent"], {
    cwd: ROOT,
    ms: NPM_MS,
  });
  const name = out.trim().split("\n").pop() ?? "";
  return join(dest, name);
}

type Lock = { packages: Record<string, Record<string, unknown>> };

/** This package's lock entries for what it installs (not its dev tree), keyed as in the lock. */
function runtimeEntries(): Record<string, Record<string, unknown>> {
  const lock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as Lock;
  const out: Record<string, Record<string, unknown>> = {};
  for (const [key, entry] of Object.entries(lock.packages)) {
    if (key !== "" && entry.dev !== true) out[key] = entry;
  }
  return out;
}

/**
 * An empty project at `dir` that runs `npm install <tarball>`. Offline npm can fetch a tarball
 * from the cache by its integrity, but can't resolve a version range without the registry's
 * metadata, so the project's lock is seeded with this package's own lock entries for Pi's tree
 * (the tree npm resolved for it); npm then installs exactly that.
 */
export async function installInProject(dir: string, tarball: string): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const name = basename(tarball);
  copyFileSync(tarball, join(dir, name));
  const spec = `file:${name}`;
  const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as Record<
    string,
    unknown
  >;
  writeFileSync(
    join(dir, "package.json"),
    JSON.stringify({ name: "app", private: true, type: "module" }),
  );
  const packages: Record<string, unknown> = {
    "": { name: "app", dependencies: { [PACKAGE]: spec } },
    [`node_modules/${PACKAGE}`]: {
      version: manifest.version,
      resolved: spec,
      dependencies: manifest.dependencies,
      bin: manifest.bin,
      engines: manifest.engines,
    },
    ...runtimeEntries(),
  };
  writeFileSync(
    join(dir, "package-lock.json"),
    JSON.stringify({ name: "app", lockfileVersion: 3, requires: true, packages }),
  );
  // The README's line (Install), as typed.
  await run("sh", ["-c", `npm install ./${name}`], { cwd: dir, ms: NPM_MS });
}

/**
 * The package installed under a global prefix as `npm install -g --prefix <prefix>` lays it
 * out: `<prefix>/lib/node_modules/@mosaic/conversation` with its dependencies in its own
 * node_modules, and `<prefix>/bin/conversation` linked to its bin. npm -g ignores lock files
 * and would need the registry's metadata, so the tree is installed offline with `npm ci` from
 * this package's lock, which is what npm -g resolves to.
 */
export async function installGlobally(prefix: string, tarball: string): Promise<string> {
  const pkg = join(prefix, "lib", "node_modules", ...PACKAGE.split("/"));
  mkdirSync(pkg, { recursive: true });
  await run("tar", ["xzf", tarball, "-C", pkg, "--strip-components=1"], { cwd: prefix });
  copyFileSync(join(ROOT, "package-lock.json"), join(pkg, "package-lock.json"));
  await run("npm", ["ci", "--omit=dev", "--ignore-scripts"], { cwd: pkg, ms: NPM_MS });
  // Installed, the package has no lock file: the pin takes the installed layout.
  rmSync(join(pkg, "package-lock.json"));
  const manifest = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")) as {
    bin: Record<string, string>;
  };
  mkdirSync(join(prefix, "bin"), { recursive: true });
  for (const [name, target] of Object.entries(manifest.bin)) {
    symlinkSync(join("..", "lib", "node_modules", PACKAGE, target), join(prefix, "bin", name));
  }
  return pkg;
}

/** A Node older than 24 on this machine (the system's), or null. */
export function olderNode(): string | null {
  for (const dir of (process.env.PATH ?? "")
    .split(delimiter)
    .concat(["/usr/local/bin", "/usr/bin"])) {
    const candidate = join(dir, "node");
    try {
      const v = execFileSync(candidate, ["-p", "process.versions.node"], { encoding: "utf8" });
      if (Number(v.split(".")[0]) < 24) return candidate;
    } catch {
      // No node here, or not runnable: look in the next directory.
    }
  }
  return null;
}

export type Proc = {
  proc: ChildProcess;
  stdout(): string;
  stderr(): string;
  waitFor(what: string, test: (p: Proc) => boolean, ms?: number): Promise<void>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
};

/** A shell line run as typed, in `cwd`; killed (its process group) when the test ends. */
export function startLine(
  t: TestContext,
  line: string,
  options: { cwd: string; env?: NodeJS.ProcessEnv; stdin?: boolean },
): Proc {
  const proc = spawn("sh", ["-c", line], {
    cwd: options.cwd,
    env: options.env ?? userEnv(),
    stdio: [options.stdin ? "pipe" : "ignore", "pipe", "pipe"],
    detached: true,
  });
  let out = "";
  let err = "";
  const listeners = new Set<() => void>();
  const changed = () => {
    for (const l of [...listeners]) l();
  };
  proc.stdout?.setEncoding("utf8").on("data", (d: string) => {
    out += d;
    changed();
  });
  proc.stderr?.setEncoding("utf8").on("data", (d: string) => {
    err += d;
    changed();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => {
    proc.on("close", (code, signal) => {
      res({ code, signal });
      changed();
    });
  });
  t.after(() => {
    if (proc.exitCode === null && proc.signalCode === null && proc.pid !== undefined) {
      try {
        process.kill(-proc.pid, "SIGKILL");
      } catch {
        // Already gone between the check and the kill.
      }
    }
  });
  const p: Proc = {
    proc,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor: (what, test, ms = 30_000) =>
      new Promise<void>((res, reject) => {
        const check = () => {
          if (!test(p)) return;
          clearTimeout(timer);
          listeners.delete(check);
          res();
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`timed out waiting for ${what}\nstdout: ${out}\nstderr: ${err}`));
        }, ms);
        listeners.add(check);
        check();
      }),
  };
  return p;
}

/** Runs a shell line to its end within `ms`; its status and output. */
export async function runLine(
  t: TestContext,
  line: string,
  options: { cwd: string; env?: NodeJS.ProcessEnv; ms?: number },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = startLine(t, line, options);
  await p.waitFor(
    `${line} to exit`,
    (x) => x.proc.exitCode !== null || x.proc.signalCode !== null,
    options.ms ?? 60_000,
  );
  const { code } = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

/**
 * Ctrl-C: SIGINT to the line's process group, as a terminal sends it. Resolves to how the line
 * ended: our command exits 0 on SIGINT, and npx, once its child has exited, ends itself with
 * the signal it got (npm's own behaviour), so under npx "signal SIGINT" is the clean end.
 */
export async function interrupt(
  p: Proc,
  ms = 20_000,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (p.proc.pid !== undefined) process.kill(-p.proc.pid, "SIGINT");
  await p.waitFor(
    "the exit after SIGINT",
    (x) => x.proc.exitCode !== null || x.proc.signalCode !== null,
    ms,
  );
  return p.exited;
}

/** The end interrupt() resolves to when the line ran under npx: exit 0, or npm's own SIGINT. */
export function isCleanInterrupt(end: {
  code: number | null;
  signal: NodeJS.Signals | null;
}): boolean {
  return end.code === 0 || (end.code === null && end.signal === "SIGINT");
}
