// Pi's session files behind the harness seam: a header line, then entries by id and parentId.

import { resolve } from "node:path";
import { toChatId } from "../../../protocol/chat-01.ts";
import { firstValue } from "../../message-count.ts";
import { parseWhole, type SessionFormat } from "../../parse-sink.ts";
import { isSessionFileName } from "../../safe-fs.ts";
import type { FileRoot, PiRoot } from "../../sources.ts";
import { oneLine, PREVIEW_CHARS, titleOf } from "../../title.ts";
import type { Harness } from "../harness.ts";
import { renderEntry } from "./blocks.ts";
import { type Header, PI_SCANNER, type PiScan, parseHeader } from "./pi.ts";
import { PI_ROWS } from "./rows.ts";
import { findFirstUserText, findModel, findSessionName } from "./title.ts";

function pi(root: FileRoot): PiRoot {
  if (root.kind !== "pi") throw new Error("the Pi harness read a Claude Code root");
  return root;
}

export const PI_HARNESS: Harness = {
  name: "pi",
  sessionNames: (names) => names.filter(isSessionFileName).sort(),
  format: (root) => piFormat(pi(root)),
  parse: (buf, incomplete, root) => parseWhole(piFormat(pi(root)), buf, incomplete),
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
      ...(header.parentPath === undefined ? {} : { parentPath: header.parentPath }),
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

/**
 * Line 1 is the header, checked against `root` when a parse starts (a follow continues after
 * it, checked).
 */
export function piFormat(
  root: Pick<PiRoot, "projectRoot" | "store">,
): SessionFormat<Header, PiScan> {
  return {
    head: (first, incomplete) => parseHeader(first, incomplete, root),
    scanner: PI_SCANNER,
    rows: PI_ROWS,
  };
}
