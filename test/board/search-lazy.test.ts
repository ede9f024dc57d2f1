// A board reading in worker lanes opens its search index on the first search, not at start:
// a board nobody searches leaves nothing in the cache directory.
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { startBoard } from "../../src/board/index.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import { tempDir } from "../helpers/reader.ts";
import { send } from "./http-client.ts";
import { SEARCH_WORD, writeReadingFixture } from "./reading-fixture.ts";

describe("the board's search lane", () => {
  it("makes no cache until the first search, then answers from the index it made", async (t) => {
    const fx = writeReadingFixture(t);
    const cacheDir = join(tempDir(t, "lazy-cache-"), "cache");
    const specs = [
      { kind: "repository" as const, projectRoot: join(fx.base, "gamma"), seat: "main" },
    ];
    const board = await startBoard({
      sources: { specs, registrations: [], search: { cacheDir } },
      log: () => {},
    });
    t.after(() => board.close());
    const catalogue = await send(board.port, "/api/conversations");
    assert.equal(catalogue.status, 200);
    assert.equal(existsSync(cacheDir), false, "no cache before a search");
    const found = await send(board.port, `/api/search?q=${SEARCH_WORD}`, {
      timeoutMs: DEADLINE_MS,
    });
    assert.equal(found.status, 200);
    const hits = (found.json as { hits: { conversation: string }[] }).hits;
    assert.ok(
      hits.some((h) => h.conversation === fx.conversation),
      "the fixture's hit",
    );
    assert.equal(existsSync(join(cacheDir, "search-0-of-2.sqlite")), true);
  });

  it("answers search-unavailable 503 with the reason when its cache cannot be made", async (t) => {
    const fx = writeReadingFixture(t);
    // A file where the cache folder's parent should be: mkdir fails with ENOTDIR.
    const file = join(tempDir(t, "lazy-file-"), "a-file");
    writeFileSync(file, "");
    const specs = [
      { kind: "repository" as const, projectRoot: join(fx.base, "gamma"), seat: "main" },
    ];
    const logged: string[] = [];
    const board = await startBoard({
      sources: { specs, registrations: [], search: { cacheDir: join(file, "cache") } },
      log: (line) => logged.push(line),
    });
    t.after(() => board.close());
    for (let i = 0; i < 2; i++) {
      const r = await send(board.port, `/api/search?q=${SEARCH_WORD}`, { timeoutMs: DEADLINE_MS });
      assert.equal(r.status, 503, r.text);
      const refusal = (r.json as { refusal: { code: string; message: string } }).refusal;
      assert.equal(refusal.code, "search-unavailable");
      assert.equal(
        refusal.message,
        `Search is off on this board: the search cache ${file}/cache cannot be made: a part of the path is a file, not a folder (ENOTDIR); set XDG_CACHE_HOME to a folder of your own (the cache is $XDG_CACHE_HOME/mosaic-conversation, else ~/.cache/mosaic-conversation).`,
      );
    }
    const catalogue = await send(board.port, "/api/conversations");
    assert.equal(catalogue.status, 200, "the board reads on");
    assert.ok(logged.some((l) => l.startsWith("board: search is off: the search cache ")));
  });
});
