// Pi's session files behind the harness seam: a header line, then entries by id and parentId.

import { resolve } from "node:path";
import { toChatId } from "../../../protocol/chat-01.ts";
import { firstValue } from "../../message-count.ts";
import { isSessionFileName } from "../../safe-fs.ts";
import { oneLine, PREVIEW_CHARS, titleOf } from "../../title.ts";
import { extendSession } from "../../tree.ts";
import type { Harness } from "../harness.ts";
import { renderEntry } from "./blocks.ts";
import { parseHeader } from "./pi.ts";
import { parsePiSession } from "./rows.ts";
import { findFirstUserText, findModel, findSessionName } from "./title.ts";

export const PI_HARNESS: Harness = {
  name: "pi",
  sessionNames: (names) => names.filter(isSessionFileName).sort(),
  parse: (buf, incomplete, root) => parsePiSession(buf, parseHeader(buf, incomplete, root)),
  // The header was checked when the snapshot this one grew from was parsed.
  extend: (prev, buf) => extendSession(prev, buf),
  describe(head, partial, tail, root) {
    const header = parseHeader(head, partial, root);
    let name = findSessionName(head);
    if (tail) name = findSessionName(tail) ?? name;
    const first = findFirstUserText(head);
    return {
      // In Pi's store the project is the header's cwd, now that it is known to match.
      ...(root.store ? { project: resolve(header.cwd) } : {}),
      sessionId: toChatId(header.id),
      createdAt: header.timestamp,
      title: name ?? (first === null ? null : titleOf(first)),
      preview: first === null ? null : oneLine(first, PREVIEW_CHARS),
      model: findModel([head, tail]),
    };
  },
  draftOf: renderEntry,
  // A `message` entry whose message is the user's or the assistant's (not a tool result's).
  isMessageLine(line) {
    if (firstValue(line, "type") !== "message") return false;
    const role = firstValue(line, "role");
    return role === "user" || role === "assistant";
  },
};
