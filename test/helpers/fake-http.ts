// What the loopback model servers (fake-model.ts: OpenAI chat completions for Pi;
// fake-anthropic.ts: the Messages API for Claude Code) share: reading a request's body as it
// arrived, cutting streamed text into deltas, and waiting with a deadline for a count of
// requests.
import type { IncomingMessage } from "node:http";
import { DEADLINE_MS } from "./deadline.ts";

/** A request's body as text, and parsed when it is JSON (else the text itself, as it came). */
export async function readRequestBody(
  req: IncomingMessage,
): Promise<{ text: string; body: unknown }> {
  const text = await new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
  let body: unknown = text;
  try {
    body = text.length > 0 ? JSON.parse(text) : null;
  } catch {
    // Kept as the raw text: the recording shows what arrived even when it isn't JSON.
  }
  return { text, body };
}

/** `text` cut into at most `pieces` non-empty parts (whole code points). */
export function split(text: string, pieces: number): string[] {
  const chars = [...text];
  if (chars.length === 0) return [];
  const size = Math.ceil(chars.length / Math.max(1, pieces));
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(""));
  return out;
}

/** Waits for a count that only grows (requests served): `wake()` after each increment. */
export function countWaiter(name: string, count: () => number) {
  const waiters = new Set<() => void>();
  return {
    wake(): void {
      for (const w of [...waiters]) w();
    },
    /** Resolves once `count()` reaches `n`; rejects after `timeoutMs`. */
    waitFor(n: number, timeoutMs = DEADLINE_MS): Promise<void> {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (count() < n) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`${name}: ${count()} of ${n} requests after ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
}
