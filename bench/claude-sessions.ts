// A long Claude Code session for the benchmark, in the shape Claude Code 2.1.328 writes
// (test/helpers/claude-sessions.ts, checked against the real binary by claude-oracle.test.ts):
// per turn the queue operations, the prompt and its system-reminder attachments, API request
// records, replies split one line per block (thinking, text, tool calls), tool results hung on
// their call's line; every so often a /compact, an interrupt and a failed request. Two rewinds
// (one after turn 2, one half-way) give three branches, as the Pi bench's session has. Written
// turn by turn so a 100 MiB file never sits in memory as records.
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { ClaudeWriter } from "../test/helpers/claude-sessions.ts";
import { mulberry32 as prng } from "../test/helpers/prng.ts";

const WORDS =
  "the reader keeps every branch of a session file and pages it in bounded views while the agent edits code runs tests reads files and explains what changed in the repository 日本語 café → ✓".split(
    " ",
  );

export type ClaudeBenchSession = { file: string; bytes: number; turns: number; forks: number };

/** Writes a session of at least `mib` MiB at `file` (its folder made), deterministic by `seed`. */
export function writeClaudeSession(
  file: string,
  cwd: string,
  mib: number,
  seed: number,
): ClaudeBenchSession {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const words = (n: number) => Array.from({ length: n }, () => pick(WORDS)).join(" ");
  const lines = (n: number, width: number) =>
    Array.from({ length: n }, (_, i) => `${i + 1}\t${words(width)}`).join("\n");

  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, "");
  const target = mib * 1024 * 1024;
  const w = new ClaudeWriter({ cwd, seed });
  let bytes = 0;
  const flush = () => {
    const text = w.lines.map((l) => `${JSON.stringify(l)}\n`).join("");
    appendFileSync(file, text);
    bytes += Buffer.byteLength(text);
    // The writer's lines are kept only until they are on disk.
    w.lines.length = 0;
  };
  w.bookkeeping("custom-title", { customTitle: `Bench session ${mib} MiB` });
  let turns = 0;
  let forks = 0;
  let call = 0;
  // Where each turn ended: a rewind hangs a new prompt on the end of the turn before the last,
  // whose child (the last turn's prompt) already exists.
  const ends: (string | null)[] = [];
  let halfWay = false;
  while (bytes < target) {
    turns++;
    const rewind = turns === 3 || (!halfWay && bytes > target / 2 && turns > 4);
    if (rewind) {
      if (turns > 3) halfWay = true;
      w.leaf = ends[ends.length - 2] ?? null;
      forks++;
    }
    w.prompt(`Turn ${turns}: ${words(8 + Math.floor(rand() * 40))}`);
    const tools = 1 + Math.floor(rand() * 3);
    for (let k = 0; k < tools; k++) {
      const id = `toolu_${(++call).toString(36).padStart(8, "0")}`;
      const path = `${cwd}/src/file-${Math.floor(rand() * 40)}.ts`;
      const kind = pick(["Bash", "Read", "Edit", "Write"] as const);
      const input =
        kind === "Bash"
          ? { command: `npm test -- ${words(2)}`, description: words(4) }
          : kind === "Read"
            ? { file_path: path }
            : kind === "Edit"
              ? { file_path: path, old_string: lines(4, 6), new_string: lines(5, 6) }
              : { file_path: path, content: lines(30, 8) };
      w.reply(
        [
          ...(k === 0 ? [{ type: "thinking" as const, thinking: words(30) }] : []),
          { type: "text", text: `${words(20)}\n\n- ${words(6)}\n- ${words(6)}` },
          { type: "tool_use", id, name: kind, input },
        ],
        {
          usage: {
            input_tokens: 1000 + turns,
            output_tokens: 200 + k,
            cache_read_input_tokens: 5000,
            cache_creation_input_tokens: 100,
          },
        },
      );
      const out =
        kind === "Read" || kind === "Bash" ? lines(20 + Math.floor(rand() * 60), 10) : "ok";
      // What Claude Code keeps beside a result (docs/claude-code-files.md): an Edit keeps the
      // whole file it edited.
      const original = kind === "Edit" ? lines(40 + Math.floor(rand() * 40), 8) : "";
      w.toolResults([
        {
          toolUseId: id,
          content: out,
          isError: rand() < 0.05,
          toolUseResult: useResultOf(kind, path, input, out, original),
        },
      ]);
    }
    w.reply([{ type: "text", text: `Done: ${words(60)}` }]);
    if (turns % 97 === 0) w.compact(words(120));
    if (turns % 61 === 0) w.interrupt(words(10));
    if (turns % 89 === 0) w.apiError("API Error: 500 overloaded");
    w.bookkeeping("last-prompt", { lastPrompt: `Turn ${turns}`, leafUuid: w.leaf });
    ends.push(w.leaf);
    if (ends.length > 3) ends.shift();
    flush();
  }
  flush();
  return { file, bytes, turns, forks };
}

/** A Claude Code projects folder of `dirs` project folders with `perDir` small sessions each. */
export function writeClaudeStore(
  projectsDir: string,
  dirs: number,
  perDir: number,
  encode: (cwd: string) => string,
): { dirs: string[]; files: number } {
  const out: string[] = [];
  let files = 0;
  for (let d = 0; d < dirs; d++) {
    const cwd = `/work/project-${String(d).padStart(3, "0")}`;
    const dir = join(projectsDir, encode(cwd));
    out.push(dir);
    for (let f = 0; f < perDir; f++) {
      const w = new ClaudeWriter({
        cwd,
        sessionId: `5e55e55e-0000-4000-8000-${(d * perDir + f).toString(16).padStart(12, "0")}`,
        seed: d * perDir + f,
      });
      w.prompt(`Question ${f} about project ${d}`);
      w.reply([{ type: "text", text: "An answer." }]);
      w.bookkeeping("ai-title", { aiTitle: `Project ${d} session ${f}` });
      w.write(join(dir, `${w.sessionId}.jsonl`));
      files++;
    }
  }
  return { dirs: out, files };
}

/**
 * The `toolUseResult` Claude Code 2.1.328 writes beside a result of `kind`, in its shape
 * (docs/claude-code-files.md): Bash's output again, Read's file, Write's content, Edit's
 * original file and its patch. The reader never shows it; the floor parses it.
 */
function useResultOf(
  kind: "Bash" | "Read" | "Edit" | "Write",
  filePath: string,
  input: Record<string, unknown>,
  out: string,
  original: string,
): Record<string, unknown> {
  if (kind === "Bash") return { stdout: out, stderr: "", interrupted: false, isImage: false };
  if (kind === "Read") {
    const numLines = out.split("\n").length;
    return {
      type: "text",
      file: { filePath, content: out, numLines, startLine: 1, totalLines: numLines },
    };
  }
  if (kind === "Write") {
    return { type: "create", filePath, content: input.content, structuredPatch: [] };
  }
  const oldLines = String(input.old_string).split("\n");
  const newLines = String(input.new_string).split("\n");
  return {
    filePath,
    oldString: input.old_string,
    newString: input.new_string,
    originalFile: original,
    structuredPatch: [
      {
        oldStart: 1,
        oldLines: oldLines.length,
        newStart: 1,
        newLines: newLines.length,
        lines: [...oldLines.map((l) => `-${l}`), ...newLines.map((l) => `+${l}`)],
      },
    ],
    userModified: false,
    replaceAll: false,
  };
}
