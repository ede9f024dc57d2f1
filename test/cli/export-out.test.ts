// `conversation export` while the branch streams (issue 22 item 9): --out FILE is written
// through a temporary file beside it and renamed over FILE only when the export is whole; a
// refusal part-way (the session replaced) or an interrupt leaves FILE as it was and no
// temporary file behind; on stdout the document ends with a section saying it stopped.
import assert from "node:assert/strict";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { type ExportCommand, runExport } from "../../src/cli/export.ts";
import type { Io } from "../../src/cli/io.ts";
import type { Reader } from "../../src/reader/reader.ts";
import { rootsFromSpecs } from "../../src/reader/sources.ts";
import { replacingReader, writeLongSession } from "../export/export-fixture.ts";
import { tempDir } from "../helpers/reader.ts";

function bufferIo(): Io & { stdout(): string; stderr(): string } {
  let out = "";
  let err = "";
  return {
    out: (text) => {
      out += text;
    },
    err: (text) => {
      err += text;
    },
    width: 80,
    stdout: () => out,
    stderr: () => err,
  };
}

function commandFor(id: string, out?: string): ExportCommand {
  return { name: "export", sources: {}, id, format: "md", ...(out === undefined ? {} : { out }) };
}

/** `reader`, calling `each` before every `next`. */
function watching(reader: Reader, each: () => void): Reader {
  return {
    ...reader,
    next: (r) => {
      each();
      return reader.next(r);
    },
  };
}

describe("conversation export --out", () => {
  it("writes into a temporary file beside FILE and renames it over FILE at the end", async (t) => {
    const long = writeLongSession(t, 200, 30_000);
    const roots = rootsFromSpecs(
      [{ kind: "repository", projectRoot: long.projectRoot, seat: "main" }],
      [],
    );
    const dir = tempDir(t, "export-out-");
    const target = join(dir, "x.md");
    writeFileSync(target, "an older export\n");
    const seen: string[][] = [];
    const reader = watching(long.reader, () => seen.push(readdirSync(dir).sort()));
    const io = bufferIo();
    assert.equal(await runExport(reader, roots, commandFor(long.conversation, target), io), 0);
    assert.ok(seen.length >= 5, `${seen.length} pages after the first`);
    for (const names of seen) {
      assert.equal(names.length, 2, names.join(" "));
      assert.equal(names[1], "x.md");
      assert.match(names[0] ?? "", /^\.x\.md\.\d+-[0-9a-f]{8}\.partial$/);
    }
    assert.equal(readFileSync(target, "utf8").split("\n", 1)[0], "# Run step 0");
    assert.deepEqual(readdirSync(dir), ["x.md"], "no temporary file left");
    assert.match(io.stderr(), /^wrote .*x\.md \(\d+ characters\)\n$/);
  });

  it("leaves FILE as it was, and no temporary file, when a refusal stops the export part-way", async (t) => {
    const long = writeLongSession(t, 200, 30_000);
    const dir = tempDir(t, "export-out-");
    const target = join(dir, "x.md");
    writeFileSync(target, "an older export\n");
    const io = bufferIo();
    const reader = replacingReader(long.reader, long.file, 2);
    assert.equal(await runExport(reader, [], commandFor(long.conversation, target), io), 1);
    assert.equal(readFileSync(target, "utf8"), "an older export\n");
    assert.deepEqual(readdirSync(dir), ["x.md"]);
    assert.match(
      io.stderr(),
      new RegExp(
        `^refused: source-replaced: .+ The export stopped part-way: Nothing was written to --out ${target.replace(/[.]/g, "\\.")}\\. Export the branch again\\.\\n$`,
      ),
    );
    assert.equal(io.stdout(), "");
  });

  it("ends the document on stdout with a section saying it stopped, and exits 1", async (t) => {
    const long = writeLongSession(t, 200, 30_000);
    const io = bufferIo();
    const reader = replacingReader(long.reader, long.file, 2);
    assert.equal(await runExport(reader, [], commandFor(long.conversation), io), 1);
    assert.match(
      io.stdout(),
      /\n## Export stopped\n\n> \*\*This export is incomplete\.\*\* source-replaced: /,
    );
    assert.match(
      io.stderr(),
      /^refused: source-replaced: .+ The document on stdout stops there, with a last section saying so\. Export the branch again\.\n$/,
    );
  });

  it("stops at an interrupt between two chunks, and writes nothing to FILE", async (t) => {
    const long = writeLongSession(t, 200, 30_000);
    const dir = tempDir(t, "export-out-");
    const target = join(dir, "x.md");
    const stop = new AbortController();
    let nexts = 0;
    const reader = watching(long.reader, () => {
      if (++nexts === 2) stop.abort();
    });
    const io = bufferIo();
    assert.equal(
      await runExport(reader, [], commandFor(long.conversation, target), io, stop.signal),
      1,
    );
    assert.deepEqual(readdirSync(dir), []);
    assert.equal(
      io.stderr(),
      `stopped: the export was interrupted. Nothing was written to --out ${target}.\n`,
    );
  });
});
