// How Pi's entry rows show (RowFormat): an entry is one line, its parts `n.<id>.<k>`.
import { entryObject, entryObjectUtf8, keyOf, keyOfId } from "../../entries.ts";
import { partsOfLine } from "../../render.ts";
import { type ParsedSession, parseSession, type RowFormat } from "../../tree.ts";
import { renderEntry } from "./blocks.ts";
import { PI_LABELS } from "./labels.ts";
import { type Header, PI_SCANNER } from "./pi.ts";

export const PI_ROWS: RowFormat = {
  entryKey: (s, row) => keyOfId(s.scan.entries.ids[row]!),
  render(_s, buf, rec) {
    const { obj, utf8 } = entryObjectUtf8(buf, rec);
    const draft = renderEntry(obj);
    return draft ? partsOfLine(keyOf(rec), draft, buf, rec, 0, utf8) : [];
  },
  labelText(_s, buf, rec) {
    const draft = renderEntry(entryObject(buf, rec));
    const block = draft?.blocks.find((x) => x.type === "text" || x.type === "bash-command");
    return block && "text" in block ? block.text : null;
  },
  labels: PI_LABELS,
};

/** Indexes a Pi snapshot whose header parseHeader accepted. */
export function parsePiSession(buf: Buffer, header: Header): ParsedSession {
  return parseSession(buf, header, PI_SCANNER, PI_ROWS);
}
