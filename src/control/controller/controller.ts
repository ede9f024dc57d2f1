// The Controller (seed: Mediated control, Pieces): one per execution. It claims the session,
// launches the sealed engine, runs the K8 load check, and serves the socket: observe, takeover,
// prompt, interrupt, confirmations, force stop, recover and launch (operations.ts); hello.ts
// welcomes connections, dialogs.ts records the engine's dialogs. Admission opens only after a
// passing K8 check; the claim ends only with a proven stop.
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { rm } from "node:fs/promises";
import { createReader, type Reader } from "../../reader/reader.ts";
import { claudeProjectsDirOf, rootsFromSpecs } from "../../reader/sources.ts";
import { type Claim, ClaimStore, type SeatKey } from "../claim/claim.ts";
import { type Recovered, recoverDeadHolder } from "../claim/recovery.ts";
import { type AnyLaunched, type Launcher, PgroupLauncher } from "../cohort/launcher.ts";
import { LiveSessionGuard, type PathStamp } from "../engine/guard.ts";
import type { CommandOptions, EngineCommandBase, SessionHead } from "../engine/harness.ts";
import { type Harness, harnessFor } from "../engine/harnesses.ts";
import { type ControllerState, type Grant, parseBudgetLimits } from "../protocol.ts";
import { ControlRefusal } from "../refusal.ts";
import type { AuditHost } from "./audit-hook.ts";
import { BudgetGuard, budgetHost, limitsOf } from "./budget-guard.ts";
import type { ControllerOptions } from "./controller-options.ts";
import { Approvals, answerApproval, type DialogOutlet, endApprovals } from "./dialogs.ts";
import { engineHooks } from "./engine-hooks.ts";
import { EventStream, REPLAY_MAX_BYTES } from "./events.ts";
import { checkExtraEnv, type Execution, engineEnv } from "./execution.ts";
import { checkGrants } from "./hello.ts";
import { LaunchRecords } from "./launch-records.ts";
import { Operations } from "./operations.ts";
import {
  type BindingRecord,
  type ControlRecord,
  Evidence,
  isVerifier,
  type Verifier,
} from "./records.ts";
import { type Connection, ControlServer, MAX_QUEUED_BYTES, readySocketPath } from "./socket.ts";
import { socketHooks } from "./socket-hooks.ts";
import { stopHostOf } from "./stop-host.ts";
import { type Closer, StopChain } from "./stops.ts";
import { Tracker } from "./turns.ts";

export type { ControllerOptions } from "./controller-options.ts";
export type { Execution } from "./execution.ts";

