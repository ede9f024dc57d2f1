// Watching a controlled run (issue 15 item 1): with `--state-dir`'s registry naming a running
// controller (the real Controller over fake-pi), the live route relays the controller's
// `state`, `event` and `dialog` messages beside the follow, the board one observer connection
// per stream, each event's SSE id the event's own id.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ConversationClient } from "../../src/control/client/client.ts";
import { startControlledBoard } from "./controlled-board.ts";
import { send } from "./http-client.ts";
import { openStream, type SseEvent } from "./sse-client.ts";

describe("board live route relays a running controller", () => {
  it("streams state, events and dialogs of a controlled run to an observing stream", async (t) => {
    const { board, conversation, ctl } = await startControlledBoard(t);

    const cat = await send(board.port, "/api/conversations");
    const rows = (cat.json as { conversations: { conversation: string; live: boolean }[] })
      .conversations;
    assert.deepEqual(
      rows.map((r) => [r.conversation, r.live]),
      [[conversation, true]],
      "the catalogue marks the row live",
    );
    const page = await send(board.port, `/api/conversations/${conversation}/page`);
    const r = page.json as { follow: { id: string }; page: { branch: string } };
    const q = new URLSearchParams({ branch: r.page.branch, cursor: r.follow.id });
    const stream = await openStream(board.port, `/api/conversations/${conversation}/live?${q}`);
    t.after(() => stream.close());
    const seen: SseEvent[] = [];
    const until = async (what: string, ok: (e: SseEvent) => boolean): Promise<SseEvent> => {
      for (;;) {
        const e = await stream.next(15_000).catch(() => {
          throw new Error(`no ${what}; saw ${seen.map((x) => x.event).join(",")}`);
        });
        seen.push(e);
        if (ok(e)) return e;
      }
    };
    const hello = await until("controller", (e) => e.event === "controller");
    const info = JSON.parse(hello.data) as { running: boolean; role: string; connection: string };
    assert.equal(info.running, true);
    assert.equal(info.role, "observer", "the board watches as an observer");
    await until("state", (e) => e.event === "state");

    // Someone else (a terminal client) takes over and prompts: the page sees it happen.
    const terminal = new ConversationClient({ socketPath: ctl.socketPath, grant: "g-op" });
    t.after(() => terminal.close());
    const welcome = await terminal.connect();
    assert.equal((await terminal.takeover()).outcome, "admitted");
    const state = await until("the takeover's state", (e) => {
      if (e.event !== "state") return false;
      const s = JSON.parse(e.data) as { state: { controllerConnection: string | null } };
      return s.state.controllerConnection === welcome.connection;
    });
    assert.equal(state.id, null, "a state message carries no event id");
    const prompted = await terminal.prompt("hello from the terminal");
    assert.equal(prompted.outcome, "admitted");
    const event = await until("a stream event", (e) => e.event === "event");
    const body = JSON.parse(event.data) as { type: string; id: string; event: { kind: string } };
    assert.equal(body.type, "event");
    assert.equal(event.id, body.id, "the SSE id is the controller event's id");
    // The follow goes on beside the relay: the prompt's entries reach the file and the page.
    await until(
      "the appended prompt",
      (e) => e.event === "page" && /hello from the terminal/.test(e.data),
    );
    for (const raw of stream.raw.split("\n")) assert.ok(!raw.includes("\r"));

    // The first run settles before the next prompt (else it is refused busy on a slow machine).
    const settled = (e: SseEvent) => e.event === "event" && /"kind":"run-settled"/.test(e.data);
    if (!seen.some(settled)) await until("the run settling", settled);
    // A dialog the run opens reaches the stream too (disabled: the controller answers it).
    assert.equal((await terminal.prompt("dialog:confirm please")).outcome, "admitted");
    const dialog = await until("a dialog", (e) => e.event === "dialog");
    assert.match(dialog.data, /"disabled":true/);
    stream.close();
  });
});
