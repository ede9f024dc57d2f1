// Where the command reads from (SPEC §3): a JSON config file of board specs and seat
// registrations (`--config FILE`), or one project root and its seats (`--project DIR
// --seat NAME`), Pi's own session store (`--pi`, `--pi-sessions DIR`) and Claude Code's
// (`--claude`, `--claude-projects DIR`); with none of them, every default store that exists
// (resolveSources). The file is parsed from `unknown` with a
// check per field; a problem is a value naming the field, never an exception. Nothing here
// reads a session root.
import { readFileSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import {
  type BoardSpec,
  defaultClaudeProjectsDir,
  defaultPiSessionsDir,
  type SeatRegistration,
} from "../index.ts";

export type Sources = { specs: BoardSpec[]; registrations: SeatRegistration[] };
export type Checked<T> = { ok: true; value: T } | { ok: false; error: string };

/** The seat names rootsFromSpecs accepts (sources.ts SEAT_NAME); it drops others in silence. */
const SEAT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** The seat `--project` reads when no `--seat` is given. */
export const DEFAULT_SEAT = "main";
const CONFIG_MAX_BYTES = 1024 * 1024;
const REGISTRATION_FIELDS = [
  "seat",
  "layout",
  "project",
  "sessionsDir",
  "harness",
  "startedAt",
] as const;

export type SourceFlags = {
  config?: string;
  project?: string;
  seat?: string[];
  /** `--pi`: Pi's store at its default place. */
  pi?: boolean;
  /** `--pi-sessions DIR`: a Pi store somewhere else. */
  piSessions?: string;
  /** `--claude`: Claude Code's store at its default place. */
  claude?: boolean;
  /** `--claude-projects DIR`: a Claude Code projects folder somewhere else. */
  claudeProjects?: string;
};

/**
 * The environment the default stores depend on (pi-store.ts defaultPiSessionsDir,
 * claude-code/store.ts defaultClaudeProjectsDir).
 */
export type SourceEnv = { env: Record<string, string | undefined>; home?: string };

/**
 * The sources of a command that reads (catalogue, read, follow, search, serve), and the one line
 * to print on stderr when the flags named none and the default stores are read instead: each of
 * Pi's and Claude Code's that exists, or Pi's when neither does (so the command can say it is not
 * there yet). At most one of `--config` and `--project`; `--seat` (repeatable, default `main`)
 * only with `--project`; `--pi` or `--pi-sessions DIR`, and `--claude` or `--claude-projects
 * DIR`, alone or added to the others. Errors are usage errors.
 */
export function resolveSources(
  flags: SourceFlags,
  where: SourceEnv = { env: process.env },
): Checked<{ sources: Sources; notice: string | null }> {
  const named =
    flags.config !== undefined ||
    flags.project !== undefined ||
    flags.seat !== undefined ||
    flags.pi === true ||
    flags.piSessions !== undefined ||
    flags.claude === true ||
    flags.claudeProjects !== undefined;
  if (!named) return { ok: true, value: defaultStores(where) };
  const store = storeSpec(flags, where);
  if (!store.ok) return store;
  const claude = claudeSpec(flags, where);
  if (!claude.ok) return claude;
  const extra = [store.value, claude.value].filter((s): s is BoardSpec => s !== null);
  if (flags.config === undefined && flags.project === undefined) {
    if (flags.seat !== undefined) return fail("--seat goes with --project");
    return { ok: true, value: { sources: { specs: extra, registrations: [] }, notice: null } };
  }
  const base = repositorySources(flags);
  if (!base.ok) return base;
  const sources = { ...base.value, specs: [...base.value.specs, ...extra] };
  return { ok: true, value: { sources, notice: null } };
}

/** The sources the flags name (resolveSources without its notice). */
export function sourcesFromFlags(flags: SourceFlags, where?: SourceEnv): Checked<Sources> {
  const r = resolveSources(flags, where);
  return r.ok ? { ok: true, value: r.value.sources } : r;
}

/** Every default store that exists, or Pi's when none does, and the line saying so. */
function defaultStores(where: SourceEnv): { sources: Sources; notice: string } {
  const pi = defaultPiSessionsDir(where.env, where.home);
  const claude = defaultClaudeProjectsDir(where.env, where.home);
  const specs: BoardSpec[] = [];
  const said: string[] = [];
  const flags: string[] = [];
  if (isDirectory(pi) || !isDirectory(claude)) {
    specs.push({ kind: "pi-agent", sessionsDir: pi });
    said.push(`Pi's sessions in ${pi}`);
    flags.push("--pi");
  }
  if (isDirectory(claude)) {
    specs.push({ kind: "claude-code", projectsDir: claude });
    said.push(`Claude Code's sessions in ${claude}`);
    flags.push("--claude");
  }
  const notice = `No source named: reading ${said.join(" and ")} (${flags.join(", ")}; see --help for others).`;
  return { sources: { specs, registrations: [] }, notice };
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    // Missing or unreadable: not a store to read by default (it can still be named).
    return false;
  }
}