export class Controller {
  readonly conversation: string;
  readonly sessionKey: string;
  readonly sessionFile: string;
  readonly projectRoot: string;
  readonly seat: string;
  readonly evidence = new Evidence();
  readonly #options: ControllerOptions;
  readonly #guard: LiveSessionGuard;
  readonly #stamp: PathStamp;
  /** The agent dir's stamp at construction (outside every live root), or null when none. */
  readonly #agentStamp: PathStamp | null;
  readonly #harness: Harness;
  readonly #engine: EngineCommandBase;
  readonly #claims: ClaimStore;
  readonly #launcher: Launcher;
  readonly #verifier: Verifier;
  readonly #grants: Map<string, Grant>;
  readonly #reader: Reader;
  readonly #leafAtConstruction: string | null;
  #claim: Claim | null = null;
  /** The dead holder's stop this controller proved and recorded at start, if any. */
  #recovered: Recovered | null = null;
  /** The launch records this controller wrote, removed once their claim ends. */
  readonly #launchRecords: LaunchRecords;
  #server: ControlServer | null = null;
  #exec: Execution | null = null;
  #stopping: Promise<void> | null = null;
  #generation = 1;
  #controllerConnection: string | null = null;
  #auditOk = true;
  readonly #ops: Operations;
  readonly #budget: BudgetGuard;
  /** Where the approvals' records and messages go. */
  readonly #dialogOutlet: DialogOutlet = {
    record: (r) => this.record(r),
    broadcast: (m) => this.#server?.broadcast(m),
  };

  /** Refuses `configuration`, `live-session-refused`, `unsealed-engine`, `engine-pin-mismatch`. */
  constructor(options: ControllerOptions) {
    for (const key of ["fixtureRoot", "claimRoot", "socketDir", "sessionFile", "seat"] as const) {
      const v: unknown = options?.[key];
      if (typeof v !== "string" || v === "") {
        throw new ControlRefusal("configuration", `${key} is required`);
      }
    }
    if (!isVerifier(options.verifier)) {
      throw new ControlRefusal("configuration", "a verifier is required");
    }
    this.#grants = checkGrants(options.grants);
    const limits = options.budget === undefined ? undefined : parseBudgetLimits(options.budget);
    if (typeof limits === "string") throw new ControlRefusal("configuration", `budget: ${limits}`);
    this.#budget = new BudgetGuard(
      budgetHost({
        exec: () => this.#exec,
        record: (r) => this.record(r),
        broadcast: (m) => this.#server?.broadcast(m),
        broadcastState: () => this.broadcastState(),
      }),
      limitsOf(limits),
    );
    this.#harness = harnessFor(options.harness ?? "pi");
    checkExtraEnv(this.#harness, options.engine?.env);
    this.#options = options;
    this.#verifier = options.verifier;
    this.#guard = new LiveSessionGuard({
      fixtureRoot: options.fixtureRoot,
      ...(options.homes ? { homes: options.homes } : {}),
    });
    this.#stamp = this.#guard.checkSessionFile(
      options.sessionFile,
      options.seat,
      this.#harness.place,
    );
    // SPEC §6: the agent dir (PI_CODING_AGENT_DIR) must be outside the live roots, as written
    // and by real path; the same guard and stamp as the session file, checked again at bind.
    if (options.agentDir !== undefined && typeof options.agentDir !== "string") {
      throw new ControlRefusal("configuration", "agentDir must be a path");
    }
    this.#agentStamp = options.agentDir === undefined ? null : this.#guard.check(options.agentDir);
    this.#verifier.checkSession(options.sessionFile);
    let head: SessionHead;
    try {
      head = this.#harness.readHead(options.sessionFile);
    } catch (e) {
      if (e instanceof ControlRefusal && e.code === "mapping") {
        throw new ControlRefusal("configuration", `the session file is unreadable: ${e.message}`);
      }
      throw e;
    }
    this.sessionKey = head.sessionKey;
    this.#leafAtConstruction = head.leafId;
    this.sessionFile = options.sessionFile;
    this.seat = options.seat;
    const project = this.#harness.place.projectOf(options.sessionFile, options.seat);
    // checkSessionFile refused a file whose place names no project.
    if (project === null) throw new Error("the session file's place names no project");
    this.projectRoot = project;
    this.conversation = this.#harness.conversationOf(this.projectRoot, this.seat, this.sessionFile);
    this.#engine = this.#harness.command(this.#commandOptions());
    this.#claims = new ClaimStore({ root: options.claimRoot });
    this.#launcher = options.launcher ?? new PgroupLauncher();
    this.#launchRecords = new LaunchRecords({
      claimRoot: options.claimRoot,
      claims: this.#claims,
      launcher: this.#launcher,
      seatKey: () => this.#seatKey(),
      sessionKey: this.sessionKey,
    });
    const specs = [{ kind: "repository" as const, projectRoot: this.projectRoot, seat: this.seat }];
    // A Claude Code seat is read by the reader's Claude adapter: a registration on claude-code
    // makes the seat's root its own Claude folder (reader/sources.ts).
    const registrations =
      this.#harness.name === "claude-code"
        ? [
            {
              seat: this.seat,
              layout: "repo",
              project: this.projectRoot,
              sessionsDir: claudeProjectsDirOf(this.projectRoot, this.seat),
              harness: "claude-code",
              startedAt: new Date().toISOString(),
            },
          ]
        : [];
    this.#reader = createReader({ roots: () => rootsFromSpecs(specs, registrations) });
    this.#ops = new Operations({
      conversation: this.conversation,
      sessionKey: this.sessionKey,
      sessionFile: this.sessionFile,
      unwritten: () => this.#harness.name === "claude-code" && !existsSync(this.sessionFile),
      readHead: () => this.#harness.readHead(this.sessionFile),
      readKey: () => this.#harness.readKey(this.sessionFile, this.sessionKey),
      checkText: (text) => this.#harness.checkText(text),
      seatKey: { projectRoot: this.projectRoot, seat: this.seat },
      reader: this.#reader,
      claims: this.#claims,
      provesStops: this.#launcher.kind !== "pgroup",
      exec: () => this.#exec,
      claim: () => this.#claim,
      setClaim: (c) => {
        this.#claim = c;
      },
      grant: (id) => this.#grants.get(id) ?? null,
      generation: () => this.#generation,
      controllerConnection: () => this.#controllerConnection,
      setController: (id) => {
        const was = this.#controllerConnection;
        if (was !== null && was !== id) this.#exec?.approvals.lostControl(was);
        this.#controllerConnection = id;
        this.#generation++;
        if (id !== null) this.#exec?.closers.delete("revocation");
        this.broadcastState();
      },
      auditOk: () => this.#auditOk,
      state: () => this.state(),
      record: (r) => this.record(r),
      broadcast: (m) => this.#server?.broadcast(m),
      broadcastLine: (line) => this.#server?.broadcastLine(line),
      answer: (conn, grant, r) => {
        const by = { connection: conn.id, actor: conn.actor ?? grant.actor };
        return this.#budget.owns(r.dialog)
          ? this.#budget.answer(by, r, mayChangeBudget(conn, grant))
          : answerApproval(this.#exec, this.#dialogOutlet, by, r);
      },
      budgetRefusal: () => this.#budget.refusePrompt(),
      changeBudget: (conn, grant, limits) =>
        this.#budget.change(
          { connection: conn.id, actor: conn.actor ?? grant.actor },
          limits,
          mayChangeBudget(conn, grant),
        ),
      relaunch: async (execution, incarnation, leaf) => {
        const old = this.#exec;
        this.#generation++;
        this.#controllerConnection = null;
        await this.launchExecution(execution, incarnation, leaf);
        if (old) await rm(old.home, { recursive: true, force: true });
      },
    });
  }

  get socketPath(): string {
    if (!this.#server) throw new Error("the controller is not listening");
    return this.#server.socketPath;
  }

  get claim(): Claim | null {
    return this.#claim;
  }

  /** The proof of a crashed controller's stop that this one recorded before it took over. */
  /** How people call the engine this controller runs ("Pi", "Claude Code"). */
  get engineLabel(): string {
    return this.#harness.label;
  }

  get recovered(): Recovered | null {
    return this.#recovered;
  }

  get execution(): Execution | null {
    return this.#exec;
  }

  get records(): ControlRecord[] {
    return this.evidence.records();
  }

  state(): ControllerState {
    const e = this.#exec;
    const budget = this.#budget.state();
    const holder = this.#controllerConnection;
    const conn = holder === null ? undefined : this.#server?.connections.get(holder);
    const grant = conn?.grant == null ? undefined : this.#grants.get(conn.grant);
    const actor = conn?.actor ?? grant?.actor;
    return {
      incarnation: e?.incarnation ?? "none",
      execution: e?.execution ?? "none",
      generation: this.#generation,
      controllerConnection: holder,
      ...(actor === undefined ? {} : { controllerActor: actor }),
      admission: admissionOf(e),
      binding: e?.binding.state ?? "uncertain",
      ...(budget === undefined ? {} : { budget }),
    };
  }

  /** Claim, launch, the K8 load check, listen. Refuses as the claim store and launcher do. */
  async start(): Promise<void> {
    if (this.#claim) throw new Error("start() was already called");
    const execution = `ex-${randomUUID()}`;
    const incarnation = `in-${randomUUID()}`;
    // The socket directory is checked first: a bad one must refuse before anything is claimed.
    await readySocketPath(this.#options.socketDir);
    const holder = await this.#claims.holderFor({ execution, incarnation });
    const keys = { seatKey: this.#seatKey(), sessionKey: this.sessionKey };
    // A controller that died (SIGKILL mid-turn, mid-stop) left the barrier: prove its engine's
    // stop from what its launcher left and record it, or refuse saying what to do (recovery.ts).
    this.#recovered = await recoverDeadHolder(this.#claims, keys, holder);
    // Written before the claim, so a crash anywhere after the acquire leaves the scope findable.
    await this.#launchRecords.write(execution, incarnation);
    try {
      this.#claim = await this.#claims.acquire({ ...keys, holder });
    } catch (e) {
      await this.#launchRecords.drop(execution);
      throw e;
    }
    try {
      await this.launchExecution(execution, incarnation, this.#leafAtConstruction);
      this.#server = await ControlServer.listen(
        this.#options.socketDir,
        socketHooks({
          grants: this.#grants,
          conversation: this.conversation,
          controllerConnection: () => this.#controllerConnection,
          freeControl: () => {
            this.#controllerConnection = null;
            this.broadcastState();
          },
          state: () => this.state(),
          exec: () => this.#exec,
          budget: this.#budget,
          ops: this.#ops,
          broadcastLine: (line) => this.#server?.broadcastLine(line),
          audit: this.#auditHost,
        }),
        this.#options.maxQueuedBytes === undefined
          ? {}
          : { maxQueuedBytes: this.#options.maxQueuedBytes },
      );
    } catch (e) {
      await this.stop();
      throw e;
    }
  }

  /**
   * Launches an execution and runs K8. Used by start and by launch after a recovery, with the
   * claim already held for (execution, incarnation).
   */
  async launchExecution(
    execution: string,
    incarnation: string,
    leaf: string | null,
  ): Promise<void> {
    // A relaunch (recover, launch) acquired its claim already; its record goes before the engine.
    if (!this.#launchRecords.has(execution))
      await this.#launchRecords.write(execution, incarnation);
    this.#guard.bindCheck(this.sessionFile, this.#stamp);
    if (this.#agentStamp) this.#guard.bindCheck(this.#agentStamp.path, this.#agentStamp);
    const bound = this.#harness.bind(this.#commandOptions(), this.#engine);
    const { env, home } = await engineEnv(this.#harness, {
      agentDir: this.#options.agentDir,
      extra: this.#options.engine?.env,
      projectRoot: this.projectRoot,
      seat: this.seat,
    });
    // Read before the spawn: what the harness's load check compares with.
    const basis = this.#harness.beforeSpawn(this.sessionFile);
    const closers = new Set<Closer>();
    // Filled in once the engine runs; its hooks see only this execution (`this.#exec === exec`).
    let exec: Execution = null as unknown as Execution;
    const started = await this.#harness.launch(
      this.#launcher,
      {
        command: bound.command,
        args: [...bound.preArgs, ...bound.argv],
        env,
        cwd: this.projectRoot,
      },
      execution,
      engineHooks({
        current: () => (this.#exec === exec && exec !== null ? exec : null),
        promptAcked: (success, response) => this.#ops.promptAcked(success, response),
        broadcastLine: (line) => this.#server?.broadcastLine(line),
        outlet: this.#dialogOutlet,
        spent: (spend) => this.#budget.spent(spend),
        record: (r) => this.record(r),
        broadcastState: () => this.broadcastState(),
      }),
      basis,
    );
    const { launched, engine } = started;
    const link = launched.link;
    exec = {
      execution,
      incarnation,
      launched,
      link,
      engine,
      tracker: null as unknown as Tracker,
      stops: null as unknown as StopChain,
      stream: new EventStream(undefined, this.#replayBounds()),
      binding: null as unknown as BindingRecord,
      closers,
      dialogs: [],
      approvals: new Approvals(execution),
      home,
      leafAtStart: leaf,
      load: null,
    };
    exec.tracker = new Tracker({
      settle: (receipt, reason, detail) => this.#ops.settled(receipt, reason, detail),
      overlap: () => {
        exec.closers.add("overlap");
        exec.binding = { ...exec.binding, state: "uncertain", reason: "run-overlap" };
        this.broadcastState();
      },
    });
    exec.stops = new StopChain(
      stopHostOf(exec, {
        verifier: this.#verifier,
        claims: this.#claims,
        claim: () => this.#claim,
        setClaim: (c) => {
          this.#claim = c;
        },
        dropLaunchRecord: (ex) => this.#launchRecords.drop(ex),
        outlet: this.#dialogOutlet,
        record: (r) => this.record(r),
        broadcastState: () => this.broadcastState(),
      }),
    );
    void link.exited.then(() => {
      if (this.#exec !== exec) return;
      try {
        this.#harness.afterExit?.({ projectRoot: this.projectRoot, seat: this.seat });
      } catch {
        // A leftover is replaced at the next launch and removed by the agent copy's watcher.
      }
      exec.tracker.engineGone();
      endApprovals(exec, this.#dialogOutlet, "closed", "closed: the engine exited");
      if (!exec.stops.escalationRunning && !exec.closers.has("stopped")) {
        exec.closers.add("uncertain");
      }
      this.broadcastState();
    });
    this.#exec = exec;
    const check = await engine.loadCheck({
      sessionFile: this.sessionFile,
      sessionId: this.sessionKey,
      leafId: leaf,
    });
    exec.load = check;
    exec.binding = {
      version: 2,
      kind: "binding",
      conversation: this.conversation,
      sessionKey: this.sessionKey,
      execution,
      incarnation,
      generation: this.#generation,
      launcher: launched.launcher,
      engine: { name: bound.pin.name, version: bound.pin.version, integrity: bound.pin.integrity },
      ...(this.#options.launcherReason === undefined
        ? {}
        : { launcherReason: this.#options.launcherReason }),
      ...(scopeOf(launched) === null ? {} : { scope: scopeOf(launched) as string }),
      argvDigest: bound.argvDigest,
      testHook: bound.testHook,
      expected: { sessionFile: this.sessionFile, sessionId: this.sessionKey, leafId: leaf },
      loaded: check.loaded,
      ...(check.startupAppend === undefined ? {} : { startupAppend: check.startupAppend }),
      state: check.ok ? "bound" : "uncertain",
      reason: check.ok ? "loaded" : "k8-load-check",
      at: new Date().toISOString(),
    };
    this.record(exec.binding);
    this.broadcastState();
  }

  /**
   * Stops the engine and closes the socket. The claim ends `stopped-proven` only when the
   * launcher proves the stop; otherwise it is marked uncertain and stays held.
   */
  stop(): Promise<void> {
    // One stop per controller: a second call waits for the first instead of stopping again.
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    const exec = this.#exec;
    if (exec && !exec.closers.has("stopped")) {
      await exec.link.close({ eofGraceMs: 2000, termGraceMs: 1000 });
      if (!exec.stops.escalationRunning) await exec.stops.forceStop("shutdown");
    } else if (!exec && this.#claim?.state === "held") {
      this.#claim = await this.#claims.release(this.#claim, "never-launched");
      await this.#launchRecords.drop(this.#claim.holder.execution);
    }
    for (const c of this.#server?.connections.values() ?? []) c.channelOpen = false;
    await this.#server?.close();
    this.#server = null;
    if (exec) await rm(exec.home, { recursive: true, force: true });
  }

  /** Revokes a grant: its connections' channels close; a controller on it is fenced out. */
  revokeGrant(id: string): void {
    const grant = this.#grants.get(id);
    if (!grant) return;
    grant.active = false;
    for (const c of this.#server?.connections.values() ?? []) {
      if (c.grant !== id) continue;
      c.channelOpen = false;
      if (this.#controllerConnection === c.id) {
        this.#controllerConnection = null;
        this.#exec?.closers.add("revocation");
      }
    }
    this.broadcastState();
  }

  record(record: ControlRecord): void {
    this.evidence.append(record);
    try {
      this.#options.audit?.(record);
    } catch {
      // The sink failed: every acting request now refuses `audit`; the evidence keeps the record.
      this.#auditOk = false;
    }
  }

  broadcastState(): void {
    this.#server?.broadcast({ type: "state", state: this.state() });
  }

  /** Where the audit hook reports each answered act (the ledger), and what a failure means. */
  get #auditHost(): AuditHost {
    return {
      conversation: this.conversation,
      grant: (id) => this.#grants.get(id) ?? null,
      sink: this.#options.actions,
      failed: () => {
        // The ledger failed: every acting request now refuses `audit` (admission.ts).
        this.#auditOk = false;
      },
    };
  }

  #seatKey(): SeatKey {
    return { projectRoot: this.projectRoot, seat: this.seat };
  }

  // A full replay is written at once: it must fit well inside the slow-client limit.
  #replayBounds(): { maxEvents?: number; maxBytes: number } {
    const queued = this.#options.maxQueuedBytes ?? MAX_QUEUED_BYTES;
    const bytes = Math.min(this.#options.replay?.maxBytes ?? REPLAY_MAX_BYTES, queued / 2);
    const events = this.#options.replay?.maxEvents;
    return events === undefined ? { maxBytes: bytes } : { maxEvents: events, maxBytes: bytes };
  }

  #commandOptions(): CommandOptions {
    const e = this.#options.engine ?? {};
    return {
      sessionFile: this.#options.sessionFile,
      projectRoot: this.projectRoot,
      extraArgs: e.extraArgs,
      pinRoot: this.#options.pinRoot,
      version: this.#options.piVersion,
      command: e.command,
      preArgs: e.preArgs,
      agentDir: this.#options.agentDir,
    };
  }
}

/** The cgroup scope of a launched execution (CohortExecution's), or null. */
function scopeOf(launched: AnyLaunched): string | null {
  const scope: unknown = (launched as { scope?: { dir?: unknown } }).scope?.dir;
  return typeof scope === "string" ? scope : null;
}

/** A budget change needs the budget capability, in the grant and in the hello's narrowing. */
function mayChangeBudget(conn: Connection, grant: Grant): boolean {
  return (
    grant.capabilities.includes("budget") &&
    (conn.capabilities === null || conn.capabilities.includes("budget"))
  );
}

function admissionOf(e: Execution | null): ControllerState["admission"] {
  if (e === null || e.binding === null || e.binding.reason === "k8-load-check") return "never";
  return e.closers.size > 0 ? "fenced" : "open";
}
