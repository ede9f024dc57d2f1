// Runs the real pinned Pi sealed, through EngineLink, against a loopback fake model (research
// §3.1, §4). The environment is PATH and a scratch HOME only; `<home>/.pi/agent/models.json`
// declares the `loopback` provider. Everything lives in one temp dir removed after the test.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import type { TestContext } from "node:test";
import { EngineLink, type EngineSpec } from "../../src/control/engine/engine.ts";
import {
  PI_PINS,
  PI_VERSION,
  PI_VERSIONS,
  type PiVersion,
  piCliPath,
} from "../../src/control/engine/pi/pi-pin.ts";
import { RecordLog } from "../control/link-watch.ts";
import { type FakeModel, type ModelReply, startFakeModel } from "./fake-model.ts";

export const REPO_ROOT = resolve(import.meta.dirname, "../..");
export const PI_CLI = join(
  REPO_ROOT,
  "node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js",
);
/**
 * The pinned Pi versions the real-Pi suites run against (issue 16): each suite loops over
 * them. PI_TEST_VERSIONS (comma-separated) narrows the list, e.g. to one version while
 * debugging; the default is every pinned version.
 */
export const REAL_PI_VERSIONS: readonly PiVersion[] = (() => {
  const only = process.env.PI_TEST_VERSIONS?.split(",").filter((v) => v.length > 0);
  return only === undefined || only.length === 0
    ? PI_VERSIONS
    : PI_VERSIONS.filter((v) => only.includes(v));
})();

/** The CLI of a pinned version in this checkout. */
export function piCli(version: PiVersion = PI_VERSION): string {
  return piCliPath(REPO_ROOT, version);
}

export const MODEL = "loopback/fake-1";
export const SESSION_ID = "01a00000-0000-7000-8000-0000000000c3";

export type Scratch = {
  root: string;
  home: string;
  projectRoot: string;
  sessionFile: string;
};

/** `<tmp>/home` and `<tmp>/proj/.pi/state/main/sessions/s.jsonl` (not written). */
export function makeScratch(): Scratch {
  const root = mkdtempSync(join(tmpdir(), "real-pi-"));
  const home = join(root, "home");
  const projectRoot = join(root, "proj");
  const sessionsDir = join(projectRoot, ".pi", "state", "main", "sessions");
  mkdirSync(home);
  mkdirSync(sessionsDir, { recursive: true });
  return { root, home, projectRoot, sessionFile: join(sessionsDir, "s.jsonl") };
}

/** models.json (research §4) and settings.json with a short retry backoff, in `<home>/.pi/agent`. */
export function writeAgentDir(home: string, baseUrl: string): void {
  writeAgentFiles(join(home, ".pi", "agent"), baseUrl);
}

/** The same files in any agent directory (the controller's `agentDir`, PI_CODING_AGENT_DIR). */
export function writeAgentFiles(agentDir: string, baseUrl: string): void {
  mkdirSync(agentDir, { recursive: true });
  const models = {
    providers: {
      loopback: {
        baseUrl,
        api: "openai-completions",
        apiKey: "dummy",
        compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
        models: [
          {
            id: "fake-1",
            name: "Fake 1",
            reasoning: false,
            input: ["text"],
            contextWindow: 128000,
            maxTokens: 4096,
          },
        ],
      },
    },
  };
  writeFileSync(join(agentDir, "models.json"), JSON.stringify(models, null, 2));
  writeFileSync(join(agentDir, "settings.json"), JSON.stringify({ retry: { baseDelayMs: 50 } }));
}

/** The sealed argv after the CLI path (seed: Choices, Seal; `--offline` per issue 5). */
export function sealedArgs(
  sessionFile: string,
  options: { model?: string | null; piVersion?: PiVersion } = {},
): string[] {
  const model = options.model === undefined ? MODEL : options.model;
  return [
    "--mode",
    "rpc",
    "--no-extensions",
    "--no-prompt-templates",
    "--no-themes",
    "--offline",
    ...PI_PINS[options.piVersion ?? PI_VERSION].sealFlags,
    ...(model === null ? [] : ["--model", model]),
    "--session",
    sessionFile,
  ];
}

