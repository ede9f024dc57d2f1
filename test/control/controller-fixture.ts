// Test helper: a fixture project with a fake-pi session, a Controller over it, and a small
// line-level socket client. Every controller and socket is closed, and the temp dir removed,
// in t.after. Waits have deadlines; nothing sleeps.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createConnection, createServer, type Socket } from "node:net";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { FakeLauncher, type Launcher } from "../../src/control/cohort/launcher.ts";
import { Controller, type ControllerOptions } from "../../src/control/controller/controller.ts";
import { FixtureVerifier } from "../../src/control/controller/records.ts";
import { LineSplitter } from "../../src/control/engine/framing.ts";
import { type Grant, OPERATIONS } from "../../src/control/protocol.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import { assertValid, findProblems, type SchemaDef } from "../helpers/schema.ts";
import type { FakePiScript } from "./fake-pi.ts";
import { FAKE_PI, FAKE_SESSION_ID } from "./fake-pi-harness.ts";

export const GRANTS: Grant[] = [
  { id: "g-op", actor: "local-operator", capabilities: [...OPERATIONS] },
  { id: "g-ro", actor: "local-operator", capabilities: ["observe"] },
];

export type Fixture = {
  root: string;
  fixtureRoot: string;
  projectRoot: string;
  sessionFile: string;
  claimRoot: string;
  socketDir: string;
  holdDir: string;
};

type Line = Record<string, unknown>;

function entry(id: string, parentId: string | null, fields: Line): Line {
  return { id, parentId, timestamp: "2026-01-01T00:00:01.000Z", ...fields };
}

/** A session Pi loads without appending: messages and a thinking entry on the branch. */
export function stableSession(cwd: string, id = FAKE_SESSION_ID): Line[] {
  const msg = (role: string, text: string) => ({
    role,
    content: [{ type: "text", text }],
    timestamp: 1,
  });
  return [
    { type: "session", version: 3, id, timestamp: "2026-01-01T00:00:00.000Z", cwd },
    entry("aaaa0001", null, { type: "thinking_level_change", thinkingLevel: "off" }),
    entry("aaaa0002", "aaaa0001", { type: "message", message: msg("user", "hi") }),
    entry("aaaa0003", "aaaa0002", { type: "message", message: msg("assistant", "hello") }),
  ];
}

/** A session Pi appends to at startup (messages, no thinking entry): K8 accepts the append. */
export function appendingSession(cwd: string): Line[] {
  return stableSession(cwd)
    .filter((l) => l.type !== "thinking_level_change")
    .map((l) => (l.id === "aaaa0002" ? { ...l, parentId: null } : l));
}

const fixtureRoots = new Set<string>();
process.once("exit", () => {
  for (const root of fixtureRoots) rmSync(root, { recursive: true, force: true });
});

export function makeFixture(
  t: Pick<TestContext, "after">,
  session: (cwd: string) => Line[] = stableSession,
): Fixture {
  const root = mkdtempSync("/tmp/mc-");
  t.after(() => rmSync(root, { recursive: true, force: true }));
  // After hooks run in the order they were added, so a controller a test stops in a later hook
  // can write its claim revisions again after this removal: remove every fixture once more as
  // the test process exits (node --test runs each file in its own process).
  fixtureRoots.add(root);
  const fixtureRoot = join(root, "fx");
  const projectRoot = join(fixtureRoot, "proj");
  const sessions = join(projectRoot, ".pi", "state", "main", "sessions");
  mkdirSync(sessions, { recursive: true });
  const holdDir = join(root, "holds");
  mkdirSync(holdDir);
  const sessionFile = join(sessions, "s.jsonl");
  writeFileSync(
    sessionFile,
    session(projectRoot)
      .map((l) => `${JSON.stringify(l)}\n`)
      .join(""),
  );
  return {
    root,
    fixtureRoot,
    projectRoot,
    sessionFile,
    claimRoot: join(root, "claims"),
    socketDir: join(root, "s"),
    holdDir,
  };
}

