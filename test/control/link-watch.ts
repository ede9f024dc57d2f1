// Test helper: records everything an EngineLink delivers, from the moment it is attached, and
// waits for a record with a deadline (never a sleep).
import type { EngineLink, LinkRecord } from "../../src/control/engine/engine.ts";
import { DEADLINE_MS } from "../helpers/deadline.ts";

export class RecordLog {
  readonly records: LinkRecord[] = [];
  readonly #waiters = new Set<() => void>();
  readonly detach: () => void;

  constructor(link: EngineLink) {
    this.detach = link.onRecord((r) => {
      this.records.push(r);
      for (const wake of [...this.#waiters]) wake();
    });
  }

  /** The first record at index >= `from` matching `match`, waiting up to `timeoutMs`. */
  waitFor(
    match: (r: LinkRecord) => boolean,
    options: { from?: number; timeoutMs?: number; what?: string } = {},
  ): Promise<LinkRecord> {
    const { from = 0, timeoutMs = DEADLINE_MS } = options;
    return new Promise((resolve, reject) => {
      const check = () => {
        const hit = this.records.slice(from).find(match);
        if (!hit) return;
        this.#waiters.delete(check);
        clearTimeout(timer);
        resolve(hit);
      };
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(
          new Error(
            `no ${options.what ?? "matching record"} within ${timeoutMs} ms; saw ${this.labels(from).join(", ")}`,
          ),
        );
      }, timeoutMs);
      this.#waiters.add(check);
      check();
    });
  }

  /** Waits for the event of `type` (and `role`, for message events). */
  waitForEvent(type: string, options: { from?: number; timeoutMs?: number; role?: string } = {}) {
    const { role } = options;
    return this.waitFor(
      (r) =>
        r.kind === "event" && r.event.type === type && (role === undefined || roleOf(r) === role),
      { ...options, what: role ? `${type}:${role}` : type },
    );
  }

  /** `event`, `event:role`, `response:command` or `protocol:reason` for each record. */
  labels(from = 0): string[] {
    return this.records.slice(from).map(label);
  }

  /** Labels with consecutive repeats (message_update streams) collapsed into one. */
  collapsed(from = 0): string[] {
    return this.labels(from).filter((l, i, all) => i === 0 || all[i - 1] !== l);
  }
}

export function label(r: LinkRecord): string {
  if (r.kind === "response") return `response:${r.response.command ?? "?"}`;
  if (r.kind === "protocol") return `protocol:${r.issue.reason}`;
  const role = roleOf(r);
  return role ? `${r.event.type}:${role}` : r.event.type;
}

function roleOf(r: LinkRecord): string | undefined {
  if (r.kind !== "event") return undefined;
  const e = r.event;
  if (e.type === "message_start" || e.type === "message_end") return e.message.role;
  return undefined;
}
