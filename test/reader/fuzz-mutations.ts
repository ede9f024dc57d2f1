// Seeded mutations of session files for the reader's fuzz suite (fuzz.test.ts): byte flips,
// truncations, duplicated, reordered and deleted lines, huge and deeply nested lines, parent
// cycles, invalid UTF-8, NULs, odd ids (numbers, `__proto__`, `a|b`, `h-…`), odd meta numbers
// and header changes. Everything is a pure function of the seed, so a failure replays exactly.
import { mulberry32 } from "../helpers/prng.ts";

/** A small, fast, seeded generator (mulberry32). */
export type Rng = {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [0, n). */
  int(n: number): number;
  pick<T>(items: readonly T[]): T;
};

export function seededRng(seed: number): Rng {
  const next = mulberry32(seed);
  return {
    next,
    int: (n) => Math.floor(next() * n),
    pick: (items) => items[Math.floor(next() * items.length)]!,
  };
}

type Mutation = { name: string; weight: number; apply: (file: Buffer, rng: Rng) => Buffer };

const NL = 0x0a;

function linesOf(file: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let start = 0;
  while (start < file.length) {
    let end = file.indexOf(NL, start);
    if (end < 0) end = file.length;
    out.push(file.subarray(start, end));
    start = end + 1;
  }
  return out;
}

/** Joins lines with LF, keeping whether the original ended with one. */
function joinLines(lines: Buffer[], trailingNl: boolean): Buffer {
  const parts: Buffer[] = [];
  lines.forEach((l, i) => {
    parts.push(l);
    if (i < lines.length - 1 || trailingNl) parts.push(Buffer.from([NL]));
  });
  return Buffer.concat(parts);
}

function endsWithNl(file: Buffer): boolean {
  return file.length > 0 && file[file.length - 1] === NL;
}

/** A line index after the header when there is one (mutating line 1 mostly just refuses). */
function bodyLine(lines: Buffer[], rng: Rng): number {
  return lines.length <= 1 ? 0 : 1 + rng.int(lines.length - 1);
}

function onLines(file: Buffer, fn: (lines: Buffer[]) => void): Buffer {
  const lines = linesOf(file);
  fn(lines);
  return joinLines(lines, endsWithNl(file));
}

/** Rewrites one line's JSON object, when it parses; other lines are left alone. */
export function onObject(
  file: Buffer,
  rng: Rng,
  fn: (obj: Record<string, unknown>, all: Record<string, unknown>[]) => void,
): Buffer {
  return onLines(file, (lines) => {
    const objects: Record<string, unknown>[] = [];
    for (const l of lines) {
      try {
        const v: unknown = JSON.parse(l.toString("utf8"));
        if (typeof v === "object" && v !== null && !Array.isArray(v)) {
          objects.push(v as Record<string, unknown>);
        }
      } catch {
        // Not JSON: nothing to rewrite on this line.
      }
    }
    const i = bodyLine(lines, rng);
    const line = lines[i];
    if (line === undefined) return;
    let obj: unknown;
    try {
      obj = JSON.parse(line.toString("utf8"));
    } catch {
      return;
    }
    if (typeof obj !== "object" || obj === null || Array.isArray(obj)) return;
    fn(obj as Record<string, unknown>, objects);
    lines[i] = encode(obj) ?? line;
  });
}

/**
 * A number as raw JSON text (`1e400` is Infinity in JavaScript, which JSON.stringify would
 * write as null): a placeholder string that `encode` turns back into the text.
 */
function raw(text: string): string {
  return `@@raw:${text}@@`;
}

/** JSON.stringify, with raw() placeholders written as their text; null when too deep. */
function encode(v: unknown): Buffer | null {
  try {
    return Buffer.from(JSON.stringify(v).replace(/"@@raw:([^"@]*)@@"/g, "$1"));
  } catch {
    // Nested too deep for JSON.stringify (a deep line from an earlier mutation).
    return null;
  }
}

export const ODD_IDS: unknown[] = [
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "",
  "a|b",
  "h-e0f3fdbbd2dc1ea1ecc6b2f6a2bd91e0fc0ee12d",
  "main",
  "b.x",
  "x".repeat(300),
  "ツール😀",
  "\u0000",
  "\ud83d",
  42,
  raw("-0"),
  raw("1e400"),
  null,
  true,
  [],
  {},
];

export const ODD_NUMBERS: unknown[] = [
  -1,
  1.5,
  raw("1e400"),
  raw("-1e400"),
  0,
  raw("-0"),
  raw("9007199254740993"),
  raw("1E2"),
  "7",
  null,
  [],
  1e-7,
];

/** A string that stresses fragmenting: long, with escapes, surrogates and multi-byte text. */
function hugeString(rng: Rng): string {
  const unit = rng.pick(["a", "\ud83d", "😀", "é", '"', "\\", "\n", "\u0001", "\u2028", "ab"]);
  const n = 100_000 + rng.int(rng.next() < 0.2 ? 1_500_000 : 300_000);
  return unit.repeat(Math.ceil(n / unit.length));
}