export type StartOptions = {
  launcher?: Launcher;
  script?: FakePiScript;
  grants?: Grant[];
  audit?: ControllerOptions["audit"];
  actions?: ControllerOptions["actions"];
  session?: (cwd: string) => Line[];
  fixture?: Fixture;
  maxQueuedBytes?: number;
  replay?: ControllerOptions["replay"];
};

export function controllerOptions(f: Fixture, o: StartOptions = {}): ControllerOptions {
  let env: Record<string, string> | undefined;
  if (o.script) {
    const file = join(f.root, "script.json");
    writeFileSync(file, JSON.stringify({ holdDir: f.holdDir, ...o.script }));
    env = { FAKE_PI_SCRIPT: file };
  }
  return {
    fixtureRoot: f.fixtureRoot,
    claimRoot: f.claimRoot,
    socketDir: f.socketDir,
    sessionFile: f.sessionFile,
    seat: "main",
    verifier: new FixtureVerifier({ fixtureRoot: f.fixtureRoot }),
    grants: o.grants ?? GRANTS.map((g) => ({ ...g, capabilities: [...g.capabilities] })),
    launcher: o.launcher ?? new FakeLauncher({ defaultStop: { result: "stopped" } }),
    engine: {
      command: process.execPath,
      preArgs: [FAKE_PI],
      extraArgs: ["--model", "fake/echo"],
      ...(env ? { env } : {}),
    },
    ...(o.audit ? { audit: o.audit } : {}),
    ...(o.actions ? { actions: o.actions } : {}),
    ...(o.maxQueuedBytes === undefined ? {} : { maxQueuedBytes: o.maxQueuedBytes }),
    ...(o.replay === undefined ? {} : { replay: o.replay }),
  };
}

/** A started controller on a fresh fixture; stopped and validated in t.after. */
export async function startController(
  t: Pick<TestContext, "after">,
  o: StartOptions = {},
): Promise<{ ctl: Controller; f: Fixture }> {
  const f = o.fixture ?? makeFixture(t, o.session);
  const ctl = new Controller(controllerOptions(f, o));
  t.after(async () => {
    await ctl.stop();
    validateRecords(ctl);
    // After hooks run in the order they were added, so the fixture's own removal ran before
    // this stop, which wrote claim revisions again: remove the tree once more.
    rmSync(f.root, { recursive: true, force: true });
  });
  await ctl.start();
  return { ctl, f };
}

const DEF = {
  binding: "controlBinding",
  receipt: "receiptRecord",
  stop: "stopRecord",
  confirmation: "confirmationRecord",
  eligibility: "eligibilityRecord",
  dialog: "dialogRecord",
  "dialog-end": "dialogEndRecord",
} as const;

/** Every record the controller produced is a valid CHAT-01 v2 record. */
export function validateRecords(ctl: Controller): void {
  for (const r of ctl.records) assertValid(DEF[r.kind], r);
}

export type Msg = Record<string, unknown> & { type: string };

/**
 * A line-level client: raw writes, every message kept, waits with a deadline. Every message
 * received must be a valid CHAT-01 `controllerMessage`: the first that is not fails every wait
 * and the test (in t.after).
 */
export class TestClient {
  readonly messages: Msg[] = [];
  readonly socket: Socket;
  readonly closed: Promise<void>;
  #waiters = new Set<() => void>();
  #n = 0;
  #invalid: Error | null = null;

