// `conversation search` as a newcomer reads its hits (issue 24 item 10): the project as the
// catalogue names it, times as the catalogue writes them, snippets as visible plain text with
// hostile characters shown as markers, never acted on by the terminal.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { hitText } from "../../src/cli/search.ts";
import { encodeCwd } from "../../src/reader/harness/pi/pi-store.ts";
import { header, tempDir, user } from "../helpers/reader.ts";
import { runCli } from "./run-cli.ts";

describe("conversation search hits", () => {
  it("says a hit's time as the catalogue does", () => {
    const hit = {
      conversation: "pi-0123456789abcdef0123456789abcdef01234567",
      branch: "main",
      entry: "n.u1",
      snippet: "with zanzibarite in it",
      matches: [[5, 16]] as [number, number][],
      title: "A title",
      project: "/home/me/code/infra",
      seat: "pi-agent",
      timestamp: "2026-01-01T00:00:01.250Z",
    };
    const text = hitText(hit, ["--pi"], 100);
    assert.match(
      text,
      /\/home\/me\/code\/infra \/ pi-agent · branch main · entry n\.u1 · 2026-01-01 00:00:01 UTC\n/,
    );
    assert.doesNotMatch(text, /T00:00:01/);
  });

  it("names the store's project by its cwd and shows hostile text as markers", async (t) => {
    const base = tempDir(t, "search-hits-");
    const store = join(base, "sessions");
    const cwd = join(base, "home", "me", "code", "infra");
    const dir = join(store, encodeCwd(cwd));
    mkdirSync(dir, { recursive: true });
    const evil = "**Bold** \u001b[2J\u202egnirts ocelotite [link](https://example.com/x)";
    writeFileSync(
      join(dir, "2026-01-01T00-00-00-000Z_x.jsonl"),
      [header(cwd), user("u1", null, evil, 1)].map((l) => `${JSON.stringify(l)}\n`).join(""),
    );
    const r = await runCli(t, ["search", "ocelotite", "--pi-sessions", store], {
      env: { XDG_CACHE_HOME: join(base, "cache") },
    });
    assert.equal(r.code, 0, r.stderr);
    // The block wrapped to 80 columns, read as one text.
    const joined = r.stdout.replace(/\n +/g, " ");
    assert.ok(
      joined.includes(`${cwd} / pi-agent · branch main · entry n.u1 · 2026-01-01 00:00:01 UTC`),
      joined,
    );
    for (const raw of ["\u001b", "\u202e"]) {
      assert.ok(!r.stdout.includes(raw), "no raw escape or bidi control reaches the terminal");
    }
    // The snippet (the title is the catalogue's: the first prompt as typed).
    const snippet = r.stdout.split("\n").find((l) => l.includes("[ocelotite]")) ?? "";
    assert.match(snippet, /^ {2}Bold \^\[\[2J<U\+202E>gnirts \[ocelotite\] link$/);
  });
});