function deepValue(depth: number, rng: Rng): string {
  const object = rng.next() < 0.5;
  const open = object ? '{"k":' : "[";
  const close = object ? "}" : "]";
  return `${open.repeat(depth)}${rng.next() < 0.5 ? "1" : ""}${close.repeat(depth)}`;
}

const MUTATIONS: Mutation[] = [
  {
    name: "flip bits",
    weight: 6,
    apply: (file, rng) => {
      const out = Buffer.from(file);
      const n = 1 + rng.int(8);
      for (let k = 0; k < n && out.length > 0; k++) out[rng.int(out.length)]! ^= 1 << rng.int(8);
      return out;
    },
  },
  {
    name: "set bytes",
    weight: 4,
    apply: (file, rng) => {
      const out = Buffer.from(file);
      const values = [0x00, 0x0a, 0x0d, 0x22, 0x5c, 0x7b, 0x7d, 0x80, 0xc0, 0xed, 0xff];
      const n = 1 + rng.int(6);
      for (let k = 0; k < n && out.length > 0; k++) out[rng.int(out.length)] = rng.pick(values);
      return out;
    },
  },
  {
    name: "truncate",
    weight: 5,
    apply: (file, rng) => file.subarray(0, rng.int(file.length + 1)),
  },
  {
    name: "duplicate line",
    weight: 5,
    apply: (file, rng) =>
      onLines(file, (lines) => {
        const line = lines[rng.int(lines.length)];
        if (line) lines.splice(bodyLine(lines, rng), 0, line);
      }),
  },
  {
    name: "move line",
    weight: 5,
    apply: (file, rng) =>
      onLines(file, (lines) => {
        const [line] = lines.splice(bodyLine(lines, rng), 1);
        if (line) lines.splice(bodyLine(lines, rng), 0, line);
      }),
  },
  {
    name: "reverse lines",
    weight: 2,
    apply: (file) =>
      onLines(file, (lines) => lines.splice(1, lines.length - 1, ...lines.slice(1).reverse())),
  },
  {
    name: "delete line",
    weight: 5,
    apply: (file, rng) => onLines(file, (lines) => void lines.splice(bodyLine(lines, rng), 1)),
  },
  {
    name: "blank and CRLF lines",
    weight: 2,
    apply: (file, rng) =>
      onLines(file, (lines) => {
        const i = bodyLine(lines, rng);
        lines.splice(i, 0, Buffer.from(rng.pick(["", " ", "\r", "\t \r"])));
        const j = bodyLine(lines, rng);
        if (lines[j]) lines[j] = Buffer.concat([lines[j], Buffer.from("\r")]);
      }),
  },
  {
    name: "huge line",
    weight: 2,
    apply: (file, rng) =>
      onLines(file, (lines) => {
        const text = hugeString(rng);
        const entry = rng.pick([
          { type: "message", message: { role: "user", content: text } },
          {
            type: "message",
            message: {
              role: "assistant",
              content: [{ type: "toolCall", id: "t", name: "x", arguments: { text } }],
            },
          },
          {
            type: "message",
            message: {
              role: "user",
              content: [{ type: "image", mimeType: "image/png", data: text }],
            },
          },
          { type: "compaction", summary: text, tokensBefore: 1 },
          { type: "message", id: text, message: { role: "user", content: "long id" } },
        ]);
        lines.splice(
          bodyLine(lines, rng),
          0,
          Buffer.from(JSON.stringify({ id: `huge${rng.int(1e6)}`, parentId: null, ...entry })),
        );
      }),
  },
  {
    name: "deep line",
    weight: 2,
    apply: (file, rng) =>
      onLines(file, (lines) => {
        const depth = rng.pick([3_000, 5_000, 20_000, 200_000]);
        const args = deepValue(depth, rng);
        const line = rng.pick([
          `{"type":"message","id":"deep${rng.int(1e6)}","parentId":null,"message":{"role":"assistant","content":[{"type":"toolCall","id":"t","name":"x","arguments":${args}}]}}`,
          `{"type":"message","id":"deep${rng.int(1e6)}","parentId":null,"message":{"role":"user","content":${args}}}`,
          `{"type":"custom","id":"deep${rng.int(1e6)}","parentId":null,"data":${args}}`,
          args,
        ]);
        lines.splice(bodyLine(lines, rng), 0, Buffer.from(line));
      }),
  },
  {
    name: "parent cycle",
    weight: 4,
    apply: (file, rng) => {
      const lines = linesOf(file);
      const ids: string[] = [];
      for (const l of lines.slice(1)) {
        try {
          const v = JSON.parse(l.toString("utf8")) as { id?: unknown };
          if (typeof v.id === "string") ids.push(v.id);
        } catch {
          // Not JSON: not part of any cycle.
        }
      }
      if (ids.length === 0) return file;
      // A cycle of 1 to 3 entries: each one's parent is the next.
      const cycle = Array.from({ length: 1 + rng.int(3) }, () => rng.pick(ids));
      return onLines(file, (ls) => {
        for (let i = 1; i < ls.length; i++) {
          try {
            const v = JSON.parse(ls[i]!.toString("utf8")) as Record<string, unknown>;
            const at = cycle.indexOf(v.id as string);
            if (at < 0) continue;
            v.parentId = cycle[(at + 1) % cycle.length];
            ls[i] = encode(v) ?? ls[i]!;
          } catch {
            // Not JSON: left as it is.
          }
        }
      });
    },
  },
  {
    name: "invalid UTF-8",
    weight: 4,
    apply: (file, rng) => {
      const bad = rng.pick([
        [0xff],
        [0xc0, 0xaf],
        [0xed, 0xa0, 0x80],
        [0xe2, 0x82],
        [0x80],
        [0xf4, 0x90, 0x80, 0x80],
        [0xf0, 0x9f, 0x98],
      ]);
      // Inside a string when there is one: after a quote that opens a value.
      const at = file.indexOf(':"', rng.int(Math.max(1, file.length)));
      const pos = at < 0 ? rng.int(file.length + 1) : at + 2;
      return Buffer.concat([file.subarray(0, pos), Buffer.from(bad), file.subarray(pos)]);
    },
  },
  {
    name: "NUL",
    weight: 3,
    apply: (file, rng) => {
      const pos = rng.int(file.length + 1);
      const nul = rng.pick([Buffer.from([0]), Buffer.from("\\u0000"), Buffer.alloc(64)]);
      return Buffer.concat([file.subarray(0, pos), nul, file.subarray(pos)]);
    },
  },
  {
    name: "odd id",
    weight: 6,
    apply: (file, rng) =>
      onObject(file, rng, (obj, all) => {
        const which = rng.int(3);
        if (which === 0) obj.id = rng.pick(ODD_IDS);
        else if (which === 1) obj.parentId = rng.pick(ODD_IDS);
        else {
          // Two entries with the same odd id: duplicates of a hostile key.
          const id = rng.pick(ODD_IDS);
          obj.id = id;
          const other = all[rng.int(all.length)];
          if (other) obj.parentId = other.id;
        }
      }),
  },
  {
    name: "odd meta number",
    weight: 3,
    apply: (file, rng) =>
      onObject(file, rng, (obj) => {
        const n = rng.pick(ODD_NUMBERS);
        if (obj.type === "compaction" || rng.next() < 0.3) obj.tokensBefore = n;
        const m = obj.message;
        if (typeof m === "object" && m !== null) {
          const msg = m as Record<string, unknown>;
          if (rng.next() < 0.5) {
            msg.role = "bashExecution";
            msg.exitCode = n;
          } else msg.stopReason = rng.pick(["aborted", "error", 7, "x".repeat(2000)]);
        }
      }),
  },
  {
    name: "odd field",
    weight: 3,
    apply: (file, rng) =>
      onObject(file, rng, (obj) => {
        const key = rng.pick([
          "type",
          "message",
          "timestamp",
          "customType",
          "display",
          "summary",
          "fromId",
          "firstKeptEntryId",
        ]);
        obj[key] = rng.pick([
          null,
          1,
          "",
          "x".repeat(300),
          "custom_message",
          "branch_summary",
          "session",
          [],
          {},
          true,
        ]);
      }),
  },
  {
    name: "header",
    weight: 3,
    apply: (file, rng) =>
      onLines(file, (lines) => {
        const first = lines[0];
        if (!first) return;
        try {
          const h = JSON.parse(first.toString("utf8")) as Record<string, unknown>;
          const key = rng.pick(["version", "timestamp", "parentSession", "id"]);
          h[key] = rng.pick([1, "1", 2, 3, "x", null, "t".repeat(400), "/elsewhere", raw("1e400")]);
          lines[0] = encode(h) ?? first;
        } catch {
          // A header that no longer parses is a case of its own.
        }
      }),
  },
  {
    name: "no final newline",
    weight: 2,
    apply: (file, rng) =>
      Buffer.concat([
        endsWithNl(file) ? file.subarray(0, file.length - 1) : file,
        Buffer.from(rng.pick(["", '{"type":"mess'])),
      ]),
  },
];

const TOTAL_WEIGHT = MUTATIONS.reduce((n, m) => n + m.weight, 0);

function pickMutation(rng: Rng): Mutation {
  let r = rng.next() * TOTAL_WEIGHT;
  for (const m of MUTATIONS) {
    r -= m.weight;
    if (r < 0) return m;
  }
  return MUTATIONS[MUTATIONS.length - 1]!;
}

/** One to four mutations of `file`; returns the result and the names applied, in order. */
export function mutate(file: Buffer, rng: Rng): { file: Buffer; applied: string[] } {
  const applied: string[] = [];
  let out = file;
  const n = 1 + rng.int(4);
  for (let k = 0; k < n; k++) {
    const m = pickMutation(rng);
    out = m.apply(out, rng);
    applied.push(m.name);
  }
  return { file: out, applied };
}

/** Mutated bytes to append to a file that was read, for a follow to pick up. */
export function appendix(rng: Rng, base: Buffer): Buffer {
  const lines = linesOf(base).slice(1);
  const some = Array.from({ length: 1 + rng.int(3) }, () =>
    rng.pick(lines.length > 0 ? lines : [Buffer.from("{}")]),
  );
  return mutate(joinLines(some, true), rng).file;
}
