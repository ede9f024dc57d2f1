// What a search hit shows (issue 24 item 10): the project as the catalogue names it (in Pi's
// store the session's cwd, not its encoded folder), and a snippet of the visible plain text —
// Markdown as rendered, tool calls as their views show them — with the matches still marked.
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import { createReader, rootsFromSpecs } from "../../src/index.ts";
import { encodeCwd } from "../../src/reader/harness/pi/pi-store.ts";
import { createSearch, type SearchHit } from "../../src/search/index.ts";
import { header, tempDir, ts, user } from "../helpers/reader.ts";

const line = (obj: object) => `${JSON.stringify(obj)}\n`;

function call(id: string, parentId: string, name: string, args: object, n: number): object {
  return {
    type: "message",
    id,
    parentId,
    timestamp: ts(n),
    message: {
      role: "assistant",
      content: [{ type: "toolCall", id: `call-${id}`, name, arguments: args }],
      stopReason: "toolUse",
      timestamp: n,
    },
  };
}

/** A store session of `cwd` holding `lines` after its header; the search over that store. */
function storeSearch(t: TestContext, entries: object[]) {
  const base = tempDir(t, "hits-shown-");
  const store = join(base, "sessions");
  const cwd = join(base, "home", "me", "code", "infra");
  const dir = join(store, encodeCwd(cwd));
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "2026-01-01_x.jsonl"), [header(cwd), ...entries].map(line).join(""));
  const specs = [{ kind: "pi-agent" as const, sessionsDir: store }];
  const reader = createReader({ roots: () => rootsFromSpecs(specs, []) });
  const opened = createSearch({
    roots: () => rootsFromSpecs(specs, []),
    catalogue: () => reader.catalogue(),
    cacheDir: tempDir(t, "hits-cache-"),
  });
  assert.ok(opened.ok);
  t.after(() => opened.search.close());
  const hits = (q: string): SearchHit[] => {
    const r = opened.search.search(q, 20);
    assert.ok(r.ok, JSON.stringify(r));
    return r.hits;
  };
  return { cwd, hits };
}

const marked = (h: SearchHit | undefined) =>
  (h?.matches ?? []).map(([a, b]) => h?.snippet.slice(a, b));

describe("search hits as shown", () => {
  it("names a store hit's project as the catalogue does, by the session's cwd", (t) => {
    const s = storeSearch(t, [user("u1", null, "the gazelleite question", 1)]);
    const [hit] = s.hits("gazelleite");
    assert.equal(hit?.project, s.cwd);
    assert.equal(hit?.seat, "pi-agent");
  });

  it("cuts the snippet from Markdown as rendered, with the match marked", (t) => {
    const s = storeSearch(t, [
      user(
        "u1",
        null,
        "# Plan\n\nUse **bold zebracorn** and `inline code`, see [the docs](https://example.com/hidden-target).\n\n- [x] done item\n- second item",
        1,
      ),
    ]);
    const [hit] = s.hits("zebracorn");
    assert.ok(hit);
    assert.equal(
      hit.snippet,
      "Plan Use bold zebracorn and inline code, see the docs. ☑ done item • second item",
    );
    assert.deepEqual(marked(hit), ["zebracorn"]);
    assert.doesNotMatch(hit.snippet, /\*\*|`|hidden-target|#/);
  });

  it("shows a tool call as its view does, never as raw JSON", (t) => {
    const s = storeSearch(t, [
      user("u1", null, "fix it", 1),
      call(
        "c1",
        "u1",
        "edit",
        { path: "src/a.ts", oldText: "let quokkaite = 1;", newText: "let quokkaite = 2;" },
        2,
      ),
      call("c2", "c1", "bash", { command: "grep -rn wombatite src" }, 3),
      call("c3", "c2", "fetch_url", { url: "https://example.org", why: "numbatite check" }, 4),
    ]);
    const [edit] = s.hits("quokkaite");
    assert.equal(edit?.snippet, "edit src/a.ts - let quokkaite = 1; + let quokkaite = 2;");
    assert.deepEqual(marked(edit), ["quokkaite", "quokkaite"]);
    const [bash] = s.hits("wombatite");
    assert.equal(bash?.snippet, "$ grep -rn wombatite src");
    const [other] = s.hits("numbatite");
    assert.equal(other?.snippet, "fetch_url url: https://example.org why: numbatite check");
    for (const h of [edit, bash, other]) assert.doesNotMatch(h?.snippet ?? "", /[{}"]/);
  });

  it("keeps hostile text as data: escapes and bidi controls reach the sinks unchanged", (t) => {
    const evil = "\u001b[31mred\u001b[0m \u202eobviouslyfake <script>alert(1)</script> ocelotite";
    const s = storeSearch(t, [user("u1", null, evil, 1)]);
    const [hit] = s.hits("ocelotite");
    assert.ok(hit);
    // Markdown leaves raw HTML as text (markdown-it with html off); the sinks make it visible.
    assert.ok(hit.snippet.includes("\u001b[31mred"));
    assert.ok(hit.snippet.includes("<script>alert(1)</script>"));
    assert.deepEqual(marked(hit), ["ocelotite"]);
  });
});