function claudeSpec(flags: SourceFlags, where: SourceEnv): Checked<BoardSpec | null> {
  if (flags.claude === true && flags.claudeProjects !== undefined) {
    return fail("--claude and --claude-projects both name Claude Code's store; give one");
  }
  if (flags.claudeProjects === "") return fail("--claude-projects needs a directory");
  if (flags.claudeProjects !== undefined) {
    return { ok: true, value: { kind: "claude-code", projectsDir: resolve(flags.claudeProjects) } };
  }
  if (flags.claude !== true) return { ok: true, value: null };
  return {
    ok: true,
    value: { kind: "claude-code", projectsDir: defaultClaudeProjectsDir(where.env, where.home) },
  };
}

function storeSpec(flags: SourceFlags, where: SourceEnv): Checked<BoardSpec | null> {
  if (flags.pi === true && flags.piSessions !== undefined) {
    return fail("--pi and --pi-sessions both name Pi's store; give one");
  }
  if (flags.piSessions === "") return fail("--pi-sessions needs a directory");
  if (flags.piSessions !== undefined) {
    return { ok: true, value: { kind: "pi-agent", sessionsDir: resolve(flags.piSessions) } };
  }
  if (flags.pi !== true) return { ok: true, value: null };
  return {
    ok: true,
    value: { kind: "pi-agent", sessionsDir: defaultPiSessionsDir(where.env, where.home) },
  };
}

function repositorySources(flags: SourceFlags): Checked<Sources> {
  if (flags.config !== undefined && flags.project !== undefined) {
    return fail("--config and --project cannot be used together");
  }
  if (flags.config !== undefined) {
    if (flags.seat !== undefined) return fail("--seat goes with --project, not --config");
    return readConfigFile(flags.config);
  }
  if (flags.project === undefined || flags.project === "") {
    return fail("--project needs a directory");
  }
  const seats = flags.seat ?? [DEFAULT_SEAT];
  const specs: BoardSpec[] = [];
  for (const seat of seats) {
    if (!SEAT_NAME.test(seat)) return fail(`--seat ${JSON.stringify(seat)} is not a seat name`);
    specs.push({ kind: "repository", projectRoot: resolve(flags.project), seat });
  }
  return { ok: true, value: { specs, registrations: [] } };
}

