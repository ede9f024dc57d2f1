// A Pi session's catalogue title: the latest `session_info` name, else the first user message;
// its preview (the first user message) and its model (the latest one set or used).
import { isObject } from "../../entries.ts";
import { latestModel, objectsWith, titleOf } from "../../title.ts";

/** The latest session_info name, as Pi's getSessionName (SM:861-872); "" clears it. */
export function findSessionName(buf: Buffer): string | null | undefined {
  let name: string | null | undefined;
  for (const obj of objectsWith(buf, '"session_info"')) {
    if (obj.type !== "session_info") continue;
    const n = typeof obj.name === "string" ? titleOf(obj.name) : "";
    name = n === "" ? null : n;
  }
  return name === null ? undefined : name;
}

/**
 * The model last set (`model_change`) or answering (an assistant message's `model`) in `bufs`,
 * the file's first and last bytes in order.
 */
export function findModel(bufs: (Buffer | null)[]): string | null {
  return latestModel(bufs, '"model', (obj) => {
    if (obj.type === "model_change") return obj.modelId;
    const m = obj.message;
    return obj.type === "message" && isObject(m) && m.role === "assistant" ? m.model : null;
  });
}

/** The first user message's text (untrimmed, not empty), or null. */
export function findFirstUserText(buf: Buffer): string | null {
  for (const obj of objectsWith(buf, '"user"')) {
    const m = obj.message;
    if (obj.type !== "message" || typeof m !== "object" || m === null) continue;
    const msg = m as Record<string, unknown>;
    if (msg.role !== "user") continue;
    const c = msg.content;
    let text = typeof c === "string" ? c : "";
    if (Array.isArray(c)) {
      for (const item of c) {
        if (
          typeof item === "object" &&
          item !== null &&
          (item as { type?: unknown }).type === "text"
        ) {
          const t = (item as { text?: unknown }).text;
          if (typeof t === "string") {
            text = t;
            break;
          }
        }
      }
    }
    if (text.trim()) return text;
  }
  return null;
}
