// Who did what in a live transcript, in words (issue 29 item 3): the controller's `act` events
// (src/control/controller/acts.ts) as one line each — "alice took control", "bob sent a
// message", "alice allowed an approval". One rule for the terminal and the Console.

/** An act as the live transcript keeps it. */
export type ActWords = {
  op: string;
  actor: string;
  decision: string | null;
  /** An answer's dialog: "budget" (allow raised it, deny stopped), else an approval. */
  about?: string | null;
};

const DONE: Readonly<Record<string, string>> = {
  takeover: "took control",
  release: "released control",
  prompt: "sent a message",
  interrupt: "interrupted the run",
  "force-stop": "force-stopped the engine",
  recover: "recovered the conversation",
  launch: "launched a new engine",
};

/** The line an act shows; the actor's name comes from the wire, so callers make it visible. */
export function actLine(act: ActWords): string {
  if (act.op === "answer" && act.about === "budget") {
    if (act.decision === "allow") return `${act.actor} raised the budget`;
    if (act.decision === "deny") return `${act.actor} stopped at the budget`;
    return `${act.actor} answered the budget dialog`;
  }
  if (act.op === "answer") {
    const how =
      act.decision === "allow" ? "allowed" : act.decision === "deny" ? "denied" : "answered";
    return `${act.actor} ${how} an approval`;
  }
  return `${act.actor} ${DONE[act.op] ?? `did ${act.op}`}`;
}
