// `conversation usage` as a person or a script runs it: the table and its total, the JSON
// document, the line under each conversation that reads it (run as printed), a named time zone,
// and a clear usage error for each bad option.
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { tempDir } from "../helpers/reader.ts";
import { writeClaudeStore, writePiStore } from "../usage/stores.ts";
import { runCli } from "./run-cli.ts";

const PROJECTS = { a: "/work/app", b: "/work/lib" };

describe("cli/usage", () => {
  it("prints a table per day with a total, over Pi's and Claude Code's stores", async (t) => {
    const dir = tempDir(t, "cli-usage-");
    writePiStore(join(dir, "pi"), PROJECTS, { summary: false });
    writeClaudeStore(join(dir, "claude"), PROJECTS);
    const sources = ["--pi-sessions", join(dir, "pi"), "--claude-projects", join(dir, "claude")];
    const r = await runCli(t, ["usage", ...sources, "--utc"]);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split("\n");
    assert.match(lines[0] ?? "", /^Usage by day \(days in UTC\)$/);
    assert.match(r.stdout, /^2026-11-28 +[\d,]+/m);
    assert.match(r.stdout, /^Total +[\d,]+ .* \$\d+\.\d\d$/m);
    assert.match(r.stdout, /No price for the model claude-fake-9/);

    const json = await runCli(t, ["usage", ...sources, "--utc", "--json", "--by", "model"]);
    assert.equal(json.code, 0, json.stderr);
    const doc = JSON.parse(json.stdout) as {
      by: string;
      rows: { key: string }[];
      totals: { requests: number };
    };
    assert.equal(doc.by, "model");
    // 5 Pi replies (the fork's copies once) and 7 Claude replies (each of its lines once).
    assert.equal(doc.totals.requests, 12);
  });

  it("ends each conversation's row with a read line that runs as printed", async (t) => {
    const dir = tempDir(t, "cli-usage-");
    writeClaudeStore(join(dir, "claude"), PROJECTS);
    const r = await runCli(t, [
      "usage",
      "--claude-projects",
      join(dir, "claude"),
      "--by",
      "conversation",
    ]);
    assert.equal(r.code, 0, r.stderr);
    const reads = r.stdout.split("\n").filter((l) => l.startsWith("  ") && l.includes(" read "));
    assert.equal(reads.length, 3);
    const words = (reads[0] ?? "").trim().split(" ");
    const at = words.indexOf("read");
    const again = await runCli(
      t,
      words.slice(at).map((w) => w.replace(/^'(.*)'$/, "$1")),
    );
    assert.equal(again.code, 0, again.stderr);
  });

  for (const [args, message] of [
    [["--since", "2026-13-01"], /--since "2026-13-01" is not a day/],
    [["--by", "week"], /--by must be one of day, month, project, model, conversation/],
    [["--timezone", "Mars/Olympus"], /is not a time zone/],
    [["--utc", "--timezone", "UTC"], /not both/],
    [
      ["--since", "20261130", "--until", "2026-11-01"],
      /--since 2026-11-30 is after --until 2026-11-01/,
    ],
  ] as const) {
    it(`refuses ${args.join(" ")} with a usage error`, async (t) => {
      const r = await runCli(t, ["usage", ...args]);
      assert.equal(r.code, 2);
      assert.match(r.stderr, message);
    });
  }
});
