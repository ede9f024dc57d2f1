// A Pi session's catalogue title: the latest `session_info` name, else the first user message.
import { objectsWith, titleOf } from "../../title.ts";

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
    text = titleOf(text);
    if (text) return text;
  }
  return null;
}
