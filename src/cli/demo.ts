// `npm start`: the board and the Console on loopback over an embedded demo project, written
// once into the git-ignored `demo/` by Pi's own SessionManager, with one conversation that
// keeps growing while the board runs, and a real Pi on a demo session behind a controller
// (demo-control.ts). `--project DIR [--seat NAME]`, `--config FILE` or `--pi` (Pi's own
// store) serve real sessions instead, and then nothing is written or run. Ctrl-C stops the board, the writer and Pi.
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { conversationId } from "../index.ts";
import { makeVisible } from "../present/visible.ts";
import { DEFAULT_HOST, DEFAULT_PORT, parsePort, SOURCE_OPTIONS, sourcesOf } from "./args.ts";
import { type Sources, sourcesFromFlags } from "./config.ts";
import {
  DEMO_OPERATOR_GRANT,
  DEMO_WATCH_GRANT,
  type DemoControl,
  tryDemoControl,
} from "./demo-control.ts";
import { MAX_APPENDS, restoreLive, saveLive, startGrowing } from "./demo-grow.ts";
import { DEMO_SEATS, demoProject, writeDemoProject } from "./demo-sessions.ts";
import { commandPrefix, shellWord } from "./invocation.ts";
import { checkHost, nextLoginLine, startServing, whenAborted } from "./serve.ts";

const REPO = resolve(import.meta.dirname, "..", "..");
const DEMO_DIR = join(REPO, "demo");
const DEMO_PROJECT = join(DEMO_DIR, "demo-project");
/** Written after the last demo file: without it, a half-written demo is written again. */
const READY = join(DEMO_DIR, ".ready");
/** The live conversation as first written: each start begins from it (demo-grow.ts). */
const LIVE_START = join(DEMO_DIR, "live.start.jsonl");
const GROW_MS = 3000;
/**
 * The demo controller registers here, and the board reads it (as `serve --state-dir` does), so
 * the Console watches the controlled conversation and, logged in, steers it.
 */
const DEMO_REGISTRY = join(DEMO_DIR, "state", "controllers");

const HELP = `Usage: npm start [-- options]

Serves the board and the Console on loopback and prints the URL. With no
sources, it serves a demo project (written once into demo/ by Pi's own
SessionManager) with one conversation that grows every few seconds (from its
first state at each start, for ${(MAX_APPENDS * GROW_MS) / 60000} minutes at most).

  --project DIR      serve a real project root instead (no demo is written)
  --seat NAME        a seat under --project (repeatable; default: main)
  --config FILE      serve the specs and registrations of a JSON config file
  --pi               serve Pi's own sessions ($PI_CODING_AGENT_DIR/sessions,
                     else ~/.pi/agent/sessions); --pi-sessions DIR: elsewhere
  --claude           serve Claude Code's sessions ($CLAUDE_CONFIG_DIR/projects,
                     else ~/.claude/projects); --claude-projects DIR: elsewhere
  --port N           the port (default ${DEFAULT_PORT}, or a free one if it is taken)
  --host ADDRESS     127.0.0.1 (default), ::1 or localhost
  --no-control       demo only: don't run the demo's controlled Pi
  -h, --help         this help

Delete demo/ to write the demo again.
`;

