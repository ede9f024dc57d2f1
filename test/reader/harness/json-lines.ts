// Lines for fuzzing the reader's line scanners against JSON.parse (harness/pi/line-scan.test.ts,
// harness/claude-code/scan-line.test.ts): a seeded PRNG, a line placed at a random alignment
// among bytes JSON cares about, byte mutations of real lines, and random JSON texts.

/** A seeded PRNG (mulberry32), so a failing fuzz case reproduces from its seed. */
export { mulberry32 as prng } from "../../helpers/prng.ts";

export type Rng = () => number;
export const int = (rng: Rng, n: number) => Math.floor(rng() * n);
export const pickOf = <T>(rng: Rng, xs: readonly T[]): T => xs[int(rng, xs.length)]!;

/**
 * Places `line` inside a larger buffer at a random alignment, with bytes JSON cares about on
 * both sides, so a scanner that reads outside start..end or assumes alignment is caught.
 * Returns the buffer and the line's range.
 */
export function embed(rng: Rng, line: Buffer): { buf: Buffer; start: number; end: number } {
  const junk = [0x22, 0x5c, 0x7d, 0x5d, 0x2c, 0x20, 0x0a, 0x31, 0x00, 0xff];
  const before = int(rng, 9);
  const after = int(rng, 9);
  const pad = int(rng, 4); // the buffer's own byteOffset inside its ArrayBuffer
  const ab = new ArrayBuffer(pad + before + line.length + after);
  const buf = Buffer.from(ab, pad, before + line.length + after);
  for (let i = 0; i < before; i++) buf[i] = pickOf(rng, junk);
  line.copy(buf, before);
  for (let i = before + line.length; i < buf.length; i++) buf[i] = pickOf(rng, junk);
  return { buf, start: before, end: before + line.length };
}

/** The line as a JS string literal of its bytes: ASCII as itself, other bytes as \\xNN. */
export function show(line: Buffer): string {
  let text = "";
  for (const b of line.subarray(0, 800)) {
    text +=
      b >= 0x80 ? `\\x${b.toString(16)}` : JSON.stringify(String.fromCharCode(b)).slice(1, -1);
  }
  return `"${text}"${line.length > 800 ? `… (${line.length} bytes)` : ""}`;
}

export const B = (s: string) => Buffer.from(s, "utf8");
export const bytes = (...parts: (string | number[])[]) =>
  Buffer.concat(parts.map((p) => (typeof p === "string" ? B(p) : Buffer.from(p))));

/** Pi's keys, for duplicates added by `mutate` and keys of random objects. */
const PI_DUP_KEYS = ['"type"', '"id"', '"parentId"', '"\\u0069d"', '"idx"'];
const PI_KEYS = [
  "type",
  "id",
  "parentId",
  "t\\u0079pe",
  "\\u0069d",
  "parent\\u0049d",
  "types",
  "i",
  "",
  "message",
  "\\u0000",
  "日本",
];

const INSERTS: (string | number[])[] = [
  '"',
  "\\",
  "\\u",
  "\\u00",
  "\\uD800",
  "{",
  "}",
  "[",
  "]",
  ",",
  ":",
  " ",
  "\t",
  "\r",
  "\n",
  "0",
  "-",
  ".",
  "e",
  "null",
  '"type"',
  '"id"',
  '"parentId"',
  '"t\\u0079pe"',
  [0x00],
  [0x01],
  [0x1f],
  [0x7f],
  [0x80],
  [0xc0],
  [0xe6, 0x97],
  [0xed, 0xa0, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0xff],
  [0xef, 0xbb, 0xbf],
];

/** A position, biased toward bytes JSON cares about. */
function position(rng: Rng, line: Buffer): number {
  if (line.length === 0 || rng() < 0.5) return int(rng, line.length + 1);
  const from = int(rng, line.length);
  const targets = [0x22, 0x5c, 0x3a, 0x2c, 0x7b, 0x7d];
  const hit = line.indexOf(pickOf(rng, targets), from);
  return hit < 0
    ? from
    : hit + int(rng, 3) - 1 < 0
      ? 0
      : Math.min(line.length, hit + int(rng, 3) - 1);
}

