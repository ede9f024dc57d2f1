// Watching a controlled run (issue 15 item 1): when the registry of `serve --state-dir` names a
// running controller for a followed conversation, the live stream also relays that
// controller's `event`, `state` and `dialog` messages. The board is one observer connection
// per stream (ConversationClient), so a page sees exactly what a terminal observer sees; it
// never acts on this connection (steering is control-route.ts, one connection per login).
import { ConversationClient } from "../control/client/client.ts";
import { findController } from "../control/registry/registry.ts";

/** The grant a board's connections use unless configured: `conversation control`'s default. */
export const DEFAULT_GRANT = "operator";

export type RelayTarget = {
  /** Writes one SSE event; `id` is the controller's event id for `event` messages. */
  send(event: "event" | "state" | "dialog" | "controller", id: string | null, data: string): void;
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
  });
  const offs = [
    client.onEvent((m) => target.send("event", m.id, JSON.stringify(m))),
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
