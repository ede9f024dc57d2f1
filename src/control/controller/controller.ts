// The Controller (seed: Mediated control, Pieces): one per execution. It claims the session,
// launches the sealed engine, runs the K8 load check, and serves the socket: observe, takeover,
// prompt, interrupt, confirmations, force stop, recover and launch (operations.ts); hello.ts
// welcomes connections, dialogs.ts records the engine's dialogs. Admission opens only after a
// passing K8 check; the claim ends only with a proven stop.
import { randomUUID } from "node:crypto";
import { rm } from "node:fs/promises";
import { basename, dirname } from "node:path";
import { createReader, type Reader } from "../../reader/reader.ts";
import { conversationId, rootsFromSpecs } from "../../reader/sources.ts";
import { type Claim, ClaimStore, type SeatKey } from "../claim/claim.ts";
import { removeLaunchRecord, writeLaunchRecord } from "../claim/launch-record.ts";
import { type Recovered, recoverDeadHolder } from "../claim/recovery.ts";
import { type Launched, type Launcher, PgroupLauncher } from "../cohort/launcher.ts";
import { LiveSessionGuard, type PathStamp } from "../engine/guard.ts";
import { bindEngine, type EngineCommand, engineCommand, sealedArgv } from "../engine/pi-pin.ts";
import { promptDisposition } from "../engine/rpc.ts";
import { readSessionHead } from "../engine/session-head.ts";
import type { ControllerState, Grant, Hello } from "../protocol.ts";
import { ControlRefusal } from "../refusal.ts";
import { type AuditHost, auditedConnection } from "./audit-hook.ts";
import type { ControllerOptions } from "./controller-options.ts";
import { disabledDialog } from "./dialogs.ts";
import { EventStream, mapEvent, REPLAY_MAX_BYTES } from "./events.ts";
import {
  checkExtraEnv,
  checkLoad,
  type Execution,
  engineEnv,
  readStartupBasis,
} from "./execution.ts";
import { answerHello, checkGrants } from "./hello.ts";
import { Operations } from "./operations.ts";
import {
  type BindingRecord,
  type ControlRecord,
  Evidence,
  isVerifier,
  type Verifier,
} from "./records.ts";
import {
  type Connection,
  ControlServer,
  type HelloAnswer,
  MAX_QUEUED_BYTES,
  readySocketPath,
} from "./socket.ts";
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
  readonly #engine: EngineCommand;
  readonly #claims: ClaimStore;
  readonly #launcher: Launcher;
  readonly #verifier: Verifier;
  readonly #grants: Map<string, Grant>;
  readonly #reader: Reader;
  readonly #leafAtConstruction: string | null;
  #claim: Claim | null = null;
  /** The dead holder's stop this controller proved and recorded at start, if any. */
  #recovered: Recovered | null = null;
  /** Executions whose launch record this controller wrote (removed once their claim ends). */
  readonly #launchRecords = new Set<string>();
  #server: ControlServer | null = null;
  #exec: Execution | null = null;
  #stopping: Promise<void> | null = null;
  #generation = 1;
  #controllerConnection: string | null = null;
  #auditOk = true;
  readonly #ops: Operations;

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
    checkExtraEnv(options.engine?.env);
    this.#options = options;
    this.#verifier = options.verifier;
    this.#guard = new LiveSessionGuard({
      fixtureRoot: options.fixtureRoot,
      ...(options.homes ? { homes: options.homes } : {}),
    });
    this.#stamp = this.#guard.checkSessionFile(options.sessionFile, options.seat);
    // SPEC §6: the agent dir (PI_CODING_AGENT_DIR) must be outside the live roots, as written
    // and by real path; the same guard and stamp as the session file, checked again at bind.
    if (options.agentDir !== undefined && typeof options.agentDir !== "string") {
      throw new ControlRefusal("configuration", "agentDir must be a path");
    }
    this.#agentStamp = options.agentDir === undefined ? null : this.#guard.check(options.agentDir);
    this.#verifier.checkSession(options.sessionFile);
    let head: ReturnType<typeof readSessionHead>;
    try {
      head = readSessionHead(options.sessionFile);
    } catch (e) {
      if (e instanceof ControlRefusal && e.code === "mapping") {
        throw new ControlRefusal("configuration", `the session file is unreadable: ${e.message}`);
      }
      throw e;
    }
    this.sessionKey = head.headerId;
    this.#leafAtConstruction = head.leafId;
    this.sessionFile = options.sessionFile;
    this.seat = options.seat;
    this.projectRoot = dirname(dirname(dirname(dirname(dirname(options.sessionFile)))));
    this.conversation = conversationId(this.projectRoot, this.seat, basename(this.sessionFile));
    this.#engine = engineCommand(this.#engineOptions());
    this.#claims = new ClaimStore({ root: options.claimRoot });
    this.#launcher = options.launcher ?? new PgroupLauncher();
    const specs = [{ kind: "repository" as const, projectRoot: this.projectRoot, seat: this.seat }];
    this.#reader = createReader({ roots: () => rootsFromSpecs(specs, []) });
    this.#ops = new Operations({
      conversation: this.conversation,
      sessionKey: this.sessionKey,
      sessionFile: this.sessionFile,
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
    return {
      incarnation: e?.incarnation ?? "none",
      execution: e?.execution ?? "none",
      generation: this.#generation,
      controllerConnection: this.#controllerConnection,
      admission: admissionOf(e),
      binding: e?.binding.state ?? "uncertain",
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
    await this.#writeLaunchRecord(execution, incarnation);
    try {
      this.#claim = await this.#claims.acquire({ ...keys, holder });
    } catch (e) {
      await this.#dropLaunchRecord(execution);
      throw e;
    }
    try {
      await this.launchExecution(execution, incarnation, this.#leafAtConstruction);
      this.#server = await ControlServer.listen(
        this.#options.socketDir,
        {
          hello: (conn, hello) => this.#hello(conn, hello),
          request: (conn, request) => {
            const audited = auditedConnection(conn, request, this.#auditHost);
            if (audited !== null) this.#ops.handle(audited, request);
          },
          closed: (conn) => this.#closed(conn),
        },
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
    if (!this.#launchRecords.has(execution)) await this.#writeLaunchRecord(execution, incarnation);
    this.#guard.bindCheck(this.sessionFile, this.#stamp);
    if (this.#agentStamp) this.#guard.bindCheck(this.#agentStamp.path, this.#agentStamp);
    const bound = bindEngine(this.#engineOptions(), this.#engine);
    const { env, home } = await engineEnv({
      agentDir: this.#options.agentDir,
      extra: this.#options.engine?.env,
    });
    // Read before the spawn: the load check accepts only Pi's known startup append past it.
    const basis = readStartupBasis(this.sessionFile);
    const launched = await this.#launcher.launch(
      {
        command: bound.command,
        args: [...bound.preArgs, ...bound.argv],
        env,
        cwd: this.projectRoot,
      },
      { executionId: execution },
    );
    const link = launched.link;
    const closers = new Set<Closer>();
    const exec: Execution = {
      execution,
      incarnation,
      launched,
      link,
      tracker: null as unknown as Tracker,
      stops: null as unknown as StopChain,
      stream: new EventStream(undefined, this.#replayBounds()),
      binding: null as unknown as BindingRecord,
      closers,
      dialogs: [],
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
    exec.stops = new StopChain(this.#stopHost(exec));
    link.onRecord((r) => {
      if (this.#exec !== exec) return;
      if (r.kind === "response" && r.matched && r.response.command === "prompt") {
        const res = r.response;
        this.#ops.promptAcked(
          res.success,
          res.success ? { disposition: promptDisposition(res.data) } : { error: res.error },
        );
        return;
      }
      if (r.kind !== "event") return;
      exec.tracker.onEvent(r.event);
      const e = r.event;
      if (e.type === "extension_ui_request" && e.blocking)
        this.#dialog(exec, e.id, e.method, e.title);
      const mapped = mapEvent(e);
      if (mapped) this.#server?.broadcastLine(exec.stream.next(mapped).line);
    });
    void link.exited.then(() => {
      if (this.#exec !== exec) return;
      exec.tracker.engineGone();
      if (!exec.stops.escalationRunning && !exec.closers.has("stopped")) {
        exec.closers.add("uncertain");
      }
      this.broadcastState();
    });
    this.#exec = exec;
    const check = await checkLoad(
      link,
      { sessionFile: this.sessionFile, sessionId: this.sessionKey, leafId: leaf },
      undefined,
      basis,
    );
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
      await this.#dropLaunchRecord(this.#claim.holder.execution);
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

  #hello(conn: Connection, hello: Hello): HelloAnswer {
    return answerHello(conn, hello, {
      grants: this.#grants,
      conversation: this.conversation,
      controllerConnection: this.#controllerConnection,
      state: this.state(),
      stream: this.#exec?.stream,
    });
  }

  #closed(conn: Connection): void {
    this.#ops.forget(conn.id);
    if (this.#controllerConnection === conn.id) {
      this.#controllerConnection = null;
      this.broadcastState();
    }
  }

  #dialog(exec: Execution, native: string, method: string, title: string | undefined): void {
    const { record, message } = disabledDialog(exec.execution, native, method, title);
    exec.dialogs.push(record);
    this.record(record);
    this.#server?.broadcast(message);
  }

  #seatKey(): SeatKey {
    return { projectRoot: this.projectRoot, seat: this.seat };
  }

  async #writeLaunchRecord(execution: string, incarnation: string): Promise<void> {
    const m = await this.#claims.machine();
    await writeLaunchRecord(this.#options.claimRoot, {
      version: 2,
      kind: "launch-record",
      execution,
      incarnation,
      seatKey: this.#seatKey(),
      sessionKey: this.sessionKey,
      host: m.host,
      bootId: m.bootId,
      launcher: this.#launcher.kind,
      scope: this.#launcher.scopeFor?.(execution) ?? null,
      at: new Date().toISOString(),
    });
    this.#launchRecords.add(execution);
  }

  async #dropLaunchRecord(execution: string): Promise<void> {
    if (!this.#launchRecords.delete(execution)) return;
    await removeLaunchRecord(this.#options.claimRoot, execution);
  }

  // A full replay is written at once: it must fit well inside the slow-client limit.
  #replayBounds(): { maxEvents?: number; maxBytes: number } {
    const queued = this.#options.maxQueuedBytes ?? MAX_QUEUED_BYTES;
    const bytes = Math.min(this.#options.replay?.maxBytes ?? REPLAY_MAX_BYTES, queued / 2);
    const events = this.#options.replay?.maxEvents;
    return events === undefined ? { maxBytes: bytes } : { maxEvents: events, maxBytes: bytes };
  }

  #engineOptions() {
    const e = this.#options.engine ?? {};
    return {
      argv: sealedArgv({
        sessionFile: this.#options.sessionFile,
        extraArgs: e.extraArgs,
        piVersion: this.#options.piVersion,
      }),
      pinRoot: this.#options.pinRoot,
      piVersion: this.#options.piVersion,
      command: e.command,
      preArgs: e.preArgs,
    };
  }

  #stopHost(exec: Execution) {
    return {
      execution: exec.execution,
      incarnation: exec.incarnation,
      link: exec.link,
      launched: exec.launched,
      tracker: exec.tracker,
      verifier: this.#verifier,
      close: (c: Closer) => {
        exec.closers.add(c);
        this.broadcastState();
      },
      lift: (c: Closer) => {
        exec.closers.delete(c);
        this.broadcastState();
      },
      dialogSeen: () => exec.dialogs.length > 0,
      claimStopping: async () => {
        if (this.#claim) this.#claim = await this.#claims.markStopping(this.#claim);
      },
      claimUncertain: async (why: string) => {
        if (this.#claim) this.#claim = await this.#claims.markUncertain(this.#claim, why);
      },
      claimProven: async (digest: string) => {
        if (!this.#claim) throw new Error("no claim to end");
        this.#claim = await this.#claims.recordProvenStop(this.#claim, digest);
        // The claim ended with a proof: no recovery will need to find this execution's scope.
        await this.#dropLaunchRecord(exec.execution);
      },
      record: (r: ControlRecord) => this.record(r),
    };
  }
}

/** The cgroup scope of a launched execution (CohortExecution's), or null. */
function scopeOf(launched: Launched): string | null {
  const scope: unknown = (launched as { scope?: { dir?: unknown } }).scope?.dir;
  return typeof scope === "string" ? scope : null;
}

function admissionOf(e: Execution | null): ControllerState["admission"] {
  if (e === null || e.binding === null || e.binding.reason === "k8-load-check") return "never";
  return e.closers.size > 0 ? "fenced" : "open";
}