/** Reads and checks a config file; relative paths in it are taken from the file's folder. */
export function readConfigFile(file: string): Checked<Sources> {
  let text: string;
  try {
    const buf = readFileSync(file);
    if (buf.length > CONFIG_MAX_BYTES) return fail(`config ${file}: larger than 1 MiB`);
    text = buf.toString("utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? String(e);
    return fail(`config ${file}: cannot read it (${code})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return fail(`config ${file}: not JSON (${(e as Error).message})`);
  }
  const parsed = parseConfig(value, dirname(resolve(file)));
  return parsed.ok ? parsed : fail(`config ${file}: ${parsed.error}`);
}

/**
 * Checks `{ specs: BoardSpec[], registrations?: SeatRegistration[] }`. Repository and pi-agent
 * specs and registrations are closed objects; fleet and connector specs keep their fields (they
 * are never roots). A relative `projectRoot` or `sessionsDir` is resolved against `baseDir`.
 */
export function parseConfig(value: unknown, baseDir: string): Checked<Sources> {
  if (!isObject(value)) return fail("expected a JSON object with specs");
  const extra = Object.keys(value).filter((k) => k !== "specs" && k !== "registrations");
  if (extra.length > 0) return fail(`unknown field ${JSON.stringify(extra[0])}`);
  if (!Array.isArray(value.specs)) return fail("specs: expected an array");
  const specs: BoardSpec[] = [];
  for (const [i, raw] of value.specs.entries()) {
    const spec = parseSpec(raw, baseDir);
    if (!spec.ok) return fail(`specs[${i}]${spec.error}`);
    specs.push(spec.value);
  }
  const registrations: SeatRegistration[] = [];
  if (value.registrations !== undefined) {
    if (!Array.isArray(value.registrations)) return fail("registrations: expected an array");
    for (const [i, raw] of value.registrations.entries()) {
      const reg = parseRegistration(raw, baseDir);
      if (!reg.ok) return fail(`registrations[${i}]${reg.error}`);
      registrations.push(reg.value);
    }
  }
  return { ok: true, value: { specs, registrations } };
}

function parseSpec(raw: unknown, baseDir: string): Checked<BoardSpec> {
  if (!isObject(raw)) return fail(": expected an object");
  const kind = raw.kind;
  if (kind === "fleet" || kind === "connector") return { ok: true, value: { ...raw, kind } };
  if (kind === "pi-agent") {
    const extra = Object.keys(raw).filter((k) => k !== "kind" && k !== "sessionsDir");
    if (extra.length > 0) return fail(`: unknown field ${JSON.stringify(extra[0])}`);
    if (typeof raw.sessionsDir !== "string" || raw.sessionsDir === "") {
      return fail(".sessionsDir: expected the path of Pi's sessions directory");
    }
    return { ok: true, value: { kind, sessionsDir: resolve(baseDir, raw.sessionsDir) } };
  }
  if (kind === "claude-code") {
    const extra = Object.keys(raw).filter((k) => k !== "kind" && k !== "projectsDir");
    if (extra.length > 0) return fail(`: unknown field ${JSON.stringify(extra[0])}`);
    if (typeof raw.projectsDir !== "string" || raw.projectsDir === "") {
      return fail(".projectsDir: expected the path of Claude Code's projects folder");
    }
    return { ok: true, value: { kind, projectsDir: resolve(baseDir, raw.projectsDir) } };
  }
  if (kind !== "repository") {
    return fail('.kind: expected "repository", "pi-agent", "claude-code", "fleet" or "connector"');
  }
  const extra = Object.keys(raw).filter((k) => !["kind", "projectRoot", "seat"].includes(k));
  if (extra.length > 0) return fail(`: unknown field ${JSON.stringify(extra[0])}`);
  if (typeof raw.projectRoot !== "string" || raw.projectRoot === "") {
    return fail(".projectRoot: expected a directory path");
  }
  if (typeof raw.seat !== "string" || !SEAT_NAME.test(raw.seat)) {
    return fail(".seat: expected a seat name (letters, digits, '.', '_', '-')");
  }
  return {
    ok: true,
    value: { kind, projectRoot: resolve(baseDir, raw.projectRoot), seat: raw.seat },
  };
}

function parseRegistration(raw: unknown, baseDir: string): Checked<SeatRegistration> {
  if (!isObject(raw)) return fail(": expected an object");
  const known: readonly string[] = REGISTRATION_FIELDS;
  const extra = Object.keys(raw).filter((k) => !known.includes(k));
  if (extra.length > 0) return fail(`: unknown field ${JSON.stringify(extra[0])}`);
  for (const field of REGISTRATION_FIELDS) {
    if (typeof raw[field] !== "string") return fail(`.${field}: expected a string`);
  }
  const { seat, layout, project, sessionsDir, harness, startedAt } = raw as Record<
    (typeof REGISTRATION_FIELDS)[number],
    string
  >;
  if (Number.isNaN(Date.parse(startedAt))) return fail(".startedAt: expected an ISO 8601 time");
  return {
    ok: true,
    value: {
      seat,
      layout,
      project,
      sessionsDir: resolve(baseDir, sessionsDir),
      harness,
      startedAt,
    },
  };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A check that did not pass, saying why. */
export function fail(error: string): { ok: false; error: string } {
  return { ok: false, error };
}
