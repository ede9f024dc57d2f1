import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, it } from "node:test";
import { parseConfig, readConfigFile, sourcesFromFlags } from "../../src/cli/config.ts";
import { tempDir } from "../helpers/reader.ts";

const registration = {
  seat: "other",
  layout: "repo",
  project: "/p",
  sessionsDir: "/p/.pi/state/other/sessions",
  harness: "claude-code",
  startedAt: "2026-01-01T00:00:00Z",
};

function errorOf(r: { ok: true } | { ok: false; error: string }): string {
  assert.equal(r.ok, false, "expected an error");
  return r.ok ? "" : r.error;
}

describe("cli sources", () => {
  it("reads one project with seat main when --project comes without --seat", () => {
    const r = sourcesFromFlags({ project: "some/dir" });
    assert.deepEqual(r, {
      ok: true,
      value: {
        specs: [{ kind: "repository", projectRoot: resolve("some/dir"), seat: "main" }],
        registrations: [],
      },
    });
  });

  it("reads every seat named when --seat repeats", () => {
    const r = sourcesFromFlags({ project: "/p", seat: ["a", "b"] });
    assert.ok(r.ok);
    assert.deepEqual(
      r.value.specs.map((s) => (s.kind === "repository" ? s.seat : s.kind)),
      ["a", "b"],
    );
  });

  it("refuses flags that do not name one source when they conflict or are missing", () => {
    assert.match(errorOf(sourcesFromFlags({ seat: ["x"] })), /--seat goes with --project/);
    assert.match(errorOf(sourcesFromFlags({ config: "c", project: "p" })), /together/);
    assert.match(errorOf(sourcesFromFlags({ config: "c", seat: ["x"] })), /--seat goes with/);
    assert.match(errorOf(sourcesFromFlags({ project: "" })), /needs a directory/);
    assert.match(errorOf(sourcesFromFlags({ project: "/p", seat: ["../x"] })), /not a seat name/);
  });

  it("resolves relative paths from the config's folder when a config names them", () => {
    const r = parseConfig(
      {
        specs: [
          { kind: "repository", projectRoot: "proj", seat: "main" },
          { kind: "connector", url: "x" },
        ],
        registrations: [{ ...registration, sessionsDir: "proj/.pi/state/other/sessions" }],
      },
      "/base",
    );
    assert.deepEqual(r, {
      ok: true,
      value: {
        specs: [
          { kind: "repository", projectRoot: "/base/proj", seat: "main" },
          { kind: "connector", url: "x" },
        ],
        registrations: [{ ...registration, sessionsDir: "/base/proj/.pi/state/other/sessions" }],
      },
    });
  });

  it("names the field at fault when a config is wrong", () => {
    const repo = { kind: "repository", projectRoot: "/p", seat: "main" };
    const cases: [unknown, string][] = [
      [[], "expected a JSON object with specs"],
      [{ specs: [], extra: 1 }, 'unknown field "extra"'],
      [{}, "specs: expected an array"],
      [{ specs: [1] }, "specs[0]: expected an object"],
      [
        { specs: [{ kind: "global" }] },
        'specs[0].kind: expected "repository", "pi-agent", "claude-code", "fleet" or "connector"',
      ],
      [{ specs: [{ ...repo, sessionsDir: "/x" }] }, 'specs[0]: unknown field "sessionsDir"'],
      [{ specs: [{ ...repo, projectRoot: 3 }] }, "specs[0].projectRoot: expected a directory path"],
      [{ specs: [{ ...repo, seat: "a/b" }] }, "specs[0].seat: expected a seat name"],
      [{ specs: [repo], registrations: {} }, "registrations: expected an array"],
      [
        { specs: [repo], registrations: [{ ...registration, harness: 1 }] },
        "registrations[0].harness: expected a string",
      ],
      [
        { specs: [repo], registrations: [{ ...registration, startedAt: "soon" }] },
        "registrations[0].startedAt",
      ],
      [
        { specs: [repo], registrations: [{ ...registration, pid: 1 }] },
        'registrations[0]: unknown field "pid"',
      ],
    ];
    for (const [value, message] of cases) {
      const error = errorOf(parseConfig(value, "/"));
      assert.ok(error.startsWith(message), `${JSON.stringify(value)}: ${error}`);
    }
  });

  it("says why a config file cannot be used when it is missing or not JSON", (t) => {
    const dir = tempDir(t, "cli-config-");
    assert.match(errorOf(readConfigFile(join(dir, "none.json"))), /cannot read it \(ENOENT\)/);
    const file = join(dir, "bad.json");
    writeFileSync(file, "{ specs: [] }");
    assert.match(errorOf(readConfigFile(file)), /bad\.json: not JSON/);
  });
});
