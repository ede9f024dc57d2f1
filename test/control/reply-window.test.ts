// The reply window (issue 18 item 2; docs/control-protocol.md, Request ids): per connection the
// controller holds the last REPLY_WINDOW_IDS replies, at most REPLY_WINDOW_BYTES, so an
// identical repeat is answered again; a repeat older than that is refused
// `conflicting-request`, never run again; and many fresh ids keep what is held bounded.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { REPLY_WINDOW_IDS, ReplyWindow } from "../../src/control/controller/reply-window.ts";
import type { Reply } from "../../src/control/protocol.ts";
import { startController, TestClient } from "./controller-fixture.ts";

const reply = (id: string, filler = 0): Reply => ({
  type: "reply",
  id,
  outcome: "admitted",
  result: { filler: "x".repeat(filler) },
});

/** Lets the window see settled replies (it counts a reply's bytes when it settles). */
const settle = () => new Promise<void>((ok) => setImmediate(ok));

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

describe("ReplyWindow", () => {
  it("holds the last ids, refuses older ones as forgotten, and forgets past the ledger", async () => {
    const w = new ReplyWindow({ ids: 4, bytes: 1 << 20, ledger: 8 });
    for (let i = 1; i <= 6; i++) w.add(`q-${i}`, `{"n":${i}}`, Promise.resolve(reply(`q-${i}`)));
    await settle();
    assert.equal(w.stats.ids, 4);
    for (const i of [3, 4, 5, 6]) assert.equal(w.lookup(`q-${i}`).kind, "held", `q-${i}`);
    for (const i of [1, 2]) assert.equal(w.lookup(`q-${i}`).kind, "forgotten", `q-${i}`);
    assert.equal(w.lookup("q-never").kind, "new");
    const held = w.lookup("q-6");
    assert.ok(held.kind === "held");
    assert.equal(held.canonical, `{"n":6}`);
    assert.equal((await held.reply).id, "q-6");
    // Three more: the ledger (8) no longer reaches q-1, which is then unknown (documented).
    for (let i = 7; i <= 9; i++) w.add(`q-${i}`, "{}", Promise.resolve(reply(`q-${i}`)));
    assert.equal(w.lookup("q-1").kind, "new");
    assert.equal(w.lookup("q-2").kind, "forgotten");
    assert.equal(w.stats.remembered, 8);
  });

  it("bounds the bytes held, but always keeps the newest reply", async () => {
    const w = new ReplyWindow({ ids: 100, bytes: 10_000, ledger: 100 });
    for (let i = 1; i <= 10; i++) w.add(`b-${i}`, "{}", Promise.resolve(reply(`b-${i}`, 3000)));
    await settle();
    assert.ok(w.stats.bytes <= 10_000, `bytes ${w.stats.bytes}`);
    assert.equal(w.stats.ids, 3, "three replies of ~3 kB fit in 10 kB");
    assert.equal(w.lookup("b-10").kind, "held");
    assert.equal(w.lookup("b-7").kind, "forgotten");
    // One reply larger than the whole window: it alone stays, so a repeat right after works.
    w.add("big", "{}", Promise.resolve(reply("big", 50_000)));
    await settle();
    assert.equal(w.stats.ids, 1);
    assert.equal(w.lookup("big").kind, "held");
  });

  it("counts a pending reply once it settles, and a pending one can be repeated", async () => {
    const w = new ReplyWindow({ ids: 10, bytes: 5_000, ledger: 10 });
    let resolve: (r: Reply) => void = () => {};
    w.add("slow", "{}", new Promise<Reply>((ok) => (resolve = ok)));
    assert.equal(w.lookup("slow").kind, "held");
    const before = w.stats.bytes;
    resolve(reply("slow", 2000));
    await settle();
    assert.ok(w.stats.bytes > before + 2000);
  });

  it("80,000 fresh ids with 2 kB replies keep the held count, bytes and heap bounded", async () => {
    const w = new ReplyWindow();
    gc();
    const heap0 = process.memoryUsage().heapUsed;
    for (let i = 0; i < 80_000; i++) {
      w.add(`q-${i}`, `{"id":"q-${i}","op":"observe"}`, Promise.resolve(reply(`q-${i}`, 2000)));
      if (i % 1000 === 999) await settle();
    }
    await settle();
    gc();
    const grown = process.memoryUsage().heapUsed - heap0;
    const s = w.stats;
    assert.equal(s.ids, REPLY_WINDOW_IDS);
    assert.ok(s.bytes <= 1024 * 1024, `bytes ${s.bytes}`);
    assert.equal(s.remembered, 65_536);
    // Unbounded, 80,000 replies of 2 kB would hold over 160 MB; the window holds ~0.5 MB and
    // the ledger 65,536 numbers.
    assert.ok(grown < 24 * 1024 * 1024, `the heap grew ${(grown / 1048576).toFixed(1)} MB`);
    assert.equal(w.lookup("q-0").kind, "new", "older than the ledger");
    assert.equal(w.lookup("q-20000").kind, "forgotten");
    assert.equal(w.lookup("q-79999").kind, "held");
  });
});

describe("the controller's reply window", () => {
  it("answers an identical repeat in the window, refuses an older one conflicting-request", async (t) => {
    const { ctl } = await startController(t);
    const { c } = await TestClient.welcomed(t, ctl.socketPath);
    const n = REPLY_WINDOW_IDS + 44;
    const line = (i: number) => JSON.stringify({ type: "request", id: `o-${i}`, op: "observe" });
    c.raw(`${Array.from({ length: n }, (_, i) => line(i)).join("\n")}\n`);
    const replies = await Promise.all(Array.from({ length: n }, (_, i) => c.reply(`o-${i}`)));
    assert.ok(replies.every((m) => m.outcome === "admitted"));

    // The newest: the same reply again, byte for byte.
    const from = c.messages.length;
    c.raw(`${line(n - 1)}\n`);
    const again = await c.reply(`o-${n - 1}`, from);
    assert.equal(JSON.stringify(again), JSON.stringify(replies[n - 1]));

    // The oldest left the window: refused, and not run again.
    const from2 = c.messages.length;
    c.raw(`${line(0)}\n`);
    const old = await c.reply("o-0", from2);
    assert.equal(old.outcome, "refused:conflicting-request", JSON.stringify(old));
    assert.equal(old.refusal, "conflicting-request");
    assert.match(String(old.message), /no longer held/);
    assert.match(String(old.message), /fresh id/);

    // Other content under an id in the window is the usual conflict.
    const from3 = c.messages.length;
    c.raw(`${JSON.stringify({ type: "request", id: `o-${n - 2}`, op: "observe", limit: 3 })}\n`);
    const conflict = await c.reply(`o-${n - 2}`, from3);
    assert.equal(conflict.outcome, "refused:conflicting-request");
    assert.match(String(conflict.message), /other content/);
  });
});
