// The engine's answer to a prompt, in a module of its own: Pi's RPC parser (pi/rpc.ts) reads it
// off the wire and the harness interface (harness.ts) hands it on, and harness.ts imports the
// engine link, which imports Pi's parser for its default wire: kept in harness.ts, the three
// imported each other in a circle.

/** What Pi 1.6.0 on says it did with a prompt; null when the engine says nothing (pi/rpc.ts). */
export type PromptDisposition = "started" | "queued" | "handled";

/** The engine's answer to a prompt, at its place in the stream. */
export type PromptAck =
  | { success: true; disposition?: PromptDisposition | null }
  | { success: false; error: string };
