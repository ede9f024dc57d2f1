// Benchmark inputs. Long sessions are written by Pi's own SessionManager (bench/generate.ts, in a
// child process) into a temporary project, then kept in bench/results/cache/ (git-ignored) under
// a key of size, seed and a fingerprint of the generator, so reruns skip the generation. The
// catalogue's 2,000 small files are written directly as JSON lines on every run.
import { execFileSync } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type BoardSpec, encodeCwd, sessionsDirOf } from "../src/index.ts";

const MIB = 1024 * 1024;
const HERE = fileURLToPath(new URL(".", import.meta.url));
export const CACHE_DIR = join(HERE, "results", "cache");
const GENERATE = join(HERE, "generate.ts");
const GENERATOR_SOURCES = [GENERATE, join(HERE, "..", "test", "helpers", "pi-sessions.ts")];
const PI_PACKAGE = join(
  HERE,
  "..",
  "node_modules",
  "@earendil-works",
  "pi-coding-agent",
  "package.json",
);

export type CachedSession = {
  mib: number;
  seed: number;
  path: string;
  bytes: number;
  sha256: string;
  entries: number;
  /** Milliseconds the generation took when the file was made (not on this run when cached). */
  generatedMs: number;
  /** Whether this run generated it. */
  fresh: boolean;
};

type CacheMeta = Omit<CachedSession, "path" | "fresh" | "mib" | "seed"> & {
  key: string;
  piVersion: string;
};

function sha256(buf: Buffer | string): string {
  return createHash("sha256").update(buf).digest("hex");
}

/** A short hash of the generator's sources and Pi's version: a change invalidates the cache. */
function fingerprint(): { hash: string; piVersion: string } {
  const h = createHash("sha256");
  for (const f of GENERATOR_SOURCES) h.update(readFileSync(f));
  const pkg: unknown = JSON.parse(readFileSync(PI_PACKAGE, "utf8"));
  const piVersion =
    typeof pkg === "object" && pkg !== null && "version" in pkg ? String(pkg.version) : "unknown";
  h.update(piVersion);
  return { hash: h.digest("hex").slice(0, 10), piVersion };
}

/**
 * The cached long session of `mib` MiB and `seed`, generated when missing or damaged. A file
 * whose SHA-256 no longer matches its record is regenerated, so the cache stays pristine.
 */
export function ensureCached(mib: number, seed: number, tmp: string): CachedSession {
  const { hash, piVersion } = fingerprint();
  const stem = `long-${mib}mib-seed${seed}`;
  const key = `${stem}-${hash}`;
  const path = join(CACHE_DIR, `${key}.jsonl`);
  const metaPath = join(CACHE_DIR, `${key}.json`);
  if (existsSync(path) && existsSync(metaPath)) {
    const meta = JSON.parse(readFileSync(metaPath, "utf8")) as CacheMeta;
    if (meta.key === key && sha256(readFileSync(path)) === meta.sha256) {
      return { ...meta, mib, seed, path, fresh: false };
    }
  }
  mkdirSync(CACHE_DIR, { recursive: true });
  // Files of an older generator for the same size and seed are stale.
  for (const name of readdirSync(CACHE_DIR)) {
    if (name.startsWith(`${stem}-`) && !name.startsWith(key)) rmSync(join(CACHE_DIR, name));
  }
  const sessionsDir = sessionsDirOf(join(tmp, `gen-${mib}mib`, "bench-project"), "main");
  const out = join(sessionsDir, `${stem}.jsonl`);
  const stdout = execFileSync(
    process.execPath,
    [GENERATE, "--mb", String(mib), "--seed", String(seed), "--out", out],
    { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], maxBuffer: 1024 * 1024 },
  );
  const line = stdout.trim().split("\n").pop() ?? "";
  const result = JSON.parse(line) as { bytes: number; entries: number; ms: number };
  const buf = readFileSync(out);
  const meta: CacheMeta = {
    key,
    piVersion,
    bytes: buf.length,
    sha256: sha256(buf),
    entries: result.entries,
    generatedMs: result.ms,
  };
  writeFileSync(`${path}.tmp`, buf);
  renameSync(`${path}.tmp`, path);
  writeFileSync(metaPath, `${JSON.stringify(meta, null, 2)}\n`);
  rmSync(join(tmp, `gen-${mib}mib`), { recursive: true, force: true });
  return { ...meta, mib, seed, path, fresh: true };
}

