import { test } from "node:test";
import { readFileSync } from "node:fs";
import { realClaude } from "../test/helpers/real-claude.ts";
test("probe", async (t) => {
  const rc = await realClaude(t, { replies: [
    { kind: "message", content: [{ type: "thinking", thinking: "hmm" }, { type: "text", text: "hello" }, { type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "echo hi" } }], usage: { input_tokens: 1000, output_tokens: 555, cache_creation_input_tokens: 200, cache_read_input_tokens: 3000 } },
    { kind: "message", content: [{ type: "text", text: "done" }], usage: { input_tokens: 10, output_tokens: 7, cache_read_input_tokens: 4000 } },
  ]});
  const id = "0aaaaaaa-0000-4000-8000-000000000001";
  const p = rc.start({ sessionId: id });
  p.send("go");
  await p.waitForResult(1, 120000);
  await p.close();
  for (const l of readFileSync(rc.sessionFile(id), "utf8").split("\n").filter(Boolean)) {
    const o = JSON.parse(l);
    if (o.type === "assistant") console.log(JSON.stringify({ id: o.message.id, rq: o.requestId, model: o.message.model, c: o.message.content.map((c:any)=>c.type), u: o.message.usage, ts: o.timestamp }));
    else console.log(o.type);
  }
});
