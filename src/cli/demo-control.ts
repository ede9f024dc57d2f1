// `npm start`'s demo controller: the real pinned Pi, sealed, on a dedicated demo session, with
// the loopback demo model (demo-model.ts), so a newcomer can observe and steer it with no
// account. The launcher is `chooseLauncher()`'s (cgroup where it can be, so the stop is proven;
// else the process group). Its claims, socket and agent directory live in a temp dir removed at
// stop: the process-group launcher can't prove a stop, so a kept claim would refuse the next run.
import { existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Grant } from "../control/protocol.ts";
import type { Registration } from "../control/registry/registry.ts";
import { sessionsDirOf } from "../index.ts";
import { describeStarted, loadWarning } from "./control-report.ts";
import { DEMO_FILE, DEMO_MODEL, demoModelsJson, startDemoModel } from "./demo-model.ts";
import { registerStarted } from "./registration.ts";

/** The demo session's file name under the seat's sessions directory. */
export const DEMO_CONTROL_FILE = "control.jsonl";
/** The grant that steers: the attach line's, and the Console's once logged in. */
export const DEMO_OPERATOR_GRANT = "demo-op";
/** The grant that only watches: the Console's live streams (they need no login). */
export const DEMO_WATCH_GRANT = "demo-watch";
export const DEMO_GRANTS: Grant[] = [
  {
    id: DEMO_OPERATOR_GRANT,
    actor: "demo-newcomer",
    capabilities: ["observe", "takeover", "release", "prompt", "interrupt"],
    delegate: true,
  },
  { id: DEMO_WATCH_GRANT, actor: "demo-watcher", capabilities: ["observe"] },
];

export type DemoControl = {
  /** What to print: the socket, the grants, how to attach, and any warning. */
  text: string;
  socketPath: string;
  sessionFile: string;
  /** Stops Pi, the controller and the model, removes the temp dir; resolves to how Pi ended. */
  stop(): Promise<string>;
};

/**
 * Starts the demo controller on `<projectRoot>/.pi/state/<seat>/sessions/control.jsonl`
 * (written first if missing), inside `fixtureRoot`. Rejects with the controller's refusal or
 * error after undoing what it started.
 */
export async function startDemoControl(options: {
  fixtureRoot: string;
  projectRoot: string;
  seat: string;
  /** Where the controller registers, for the board (removed again at stop). */
  registryDir?: string;
}): Promise<DemoControl> {
  const sessionFile = await ensureControlSession(options.projectRoot, options.seat);
  const { Controller } = await import("../control/controller/controller.ts");
  const { FixtureVerifier } = await import("../control/controller/records.ts");
  const { chooseLauncher } = await import("../control/cohort/cohort.ts");
  const choice = await chooseLauncher();
  const temp = await mkdtemp(join(tmpdir(), "mosaic-demo-"));
  const model = await startDemoModel();
  const cleanUp = async () => {
    await model.close();
    await rm(temp, { recursive: true, force: true });
  };
  try {
    const agentDir = join(temp, "agent");
    await mkdir(agentDir, { mode: 0o700 });
    await writeFile(join(agentDir, "models.json"), demoModelsJson(model.baseUrl));
    const ctl = new Controller({
      fixtureRoot: options.fixtureRoot,
      claimRoot: join(temp, "claims"),
      socketDir: join(temp, "s"),
      sessionFile,
      seat: options.seat,
      verifier: new FixtureVerifier({ fixtureRoot: options.fixtureRoot }),
      grants: DEMO_GRANTS.map((g) => ({ ...g, capabilities: [...g.capabilities] })),
      launcher: choice.launcher,
      launcherReason: choice.reason,
      engine: { extraArgs: ["--model", `${DEMO_MODEL.provider}/${DEMO_MODEL.id}`] },
      agentDir,
    });
    await ctl.start();
    let registration: Registration | null = null;
    if (options.registryDir !== undefined) {
      registration = await registerStarted(
        options.registryDir,
        ctl,
        DEMO_GRANTS.map((g) => g.id),
      );
    }
    const warning = loadWarning(ctl);
    let stopped: Promise<string> | null = null;
    return {
      text: describeStarted(ctl, DEMO_GRANTS) + (warning === null ? "" : `${warning}\n`),
      socketPath: ctl.socketPath,
      sessionFile,
      stop() {
        registration?.remove();
        stopped ??= ctl.stop().then(
          async () => {
            await cleanUp();
            const exit = ctl.execution?.link.exit ?? null;
            if (exit === null) return "Pi was not running.";
            return `Pi exited (${exit.signal ?? `code ${exit.exitCode}`}).`;
          },
          async (e: unknown) => {
            await cleanUp();
            throw e;
          },
        );
        return stopped;
      },
    };
  } catch (e) {
    await cleanUp();
    throw e;
  }
}

/**
 * The demo session, written once by Pi's own SessionManager: messages and a
 * thinking_level_change on the branch, so pinned Pi appends nothing at startup and the K8 load
 * check sees the leaf it expects (seed: Findings, Startup append). Also writes DEMO_FILE.
 */
export async function ensureControlSession(projectRoot: string, seat: string): Promise<string> {
  const dir = sessionsDirOf(projectRoot, seat);
  const target = join(dir, DEMO_CONTROL_FILE);
  const file = join(projectRoot, DEMO_FILE);
  if (!existsSync(file)) {
    writeFileSync(file, "Hello from the demo project. Pi read this file with its read tool.\n");
  }
  if (existsSync(target)) return target;
  const { SessionManager } = await import("@earendil-works/pi-coding-agent");
  mkdirSync(dir, { recursive: true });
  const sm = SessionManager.create(projectRoot, dir);
  sm.appendSessionInfo("Controlled: steer a real Pi through the socket");
  sm.appendModelChange(DEMO_MODEL.provider, DEMO_MODEL.id);
  sm.appendThinkingLevelChange("off");
  const now = Date.now();
  sm.appendMessage({ role: "user", content: "Are you there?", timestamp: now });
  sm.appendMessage({
    role: "assistant",
    content: [{ type: "text", text: "Yes. Attach to the socket npm start printed and prompt me." }],
    api: "openai-completions",
    provider: DEMO_MODEL.provider,
    model: DEMO_MODEL.id,
    usage: {
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      reasoning: 0,
      totalTokens: 0,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: "stop",
    timestamp: now + 1,
  });
  const written = sm.getSessionFile();
  if (written === undefined || !existsSync(written)) throw new Error("Pi flushed nothing");
  renameSync(written, target);
  return target;
}

/**
 * For `npm start`: starts the demo controller and prints how to reach it, or prints why it
 * could not start and resolves to null (the board keeps serving either way).
 */
export async function tryDemoControl(options: {
  fixtureRoot: string;
  projectRoot: string;
  seat: string;
  registryDir?: string;
  out: (text: string) => void;
  err: (text: string) => void;
}): Promise<DemoControl | null> {
  options.out("Starting a real Pi on the demo session (--no-control skips it)...\n");
  try {
    const control = await startDemoControl(options);
    options.out(
      `\nA real Pi (the pinned one, sealed) runs on the demo conversation "Controlled: steer
a real Pi through the socket", with a loopback model that echoes: no account, no network.
${control.text}Prompt it through the socket (docs/control-protocol.md), or from the Console once
logged in with the link above; ask it to "read a file" to see a tool call.
`,
    );
    return control;
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    const why = `${typeof code === "string" ? `${code}: ` : ""}${(e as Error).message ?? e}`;
    options.err(`demo controller not started: ${why}\nThe board keeps serving.\n`);
    return null;
  }
}