/**
 * Copies a cached session into `<projectRoot>/.pi/state/main/sessions/<name>`. Only the header's
 * `cwd` changes, to the new project root: the reader refuses a session recorded in another
 * project, and the cached file was written in a temporary project that is gone. Every other
 * byte is Pi's.
 */
export function materialize(cached: CachedSession, projectRoot: string, name: string): string {
  const sessionsDir = sessionsDirOf(projectRoot, "main");
  mkdirSync(sessionsDir, { recursive: true });
  const buf = readFileSync(cached.path);
  const nl = buf.indexOf(0x0a);
  const header = JSON.parse(buf.toString("utf8", 0, nl)) as Record<string, unknown>;
  header.cwd = projectRoot;
  const target = join(sessionsDir, name);
  const fd = openSync(target, "wx");
  try {
    writeAll(fd, Buffer.from(JSON.stringify(header)));
    writeAll(fd, buf.subarray(nl));
  } finally {
    closeSync(fd);
  }
  return target;
}

function writeAll(fd: number, buf: Buffer): void {
  let done = 0;
  while (done < buf.length) done += writeSync(fd, buf, done, buf.length - done);
}

export type CatalogueFixture = { specs: BoardSpec[]; dirs: string[]; files: number };

/**
 * `roots` projects with seat `main`, each holding `perRoot` small sessions: a header, a model
 * change, a session name on every third file, and a few user/assistant messages. With `layout`
 * `pi-store`, the same sessions are filed as Pi files them, in one store
 * (`<base>/store/--<encoded cwd>--/`), and the one spec is that store.
 */
export function writeCatalogueFixture(
  base: string,
  roots: number,
  perRoot: number,
  layout: "repository" | "pi-store" = "repository",
): CatalogueFixture {
  const specs: BoardSpec[] = [];
  const dirs: string[] = [];
  const t0 = Date.UTC(2026, 0, 1);
  const store = join(base, "store");
  if (layout === "pi-store") specs.push({ kind: "pi-agent", sessionsDir: store });
  let files = 0;
  for (let r = 0; r < roots; r++) {
    const projectRoot = join(base, `project-${String(r).padStart(3, "0")}`);
    const sessionsDir =
      layout === "pi-store"
        ? join(store, encodeCwd(projectRoot))
        : sessionsDirOf(projectRoot, "main");
    mkdirSync(sessionsDir, { recursive: true });
    if (layout === "repository") specs.push({ kind: "repository", projectRoot, seat: "main" });
    dirs.push(sessionsDir);
    for (let f = 0; f < perRoot; f++) {
      const at = t0 + (r * perRoot + f) * 60_000;
      const iso = (ms: number): string => new Date(ms).toISOString();
      const id = randomUUID();
      const ids = Array.from({ length: 6 }, (_, i) => `${(r * perRoot + f).toString(16)}${i}`);
      const lines: object[] = [
        { type: "session", version: 3, id, timestamp: iso(at), cwd: projectRoot },
        {
          type: "model_change",
          id: ids[0],
          parentId: null,
          timestamp: iso(at + 1),
          provider: "anthropic",
          modelId: "claude-sonnet-4-5",
        },
      ];
      let parent = ids[0];
      for (let m = 1; m < ids.length; m++) {
        const user = m % 2 === 1;
        const text = user
          ? `Question ${m} in session ${f} of project ${r}: what does the reader do with a long file?`
          : `Answer ${m}: it pages through the branch and verifies the pinned prefix on every page.`;
        lines.push({
          type: "message",
          id: ids[m],
          parentId: parent,
          timestamp: iso(at + 1000 * m),
          message: user
            ? { role: "user", content: text, timestamp: at + 1000 * m }
            : {
                role: "assistant",
                content: [{ type: "text", text }],
                stopReason: "stop",
                timestamp: at + 1000 * m,
              },
        });
        parent = ids[m];
      }
      if (f % 3 === 0) {
        lines.push({
          type: "session_info",
          id: `${ids[0]}n`,
          parentId: parent,
          timestamp: iso(at + 9000),
          name: `Session ${f} of project ${r}`,
        });
      }
      const name = `${iso(at).replace(/[:.]/g, "-")}_${id}.jsonl`;
      writeFileSync(join(sessionsDir, name), `${lines.map((l) => JSON.stringify(l)).join("\n")}\n`);
      files++;
    }
  }
  return { specs, dirs, files };
}

export function mib(bytes: number): number {
  return bytes / MIB;
}
