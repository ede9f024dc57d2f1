// resolveSources (src/cli/config.ts): the one place that decides what a reading command reads,
// Pi's store included, and the notice printed when nothing was named.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseConfig, resolveSources } from "../../src/cli/config.ts";

const where = { env: {}, home: "/h" };

function ok<T>(r: { ok: true; value: T } | { ok: false; error: string }): T {
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

function errorOf(r: { ok: boolean; error?: string }): string {
  assert.equal(r.ok, false);
  return r.error ?? "";
}

describe("resolveSources", () => {
  it("reads Pi's default store with a one-line notice when no source flag is given", () => {
    const { sources, notice } = ok(resolveSources({}, where));
    assert.deepEqual(sources, {
      specs: [{ kind: "pi-agent", sessionsDir: "/h/.pi/agent/sessions" }],
      registrations: [],
    });
    assert.equal(
      notice,
      "No source named: reading Pi's sessions in /h/.pi/agent/sessions (--pi; see --help for others).",
    );
    const viaEnv = ok(resolveSources({}, { env: { PI_CODING_AGENT_DIR: "/agent" }, home: "/h" }));
    assert.deepEqual(viaEnv.sources.specs, [{ kind: "pi-agent", sessionsDir: "/agent/sessions" }]);
  });

  it("names the store with --pi or --pi-sessions and prints no notice", () => {
    const pi = ok(resolveSources({ pi: true }, where));
    assert.equal(pi.notice, null);
    assert.deepEqual(pi.sources.specs, [
      { kind: "pi-agent", sessionsDir: "/h/.pi/agent/sessions" },
    ]);
    const other = ok(resolveSources({ piSessions: "/x/sessions" }, where));
    assert.deepEqual(other.sources.specs, [{ kind: "pi-agent", sessionsDir: "/x/sessions" }]);
  });

  it("adds the store to --project's seats when both are given", () => {
    const both = ok(resolveSources({ project: "/p", seat: ["a"], pi: true }, where));
    assert.deepEqual(both.sources.specs, [
      { kind: "repository", projectRoot: "/p", seat: "a" },
      { kind: "pi-agent", sessionsDir: "/h/.pi/agent/sessions" },
    ]);
    assert.equal(both.notice, null);
  });

  it("refuses --pi with --pi-sessions, an empty --pi-sessions, and --seat without --project", () => {
    assert.match(errorOf(resolveSources({ pi: true, piSessions: "/x" }, where)), /give one/);
    assert.match(errorOf(resolveSources({ piSessions: "" }, where)), /needs a directory/);
    assert.match(errorOf(resolveSources({ seat: ["a"], pi: true }, where)), /--seat goes with/);
  });

  it("accepts a closed pi-agent spec in a config file, its path from the file's folder", () => {
    const value = ok(
      parseConfig({ specs: [{ kind: "pi-agent", sessionsDir: "agent/sessions" }] }, "/base"),
    );
    assert.deepEqual(value.specs, [{ kind: "pi-agent", sessionsDir: "/base/agent/sessions" }]);
    const extra = parseConfig({ specs: [{ kind: "pi-agent", sessionsDir: "/s", seat: "x" }] }, "/");
    assert.match(errorOf(extra), /specs\[0\]: unknown field "seat"/);
    const none = parseConfig({ specs: [{ kind: "pi-agent" }] }, "/");
    assert.match(errorOf(none), /specs\[0\]\.sessionsDir: expected the path/);
  });
});
