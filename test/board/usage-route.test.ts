// GET /api/usage on a board reading in worker lanes: the report of its sources, counted in the
// search lane through an index in its cache (made on the first request), the same figures as
// `conversation usage --json`; a bad group, day or zone is bad-query 400; a cache that cannot
// be made is usage-unavailable 503, with the reason.
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { startBoard } from "../../src/board/index.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";
import { tempDir } from "../helpers/reader.ts";
import { writeClaudeStore } from "../usage/stores.ts";
import { send } from "./http-client.ts";

const PROJECTS = { a: "/work/app", b: "/work/lib" };

async function board(t: Parameters<typeof tempDir>[0], cacheDir: string) {
  const dir = tempDir(t, "usage-route-");
  writeClaudeStore(join(dir, "claude"), PROJECTS);
  const b = await startBoard({
    sources: {
      specs: [{ kind: "claude-code", projectsDir: join(dir, "claude") }],
      registrations: [],
      search: { cacheDir },
    },
    log: () => {},
  });
  t.after(() => b.close());
  return b;
}

describe("board/usage-route", () => {
  it("answers the report by model in the zone asked, from an index made on the first request", async (t) => {
    const cacheDir = join(tempDir(t, "usage-cache-"), "cache");
    const b = await board(t, cacheDir);
    assert.equal(existsSync(cacheDir), false, "no cache before a request");
    const r = await send(b.port, "/api/usage?by=model&tz=Asia%2FTokyo", { timeoutMs: DEADLINE_MS });
    assert.equal(r.status, 200, r.text);
    const doc = r.json as {
      ok: boolean;
      by: string;
      timeZone: string;
      totals: { requests: number };
      unpriced: string[];
    };
    assert.deepEqual(
      [doc.ok, doc.by, doc.timeZone, doc.totals.requests],
      [true, "model", "Asia/Tokyo", 7],
    );
    assert.deepEqual(doc.unpriced, ["claude-fake-9"]);
    assert.equal(existsSync(join(cacheDir, "usage.sqlite")), true);
  });

  for (const [query, word] of [
    ["by=week", "by="],
    ["since=2026-02-30", "since="],
    ["tz=Mars%2FOlympus", "tz="],
  ] as const) {
    it(`refuses ${query} as bad-query 400`, async (t) => {
      const b = await board(t, join(tempDir(t, "usage-cache-"), "cache"));
      const r = await send(b.port, `/api/usage?${query}`, { timeoutMs: DEADLINE_MS });
      assert.equal(r.status, 400, r.text);
      const refusal = (r.json as { refusal: { code: string; message: string } }).refusal;
      assert.equal(refusal.code, "bad-query");
      assert.ok(refusal.message.startsWith(word), refusal.message);
    });
  }

  it("answers usage-unavailable 503 with the reason when its cache cannot be made", async (t) => {
    const file = join(tempDir(t, "usage-file-"), "a-file");
    writeFileSync(file, "");
    const b = await board(t, join(file, "cache"));
    const r = await send(b.port, "/api/usage", { timeoutMs: DEADLINE_MS });
    assert.equal(r.status, 503, r.text);
    const refusal = (r.json as { refusal: { code: string; message: string } }).refusal;
    assert.equal(refusal.code, "usage-unavailable");
    assert.match(refusal.message, /^Usage is off on this board: .*ENOTDIR/);
  });
});
