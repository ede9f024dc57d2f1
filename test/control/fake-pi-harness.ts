// Test helper: starts fake-pi.ts through an EngineLink with the sealed argv, in a temp project,
// and gives a test its hold points (FakePiScript) as promises.
import { existsSync, mkdirSync, mkdtempSync, rmSync, watch, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { TestContext } from "node:test";
import { EngineLink, type EngineSpec } from "../../src/control/engine/engine.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import type { FakePiScript, HoldPoint } from "./fake-pi.ts";
import { RecordLog } from "./link-watch.ts";

export const FAKE_PI = join(import.meta.dirname, "fake-pi.ts");
export const FAKE_SESSION_ID = "01a00000-0000-7000-8000-0000000000f1";

export type FakeProject = {
  root: string;
  projectRoot: string;
  sessionFile: string;
  holdDir: string;
};

export function makeFakeProject(): FakeProject {
  const root = mkdtempSync(join(tmpdir(), "fake-pi-"));
  const projectRoot = join(root, "proj");
  const sessionsDir = join(projectRoot, ".pi", "state", "main", "sessions");
  const holdDir = join(root, "holds");
  mkdirSync(sessionsDir, { recursive: true });
  mkdirSync(holdDir);
  return { root, projectRoot, sessionFile: join(sessionsDir, "s.jsonl"), holdDir };
}

export function fakePiSpec(
  p: FakeProject,
  options: { model?: string | null; scriptFile?: string; extraArgs?: string[] } = {},
): EngineSpec {
  const model = options.model === undefined ? "fake/echo" : options.model;
  return {
    command: process.execPath,
    args: [
      FAKE_PI,
      "--mode",
      "rpc",
      "--no-extensions",
      "--no-prompt-templates",
      "--no-themes",
      "--offline",
      ...(model === null ? [] : ["--model", model]),
      "--session",
      p.sessionFile,
      ...(options.extraArgs ?? []),
    ],
    env: {
      PATH: `${dirname(process.execPath)}:/usr/bin:/bin`,
      HOME: p.root,
      ...(options.scriptFile ? { FAKE_PI_SCRIPT: options.scriptFile } : {}),
    },
    cwd: p.projectRoot,
  };
}

export type FakePiOptions = {
  /** Session lines, or a function of the project root giving them; default a header only. Null: no file. */
  session?: object[] | ((projectRoot: string) => object[]) | null;
  model?: string | null;
  /** `holdDir` is filled in. */
  script?: FakePiScript;
};

export type FakePi = { link: EngineLink; log: RecordLog; project: FakeProject };

/** Starts the fake; cleanup closes it and removes the temp dir. */
export function startFakePi(t: Pick<TestContext, "after">, options: FakePiOptions = {}): FakePi {
  const project = makeFakeProject();
  let link: EngineLink | null = null;
  t.after(async () => {
    await link?.close({ eofGraceMs: 1000, termGraceMs: 1000 });
    rmSync(project.root, { recursive: true, force: true });
  });
  const given = options.session === undefined ? [fakeHeader(project.projectRoot)] : options.session;
  const session = typeof given === "function" ? given(project.projectRoot) : given;
  if (session !== null) {
    writeFileSync(project.sessionFile, session.map((l) => `${JSON.stringify(l)}\n`).join(""));
  }
  let scriptFile: string | undefined;
  if (options.script) {
    scriptFile = join(project.root, "script.json");
    writeFileSync(scriptFile, JSON.stringify({ holdDir: project.holdDir, ...options.script }));
  }
  link = EngineLink.start(
    fakePiSpec(project, {
      ...(options.model === undefined ? {} : { model: options.model }),
      ...(scriptFile ? { scriptFile } : {}),
    }),
  );
  return { link, log: new RecordLog(link), project };
}

export function fakeHeader(cwd: string): object {
  return {
    type: "session",
    version: 3,
    id: FAKE_SESSION_ID,
    timestamp: "2026-01-01T00:00:00.000Z",
    cwd,
  };
}

/**
 * The n-th time the fake reaches `point`: `reached` resolves when it waits there (deadline
 * `timeoutMs`), `release()` lets it go on, `cancel()` stops waiting (`reached` rejects): a hold
 * that may never come is cancelled when its test ends, or its watcher and timer keep the
 * file's process up until the deadline.
 */
export function holdPoint(
  p: FakeProject,
  point: HoldPoint,
  n = 1,
  timeoutMs = DEADLINE_MS,
): { reached: Promise<void>; release: () => void; cancel: () => void } {
  const base = join(p.holdDir, `${point}.${n}`);
  let cancel = () => {};
  const reached = new Promise<void>((resolve, reject) => {
    const watcher = watch(p.holdDir, () => check());
    const stop = (error?: Error) => {
      watcher.close();
      clearTimeout(timer);
      if (error) reject(error);
      else resolve();
    };
    const timer = setTimeout(
      () => stop(new Error(`fake-pi did not reach ${point} #${n} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    cancel = () => stop(new Error(`the wait for ${point} #${n} was cancelled`));
    function check(): void {
      if (existsSync(`${base}.reached`)) stop();
    }
    check();
  });
  return { reached, release: () => writeFileSync(`${base}.release`, ""), cancel };
}
