// Assembles the reader's WebAssembly (src/reader/wasm/*.wat) into the TypeScript module that
// carries its bytes (src/reader/wasm/json-string.ts), committed so that neither the package nor
// a checkout needs an assembler at run time. Run by `npm run build:wasm` after editing the .wat;
// test/reader/wasm.test.ts fails when the committed bytes are not the source's.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import initWabt from "wabt";

const dir = join(import.meta.dirname, "..", "src", "reader", "wasm");

/** The module `name`.wat assembles to, as bytes. */
export async function assemble(name: string): Promise<Buffer> {
  const wabt = await initWabt();
  const source = readFileSync(join(dir, `${name}.wat`), "utf8");
  const mod = wabt.parseWat(`${name}.wat`, source, { simd: true });
  try {
    mod.validate();
    return Buffer.from(mod.toBinary({}).buffer);
  } finally {
    mod.destroy();
  }
}

/** The TypeScript module that carries `bytes`. */
export function moduleText(name: string, bytes: Buffer): string {
  const lines = bytes.toString("base64").match(/.{1,96}/g) ?? [];
  return [
    `// Generated from ${name}.wat by scripts/build-wasm.ts (npm run build:wasm): do not edit.`,
    "export const BYTES_BASE64 =",
    `${lines.map((l) => `  "${l}"`).join(" +\n")};`,
    "",
  ].join("\n");
}

if (import.meta.main) {
  const bytes = await assemble("json-string");
  writeFileSync(join(dir, "json-string.ts"), moduleText("json-string", bytes));
  process.stdout.write(`src/reader/wasm/json-string.ts: ${bytes.length} bytes of WebAssembly\n`);
}