async function start(argv: string[], signal: AbortSignal): Promise<number> {
  let values: ReturnType<typeof parse>["values"];
  try {
    values = parse(argv).values;
  } catch (e) {
    return usage((e as Error).message);
  }
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const port = values.port === undefined ? DEFAULT_PORT : parsePort(values.port);
  if (port === null) return usage(`--port ${JSON.stringify(values.port)} is not a port (0-65535)`);
  const host = values.host ?? DEFAULT_HOST;
  const badHost = await checkHost(host);
  if (badHost !== null) return usage(badHost);

  const real =
    values.config !== undefined ||
    values.project !== undefined ||
    values.pi === true ||
    values["pi-sessions"] !== undefined ||
    values.claude === true ||
    values["claude-projects"] !== undefined;
  let sources: Sources;
  let stopWriter = () => {};
  if (real) {
    const checked = sourcesFromFlags(sourcesOf(values));
    if (!checked.ok) return usage(checked.error);
    sources = checked.value;
  } else {
    if (values.seat !== undefined) return usage("--seat goes with --project");
    const demo = await ensureDemo();
    sources = demo;
    restoreLive(LIVE_START, demo.liveFile);
    stopWriter = startGrowing(demo.liveFile, {
      intervalMs: GROW_MS,
      onError: (e) => process.stderr.write(`demo writer: ${e.message}\n`),
      onCapped: (n) =>
        process.stdout.write(
          `Demo writer: the live conversation stops after ${n} messages; it starts over at the next npm start.\n`,
        ),
    });
  }
  const controlled = !real && values["no-control"] !== true;
  const started = await startServing({
    // The demo's search index stays beside the demo (git-ignored); real sources use the cache.
    reading: {
      sources: {
        specs: sources.specs,
        registrations: sources.registrations,
        search: real ? {} : { cacheDir: join(DEMO_DIR, "search-cache") },
        ...(controlled ? { liveRegistry: DEMO_REGISTRY } : {}),
      },
    },
    host,
    port,
    portGiven: values.port !== undefined,
    // The Console steers with the demo's own operator grant and watches with its observe-only
    // one (DEMO_GRANTS).
    ...(controlled ? { grant: DEMO_OPERATOR_GRANT, observeGrant: DEMO_WATCH_GRANT } : {}),
    // Web Push state beside the demo's registry (git-ignored with it; docs/push.md).
    ...(controlled ? { push: { dir: join(DEMO_DIR, "state", "board") } } : {}),
    // Each link logs in once: the next one is printed as the first was.
    onLoginLinkUsed: (next) => process.stdout.write(nextLoginLine(next)),
  });
  if (!started.ok) {
    stopWriter();
    process.stderr.write(`npm start: cannot serve: ${started.error}\n`);
    return 1;
  }
  const { board } = started;
  process.stdout.write(real ? servingReal(board.url) : servingDemo(board.url));
  // As `serve` does: to stdout for the operator, once; never to a log (the token is the key).
  process.stdout.write(`To act (steer a run) from the Console, log in with: ${board.loginUrl}\n`);
  let control: DemoControl | null = null;
  if (controlled) {
    const out = (text: string) => process.stdout.write(text);
    const err = (text: string) => process.stderr.write(text);
    const where = {
      fixtureRoot: DEMO_DIR,
      projectRoot: DEMO_PROJECT,
      seat: DEMO_SEATS.main,
      registryDir: DEMO_REGISTRY,
    };
    control = await tryDemoControl({ ...where, out, err });
  }
  await whenAborted(signal);
  await control?.stop().then(
    (summary) => process.stdout.write(`Demo controller: ${summary}\n`),
    (e: unknown) => process.stderr.write(`demo controller: the stop failed: ${String(e)}\n`),
  );
  stopWriter();
  await board.close();
  process.stdout.write("Stopped.\n");
  return 0;
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      ...SOURCE_OPTIONS,
      port: { type: "string" },
      host: { type: "string" },
      "no-control": { type: "boolean" },
    },
    allowPositionals: false,
    strict: true,
  });
}

/** The demo project, written now unless a complete one is already there. */
async function ensureDemo(): Promise<ReturnType<typeof demoProject>> {
  const demo = demoProject(DEMO_PROJECT);
  if (existsSync(READY) && existsSync(demo.liveFile) && existsSync(LIVE_START)) return demo;
  // Cut short while being written, or its files removed: written again. Only our folder goes.
  rmSync(READY, { force: true });
  rmSync(DEMO_PROJECT, { recursive: true, force: true });
  process.stdout.write("Writing the demo project with Pi's SessionManager...\n");
  await writeDemoProject(DEMO_PROJECT);
  saveLive(demo.liveFile, LIVE_START);
  writeFileSync(READY, "The demo project is complete. Delete demo/ to write it again.\n");
  return demo;
}

function servingDemo(url: string): string {
  // Relative to where `npm start` was typed (npm runs it in the package root), as the hints'
  // `npm run conversation` resolves paths (main.ts runProcess).
  const { npm_lifecycle_event: script, INIT_CWD: typedIn } = process.env;
  const here = script === "start" && typedIn ? typedIn : process.cwd();
  const where = shellWord(relative(here, DEMO_PROJECT) || ".");
  const live = conversationId(DEMO_PROJECT, DEMO_SEATS.main, "live.jsonl");
  const run = commandPrefix();
  return `
The board is serving the demo on ${url}

Open it in a browser and try:
  - the catalogue: the conversations in demo-project (seats main and
    review) and one seat on another harness, shown with its reason
  - "Branches: a fork, a summary and a fresh start": switch branches
  - "A long session (several pages)": load the rest, page by page
  - "Live: a session that keeps growing": a new message every ${GROW_MS / 1000} s
  - "Hostile text, shown inert": escape codes and HTML, shown as text

In a terminal, the same conversations:
  ${run} catalogue --project ${where} --seat '*'
  ${run} follow ${live} --project ${where}

The demo lives in ${where} (delete demo/ to write it again).
Ctrl-C stops the board, the writer and the demo's Pi.
`;
}

function servingReal(url: string): string {
  return `The board is serving on ${url}\nOpen it in a browser; Ctrl-C stops it.\n`;
}

function usage(error: string): number {
  // The message may quote what was typed: control characters are shown, never sent.
  const shown = makeVisible(error, { showNewlines: true });
  process.stderr.write(`npm start: ${shown}\nRun "npm start -- --help" for usage.\n`);
  return 2;
}

const stop = new AbortController();
// Listeners that stay: Pi's package, once imported (SessionManager), loads signal-exit, which
// re-raises a signal that no other listener is left for and so would kill us mid-stop. A second
// signal still ends the process at once.
const onSignal = () => (stop.signal.aborted ? process.exit(130) : stop.abort());
process.on("SIGINT", onSignal);
process.on("SIGTERM", onSignal);
process.exitCode = await start(process.argv.slice(2), stop.signal);
