import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { pathToFileURL } from "node:url";

const ROOT = new URL("../", import.meta.url).pathname;

describe("package", () => {
  it("pins Pi exactly and has no runtime dependencies", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as Record<
      string,
      unknown
    >;
    assert.equal(pkg.dependencies, undefined);
    const dev = pkg.devDependencies as Record<string, string>;
    assert.equal(dev["@earendil-works/pi-coding-agent"], "0.85.1");
    assert.equal((pkg.engines as Record<string, string>).node, ">=24");
  });

  it("builds dist/ with declarations that the exports serve", (t) => {
    const out = mkdtempSync(join(tmpdir(), "conv-build-"));
    t.after(() => rmSync(out, { recursive: true, force: true }));
    execFileSync(
      process.execPath,
      [
        join(ROOT, "node_modules/typescript/bin/tsc"),
        "-p",
        join(ROOT, "tsconfig.build.json"),
        "--outDir",
        out,
      ],
      {
        stdio: "pipe",
        timeout: 120_000,
      },
    );
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
      exports: Record<string, { types?: string; default?: string }>;
    };
    const main = pkg.exports["."];
    assert.ok(main?.types && main.default);
    const rel = (p: string) => p.replace(/^\.\/dist\//, "");
    assert.ok(existsSync(join(out, rel(main.types))), "index.d.ts is emitted");
    assert.ok(existsSync(join(out, rel(main.default))), "index.js is emitted");
    return import(pathToFileURL(join(out, rel(main.default))).href).then(
      (mod: Record<string, unknown>) => {
        assert.equal(typeof mod.createReader, "function");
        assert.equal(typeof mod.rootsFromSpecs, "function");
        assert.equal(typeof mod.Refusal, "function");
      },
    );
  });
});