  private constructor(socket: Socket) {
    this.socket = socket;
    const splitter = new LineSplitter();
    socket.on("data", (chunk: Buffer) => {
      for (const line of splitter.push(chunk)) {
        const m = JSON.parse(line) as Msg;
        try {
          assertValid("controllerMessage", m);
        } catch (e) {
          this.#invalid ??= e as Error;
        }
        this.messages.push(m);
      }
      for (const w of [...this.#waiters]) w();
    });
    this.closed = new Promise((ok) => socket.on("close", () => ok()));
    socket.on("error", () => {});
  }

  static async connect(t: Pick<TestContext, "after">, path: string): Promise<TestClient> {
    const socket = createConnection(path);
    await new Promise<void>((ok, fail) => {
      socket.once("connect", ok);
      socket.once("error", fail);
    });
    const c = new TestClient(socket);
    t.after(() => {
      socket.destroy();
      if (c.#invalid) throw c.#invalid;
    });
    return c;
  }

  /** Connects and says hello; resolves with the welcome. */
  static async welcomed(t: Pick<TestContext, "after">, path: string, grant = "g-op") {
    const c = await TestClient.connect(t, path);
    c.raw(`${JSON.stringify({ type: "hello", protocol: 2, grant })}\n`);
    const welcome = await c.waitFor((m) => m.type === "welcome", "welcome");
    return { c, welcome };
  }

  raw(text: string): void {
    this.socket.write(text);
  }

  /** Sends a request (id and generation filled in) and resolves with its reply. */
  async request(fields: Record<string, unknown>): Promise<Msg> {
    const id = (fields.id as string | undefined) ?? `r${++this.#n}`;
    this.raw(`${JSON.stringify({ type: "request", id, ...fields })}\n`);
    return this.reply(id);
  }

  reply(id: string, from = 0): Promise<Msg> {
    return this.waitFor((m) => m.type === "reply" && m.id === id, `reply ${id}`, from);
  }

  waitFor(
    match: (m: Msg) => boolean,
    what: string,
    from = 0,
    timeoutMs = DEADLINE_MS,
  ): Promise<Msg> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (this.#invalid) {
          this.#waiters.delete(check);
          clearTimeout(timer);
          reject(this.#invalid);
          return;
        }
        const hit = this.messages.slice(from).find(match);
        if (!hit) return;
        this.#waiters.delete(check);
        clearTimeout(timer);
        resolve(hit);
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        const seen = this.messages.map(
          (m) => `${m.type}:${String(m.outcome ?? (m.event as Msg)?.kind ?? "")}`,
        );
        reject(new Error(`no ${what} within ${timeoutMs} ms; saw ${seen.join(", ")}`));
      }, timeoutMs);
      this.#waiters.add(check);
      check();
    });
  }
}

/** Lines a Tap passed, per direction, and every schema problem found in them. */
export type Tap = {
  /** The tap's socket: connect here instead of the controller's. */
  path: string;
  lines: { client: number; controller: number };
  problems: string[];
  /** Cuts every connection through the tap now, as a network drop would (both sides close). */
  drop(): void;
};

/**
 * A line-level tap between clients and a controller: a socket at `path` that forwards bytes
 * both ways unchanged, checking each client line as a CHAT-01 `clientMessage` and each
 * controller line as a `controllerMessage`. A half-close or close on one side ends the other.
 * In t.after the tap closes and fails the test if any line was invalid.
 */
export async function tapController(
  t: Pick<TestContext, "after">,
  target: string,
  path: string,
): Promise<Tap> {
  const sockets = new Set<Socket>();
  const tap: Tap = {
    path,
    lines: { client: 0, controller: 0 },
    problems: [],
    drop: () => {
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
  };
  const pipe = (from: Socket, to: Socket, side: "client" | "controller", def: SchemaDef) => {
    const splitter = new LineSplitter();
    from.on("data", (chunk: Buffer) => {
      for (const line of splitter.push(chunk)) {
        tap.lines[side]++;
        let problems: string[];
        try {
          problems = findProblems(def, JSON.parse(line));
        } catch {
          problems = ["not JSON"];
        }
        if (problems.length > 0) tap.problems.push(`${side} line ${line}: ${problems.join("; ")}`);
      }
      to.write(chunk);
    });
    from.on("end", () => to.end());
    from.on("close", () => to.destroy());
    from.on("error", () => {});
  };
  const server = createServer((client) => {
    const upstream = createConnection(target);
    sockets.add(client).add(upstream);
    pipe(client, upstream, "client", "clientMessage");
    pipe(upstream, client, "controller", "controllerMessage");
  });
  await new Promise<void>((ok, fail) => {
    server.once("error", fail);
    server.listen(path, () => ok());
  });
  t.after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((ok) => server.close(() => ok()));
    if (tap.problems.length > 0) {
      throw new Error(`invalid wire lines:\n  ${tap.problems.slice(0, 20).join("\n  ")}`);
    }
  });
  return tap;
}
