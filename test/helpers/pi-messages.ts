// Messages for the pinned Pi's own SessionManager.appendMessage, as a loopback model's run would
// give them: a prompt and a one-text reply with token counts and no cost. Each builder has a
// clock of its own, one millisecond a message, so files written with it are in a fixed order.
import type { SessionManager } from "@earendil-works/pi-coding-agent";

export type PiMessage = Parameters<SessionManager["appendMessage"]>[0];

export function piMessages(start: number) {
  let clock = start;
  return {
    /** The next timestamp (for lines a test writes by hand beside Pi's). */
    tick: () => clock++,
    user: (text: string): PiMessage => ({ role: "user", content: text, timestamp: clock++ }),
    reply: (text: string): PiMessage => ({
      role: "assistant",
      content: [{ type: "text", text }],
      api: "openai-completions",
      provider: "loopback",
      model: "fake-1",
      usage: {
        input: 1,
        output: 1,
        cacheRead: 0,
        cacheWrite: 0,
        reasoning: 0,
        totalTokens: 2,
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
      },
      stopReason: "stop",
      timestamp: clock++,
    }),
  };
}
