// Reading a small file of our own state (a ledger's head, the device links' list) by its own
// name only: O_NOFOLLOW refuses a link planted where the file should be, so what is read is
// never another file's content.

import { closeSync, constants, openSync, readFileSync } from "node:fs";

/** The file's text; throws (ELOOP for a link, ENOENT when missing) as openSync does. */
export function readNoFollow(file: string): string {
  const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    return readFileSync(fd, "utf8");
  } finally {
    closeSync(fd);
  }
}
