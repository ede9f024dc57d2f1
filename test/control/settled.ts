// Test helper: how a prompt's receipt settled, as the pushed stream events say (null: not yet).
import type { Receipt, ReceiptReason, StreamEvent } from "../../src/control/protocol.ts";

export function settled(events: StreamEvent[], receipt: string): ReceiptReason | null {
  for (const e of events) {
    const r = e.event.receipt as Receipt | undefined;
    if (e.event.kind === "receipt" && r?.id === receipt && r.state === "settled") {
      return r.reason ?? null;
    }
  }
  return null;
}
