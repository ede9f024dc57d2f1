// The loopback Anthropic stand-in, spoken to over HTTP as Claude Code speaks to it: the SSE event
// order of a streamed message, the whole form, count_tokens, errors, held replies, lanes.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { firstPromptOf, startFakeAnthropic } from "./fake-anthropic.ts";

type Sse = { event: string; data: Record<string, unknown> };

function parseSse(text: string): Sse[] {
  return text
    .split("\n\n")
    .filter((chunk) => chunk.trim() !== "")
    .map((chunk) => {
      const lines = chunk.split("\n");
      const event = lines.find((l) => l.startsWith("event: "))?.slice(7) ?? "";
      const data = JSON.parse(lines.find((l) => l.startsWith("data: "))?.slice(6) ?? "{}");
      return { event, data };
    });
}

async function post(url: string, body: object): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

describe("fake-anthropic", () => {
  it("streams a message as the API does: start, blocks with deltas, delta with usage, stop", async (t) => {
    const fake = await startFakeAnthropic({
      replies: [
        {
          kind: "message",
          content: [
            { type: "thinking", thinking: "hmm, yes" },
            { type: "redacted_thinking", data: "opaque" },
            { type: "text", text: "hello there" },
            { type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "ls" } },
          ],
          usage: { input_tokens: 7, output_tokens: 9, cache_read_input_tokens: 3 },
        },
      ],
    });
    t.after(() => fake.close());
    const res = await post(`${fake.baseUrl}/v1/messages?beta=true`, {
      model: "m",
      stream: true,
      messages: [{ role: "user", content: "hi" }],
    });
    assert.equal(res.headers.get("content-type"), "text/event-stream");
    const events = parseSse(await res.text());
    assert.deepEqual(
      events.map((e) => e.event),
      [
        "message_start",
        ...["content_block_start", "content_block_delta", "content_block_delta"],
        "content_block_delta",
        "content_block_stop",
        ...["content_block_start", "content_block_stop"],
        ...["content_block_start", "content_block_delta", "content_block_delta"],
        "content_block_stop",
        ...["content_block_start", "content_block_delta", "content_block_delta"],
        "content_block_stop",
        "message_delta",
        "message_stop",
      ],
    );
    const text = events
      .filter((e) => e.event === "content_block_delta" && e.data.index === 2)
      .map((e) => (e.data.delta as { text: string }).text)
      .join("");
    assert.equal(text, "hello there");
    const json = events
      .filter((e) => e.event === "content_block_delta" && e.data.index === 3)
      .map((e) => (e.data.delta as { partial_json: string }).partial_json)
      .join("");
    assert.deepEqual(JSON.parse(json), { command: "ls" });
    const delta = events.find((e) => e.event === "message_delta")!.data;
    assert.deepEqual(delta.delta, { stop_reason: "tool_use", stop_sequence: null });
    assert.equal((delta.usage as { output_tokens: number }).output_tokens, 9);
    assert.equal(fake.messages().length, 1);
    assert.equal(fake.messages()[0]!.stream, true);
  });

  it("answers the whole form, count_tokens, an HTTP error and a 404 for anything else", async (t) => {
    const fake = await startFakeAnthropic({
      replies: [
        { kind: "message", content: [{ type: "text", text: "a title" }] },
        { kind: "error", status: 529, message: "busy" },
      ],
    });
    t.after(() => fake.close());
    const whole = (await (await post(`${fake.baseUrl}/v1/messages`, { model: "m" })).json()) as {
      type: string;
      content: unknown;
      stop_reason: string;
    };
    assert.equal(whole.type, "message");
    assert.deepEqual(whole.content, [{ type: "text", text: "a title" }]);
    assert.equal(whole.stop_reason, "end_turn");
    const counted = await post(`${fake.baseUrl}/v1/messages/count_tokens`, { messages: [] });
    assert.ok(((await counted.json()) as { input_tokens: number }).input_tokens > 0);
    const failed = await post(`${fake.baseUrl}/v1/messages`, { model: "m", stream: true });
    assert.equal(failed.status, 529);
    assert.equal(
      ((await failed.json()) as { error: { type: string } }).error.type,
      "overloaded_error",
    );
    assert.equal((await post(`${fake.baseUrl}/v1/other`, {})).status, 404);
    assert.deepEqual(
      fake.requests.map((r) => r.route),
      ["messages", "count_tokens", "messages", "other"],
    );
  });

  it("holds a reply open until released, and ends a stream with an error event", async (t) => {
    const fake = await startFakeAnthropic({
      replies: [
        { kind: "hold", content: [{ type: "text", text: "partial" }], tickMs: 5 },
        { kind: "stream-error", content: [{ type: "text", text: "half" }] },
      ],
    });
    t.after(() => fake.close());
    const res = await post(`${fake.baseUrl}/v1/messages`, { model: "m", stream: true });
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    assert.match(first, /message_start/);
    await fake.waitForMessages(1);
    assert.equal(fake.release(), 1);
    let rest = first;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    const events = parseSse(rest);
    assert.equal(events.at(-1)!.event, "message_stop");
    assert.ok(events.some((e) => e.event === "content_block_delta"));
    const err = parseSse(
      await (await post(`${fake.baseUrl}/v1/messages`, { model: "m", stream: true })).text(),
    );
    assert.equal(err.at(-1)!.event, "error");
  });

  it("serves a lane's replies to the requests it matches, whatever their order", async (t) => {
    const fake = await startFakeAnthropic({
      replies: [{ kind: "message", content: [{ type: "text", text: "main" }] }],
    });
    t.after(() => fake.close());
    fake.lane((r) => firstPromptOf(r) === "task", {
      kind: "message",
      content: [{ type: "text", text: "agent" }],
    });
    const ask = async (prompt: string) => {
      const body = {
        model: "m",
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "<system-reminder>\nx\n</system-reminder>" },
              { type: "text", text: prompt },
            ],
          },
        ],
      };
      const r = (await (await post(`${fake.baseUrl}/v1/messages`, body)).json()) as {
        content: { text: string }[];
      };
      return r.content[0]!.text;
    };
    assert.equal(await ask("task"), "agent");
    assert.equal(await ask("hello"), "main");
    assert.equal(fake.pending(), 0);
  });
});