export function realPiSpec(
  scratch: Scratch,
  options: { model?: string | null; piVersion?: PiVersion } = {},
): EngineSpec {
  return {
    command: process.execPath,
    args: [piCli(options.piVersion), ...sealedArgs(scratch.sessionFile, options)],
    env: { PATH: `${dirname(process.execPath)}:/usr/bin:/bin`, HOME: scratch.home },
    cwd: scratch.projectRoot,
  };
}

// Fixture entries in Pi's own shapes (session-manager.js:781-816), with fixed ids.
export function headerLine(cwd: string): object {
  return {
    type: "session",
    version: 3,
    id: SESSION_ID,
    timestamp: "2026-01-01T00:00:00.000Z",
    cwd,
  };
}

export function userEntry(id: string, parentId: string | null, text: string, n: number): object {
  return {
    type: "message",
    id,
    parentId,
    timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString(),
    message: {
      role: "user",
      content: [{ type: "text", text }],
      timestamp: Date.UTC(2026, 0, 1, 0, 0, n),
    },
  };
}

export function assistantEntry(
  id: string,
  parentId: string | null,
  text: string,
  n: number,
): object {
  return {
    type: "message",
    id,
    parentId,
    timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString(),
    message: {
      role: "assistant",
      content: [{ type: "text", text }],
      api: "openai-completions",
      provider: "loopback",
      model: "fake-1",
      usage: {
        input: 10,
        output: 2,
        cacheRead: 0,
        cacheWrite: 0,
        totalTokens: 12,
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
      },
      stopReason: "stop",
      timestamp: Date.UTC(2026, 0, 1, 0, 0, n),
    },
  };
}

export function thinkingEntry(id: string, parentId: string | null, n: number): object {
  return {
    type: "thinking_level_change",
    id,
    parentId,
    timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString(),
    thinkingLevel: "off",
  };
}

/** A session Pi appends nothing to at start: messages and a thinking entry on the branch. */
export function settledSession(cwd: string): object[] {
  return [
    headerLine(cwd),
    userEntry("aaaa0001", null, "hi", 1),
    assistantEntry("aaaa0002", "aaaa0001", "hello", 2),
    thinkingEntry("aaaa0003", "aaaa0002", 3),
  ];
}

export function writeLines(file: string, lines: object[]): void {
  writeFileSync(file, lines.map((l) => `${JSON.stringify(l)}\n`).join(""));
}

/** The session file's lines, parsed. */
export function readLines(file: string): Record<string, unknown>[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

export type RealPi = {
  link: EngineLink;
  log: RecordLog;
  model: FakeModel;
  scratch: Scratch;
};

export type RealPiOptions = {
  /**
   * Session lines to write first, or a function of the project root giving them; default
   * `settledSession`. Null: leave the path absent.
   */
  session?: object[] | ((projectRoot: string) => object[]) | null;
  /** `--model`; null for none. Default `loopback/fake-1`. */
  model?: string | null;
  /** Write models.json and settings.json. Default true. */
  agentDir?: boolean;
  replies?: ModelReply[];
  /** Which pinned Pi; default 0.85.1. */
  piVersion?: PiVersion;
};

/**
 * Starts the model server and Pi, records every link record from spawn, and registers one
 * cleanup: Pi closed (EOF, then SIGTERM, then SIGKILL), the server closed, the temp dir removed.
 */
export async function startRealPi(
  t: Pick<TestContext, "after">,
  options: RealPiOptions = {},
): Promise<RealPi> {
  const scratch = makeScratch();
  let link: EngineLink | null = null;
  let model: FakeModel | null = null;
  t.after(async () => {
    await link?.close({ eofGraceMs: 2000, termGraceMs: 2000 });
    await model?.close();
    rmSync(scratch.root, { recursive: true, force: true });
  });
  model = await startFakeModel(options.replies ? { replies: options.replies } : {});
  if (options.agentDir !== false) writeAgentDir(scratch.home, model.baseUrl);
  const given = options.session === undefined ? settledSession : options.session;
  const session = typeof given === "function" ? given(scratch.projectRoot) : given;
  if (session !== null) writeLines(scratch.sessionFile, session);
  link = EngineLink.start(
    realPiSpec(scratch, {
      ...(options.model === undefined ? {} : { model: options.model }),
      ...(options.piVersion === undefined ? {} : { piVersion: options.piVersion }),
    }),
  );
  const log = new RecordLog(link);
  return { link, log, model, scratch };
}
