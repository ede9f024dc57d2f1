// Watching a controlled run (issue 15 item 1): when the registry of `serve --state-dir` names a
// running controller for a followed conversation, the live stream also relays that
// controller's `event`, `state` and `dialog` messages. The board is one observer connection
// per stream (ConversationClient), so a page sees exactly what a terminal observer sees; it
// never acts on this connection (steering is control-route.ts, one connection per login).
//
// Resume (issue 16): a reconnecting EventSource sends the last `id:` it saw; when that is a
// controller event id, this observer's hello resumes from it, so the controller replays what
// the browser missed before anything live. When it cannot (another epoch, older than it keeps),
// the stream says so with a `seam` event and goes on live, as a fresh stream would.
import { ConversationClient } from "../control/client/client.ts";
import type { ResumePoint } from "../control/protocol.ts";
import { findController } from "../control/registry/registry.ts";

/** The grant a board's connections use unless configured: `conversation control`'s default. */
export const DEFAULT_GRANT = "operator";

export type RelayTarget = {
  /** Writes one SSE event; `id` is the controller's event id for `event` messages. */
  send(
    event: "event" | "state" | "dialog" | "controller" | "seam",
    id: string | null,
    data: string,
  ): void;
  log(line: string): void;
};

export type Relay = { close(): Promise<void> };

/**
 * Connects an observer to the controller serving `conversation`, if the registry names a
 * live one; null when none runs (the stream is then a plain follow). A controller that cannot
 * be reached is reported on the stream as `controller` `{ running: false, message }`.
 */
export async function relayController(
  registryDir: string,
  conversation: string,
  grant: string,
  target: RelayTarget,
  resume: ResumePoint | null = null,
): Promise<Relay | null> {
  let entry: ReturnType<typeof findController>;
  try {
    entry = findController(registryDir, conversation);
  } catch (e) {
    // An unreadable registry knows of no controller: the stream still follows the file.
    target.log(`board: live: the controller registry cannot be read: ${describe(e)}`);
    return null;
  }
  if (entry === null) return null;
  const client = new ConversationClient({
    socketPath: entry.socket,
    grant,
    clientName: "board-observer",
    ...(resume === null ? {} : { resume }),
  });
  // Events (replayed or live) can arrive in the same read as the welcome, before connect()'s
  // continuation runs: they wait here so the stream says `controller`, `state` and any `seam`
  // first, then the events in the controller's order.
  let held: { id: string; data: string }[] | null = [];
  const offs = [
    client.onEvent((m) => {
      const data = JSON.stringify(m);
      if (held !== null) held.push({ id: m.id, data });
      else target.send("event", m.id, data);
    }),
    client.onState((state) => target.send("state", null, JSON.stringify({ type: "state", state }))),
    client.onDialog((m) => target.send("dialog", null, JSON.stringify(m))),
    client.onClose(() =>
      target.send(
        "controller",
        null,
        JSON.stringify({ running: false, message: "The controller's connection closed." }),
      ),
    ),
  ];
  try {
    const welcome = await client.connect();
    target.send(
      "controller",
      null,
      JSON.stringify({ running: true, connection: welcome.connection, role: welcome.role }),
    );
    target.send("state", null, JSON.stringify({ type: "state", state: welcome.state }));
    if (resume !== null && welcome.replay === "unavailable") {
      target.send(
        "seam",
        null,
        JSON.stringify({
          replay: "unavailable",
          reason: welcome.replayReason ?? null,
          message:
            welcome.replayMessage ??
            "The controller no longer keeps the events missed while disconnected.",
        }),
      );
    }
    const waiting = held;
    held = null;
    for (const e of waiting) target.send("event", e.id, e.data);
  } catch (e) {
    for (const off of offs) off();
    target.send(
      "controller",
      null,
      JSON.stringify({
        running: false,
        message: `The controller could not be reached: ${describe(e)}`,
      }),
    );
    await client.close().catch(() => {});
    return null;
  }
  return {
    close: async () => {
      for (const off of offs) off();
      await client.close();
    },
  };
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