export function mutate(rng: Rng, line: Buffer, dupKeys: readonly string[] = PI_DUP_KEYS): Buffer {
  const r = rng();
  const at = position(rng, line);
  if (r < 0.3) {
    const ins = pickOf(rng, INSERTS);
    return Buffer.concat([line.subarray(0, at), bytes(ins), line.subarray(at)]);
  }
  if (r < 0.45) {
    // Flip one byte to a random value or an ASCII neighbour.
    if (at >= line.length) return line;
    const out = Buffer.from(line);
    out[at] = rng() < 0.5 ? int(rng, 256) : (line[at]! ^ (1 << int(rng, 8))) & 0xff;
    return out;
  }
  if (r < 0.6) return line.subarray(0, at); // truncate
  if (r < 0.72) {
    const len = 1 + int(rng, 6);
    return Buffer.concat([line.subarray(0, at), line.subarray(Math.min(line.length, at + len))]);
  }
  if (r < 0.8) {
    // Add a duplicate top-level key before the last byte.
    const key = pickOf(rng, dupKeys);
    const val = pickOf(rng, ['"v"', "null", "1", "{}", '["x"]', '"a\\"b"', "true"]);
    const cut = Math.max(0, line.length - 1);
    return Buffer.concat([line.subarray(0, cut), B(`,${key}:${val}`), line.subarray(cut)]);
  }
  if (r < 0.88)
    return Buffer.concat([bytes(pickOf(rng, [[0xef, 0xbb, 0xbf], " ", "\t", [0xa0]])), line]);
  if (r < 0.96)
    return Buffer.concat([line, bytes(pickOf(rng, ["\r", " ", "\t", "x", [0x00], "}"]))]);
  // Swap a key's first letter for an escape of it.
  const k = line.indexOf('"', at);
  if (k < 0 || k + 1 >= line.length) return line;
  const c = line[k + 1]!;
  const esc = `\\u${c.toString(16).padStart(4, "0")}`;
  return Buffer.concat([line.subarray(0, k + 1), B(esc), line.subarray(k + 2)]);
}

function genString(rng: Rng): Buffer[] {
  const parts: Buffer[] = [B('"')];
  const n = rng() < 0.1 ? int(rng, 400) : int(rng, 12);
  // Most strings hold only valid escapes; the rest draw from everything.
  const range = rng() < 0.85 ? 0.93 : 1;
  for (let i = 0; i < n; i++) {
    const r = rng() * range;
    if (r < 0.55) parts.push(B(pickOf(rng, ["a", "bc", "def ", "xyzw", "12345", "é", "日", "🙂"])));
    else if (r < 0.85)
      parts.push(
        B(pickOf(rng, ["\\n", '\\"', "\\\\", "\\/", "\\t", "\\u00e9", "\\uD800", "\\uDFFF"])),
      );
    else if (r < 0.93) parts.push(Buffer.from([pickOf(rng, [0x80, 0xbf, 0xc3, 0xe6, 0xff, 0x7f])]));
    else if (r < 0.97) parts.push(B(pickOf(rng, ["\\x", "\\u12", "\\u12G4", "\\'", "\\U0041"])));
    else parts.push(Buffer.from([int(rng, 0x20)]));
  }
  parts.push(B('"'));
  return parts;
}

function genNumber(rng: Rng): string {
  if (rng() < 0.05) {
    return pickOf(rng, ["01", "-", "1.", ".5", "+1", "1e", "1e+", "--1", "0x1", "1.e3", "-.1"]);
  }
  let s = rng() < 0.3 ? "-" : "";
  s += rng() < 0.3 ? "0" : String(1 + int(rng, 99999));
  if (rng() < 0.3) s += `.${int(rng, 1000)}`;
  if (rng() < 0.2) s += `${pickOf(rng, ["e", "E"])}${pickOf(rng, ["", "+", "-"])}${int(rng, 400)}`;
  return s;
}

function ws(rng: Rng): Buffer {
  if (rng() < 0.8) return Buffer.alloc(0);
  return B(pickOf(rng, [" ", "  ", "\t", "\r", "\n", " \r\n\t"]));
}

export function genValue(
  rng: Rng,
  depth: number,
  top: boolean,
  keys: readonly string[] = PI_KEYS,
): Buffer[] {
  const r = rng();
  const out: Buffer[] = [ws(rng)];
  if ((top && r < 0.75) || (!top && depth < 4 && r < 0.2)) {
    out.push(B("{"));
    const n = int(rng, 6);
    for (let i = 0; i < n; i++) {
      if (i > 0) out.push(B(","));
      out.push(ws(rng), B(`"${pickOf(rng, keys)}"`), ws(rng), B(":"));
      out.push(...genValue(rng, depth + 1, false, keys));
    }
    out.push(ws(rng), B("}"));
  } else if (depth < 4 && r < 0.85) {
    out.push(B("["));
    const n = int(rng, 4);
    for (let i = 0; i < n; i++) {
      if (i > 0) out.push(B(","));
      out.push(...genValue(rng, depth + 1, false, keys));
    }
    out.push(ws(rng), B("]"));
  } else {
    const k = rng();
    if (k < 0.5) out.push(...genString(rng));
    else if (k < 0.75) out.push(B(genNumber(rng)));
    else out.push(B(pickOf(rng, ["null", "true", "false", "nul", "tru"])));
  }
  out.push(ws(rng));
  return out;
}
