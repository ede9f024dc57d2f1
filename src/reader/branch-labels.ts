// Names a person gave branches (Pi's `label` entries, issue 24 item 14). Pi keeps one label per
// target entry, set and cleared in file order (session-manager.js `_buildIndex`: a truthy label
// sets, a falsy one clears); its `/tree` shows a label beside the entry it names. A branch here
// is named by the latest label still set on an entry of its own segment (the entries from its
// start to its leaf that no other branch shares): the newest name given to what that branch
// added. Label lines are found by their entry type in the parse's table and read again from the
// snapshot only when a view asks, once per parse lineage (rows never change once written).
import type { EntryLines } from "./entries.ts";
import { entryAt } from "./entries.ts";
import type { LabelChange, ParsedSession } from "./tree.ts";

/**
 * More label lines than this and no label names a branch (the first words do): reading a
 * file made of nothing but label lines again would cost a page as much as a whole parse.
 */
export const LABEL_LINES_MAX = 100_000;
/** A label line longer than this is ignored: labels are short names, never worth a huge parse. */
export const LABEL_LINE_BYTES = 64 * 1024;

type Lineage = { scanned: number; rows: number[]; changes: Map<number, LabelChange | null> };
/** Per entry table (a parse and the follows that extended it in place share one). */
const lineages = new WeakMap<object, Lineage>();
const perParse = new WeakMap<ParsedSession, Map<number, string>>();

/** Branch index → the label that names it, for the branches some label names. */
export function branchLabels(s: ParsedSession, lines: EntryLines): Map<number, string> {
  const known = perParse.get(s);
  if (known) return known;
  const out = new Map<number, string>();
  perParse.set(s, out);
  const format = s.rows.labels;
  if (!format) return out;
  const table = s.scan.entries;
  const count = table.count;
  let lineage = lineages.get(table.ids);
  if (!lineage) {
    lineage = { scanned: 0, rows: [], changes: new Map() };
    lineages.set(table.ids, lineage);
  }
  for (let i = lineage.scanned; i < count; i++) {
    if (table.types[i] === format.type) lineage.rows.push(i);
  }
  lineage.scanned = Math.max(lineage.scanned, count);
  const rows = lineage.rows;
  let mine = 0;
  while (mine < rows.length && rows[mine]! < count) mine++;
  if (mine > LABEL_LINES_MAX) return out;
  // Pi's fold: in file order, each label line sets or clears its target's label.
  const set = new Map<string, { text: string; row: number }>();
  for (let k = 0; k < mine; k++) {
    const row = rows[k]!;
    let change = lineage.changes.get(row);
    if (change === undefined) {
      const rec = entryAt(table, row);
      if (rec.end - rec.start > LABEL_LINE_BYTES) change = null;
      else {
        const line = lines(rec);
        change = format.change(line.buf, line.rec.start, line.rec.end);
      }
      lineage.changes.set(row, change);
    }
    if (change === null) continue;
    if (change.text === null) set.delete(change.target);
    else set.set(change.target, { text: change.text, row });
  }
  const newest = new Map<number, { text: string; row: number }>();
  for (const [target, label] of set) {
    const at = s.byId.get(target);
    const b = at >= 0 ? s.branchOf[at]! : -1;
    if (b < 0) continue;
    const before = newest.get(b);
    if (before === undefined || before.row < label.row) newest.set(b, label);
  }
  // A blank label (text "") is the newest name but shows nothing: the first words stand in.
  for (const [b, { text }] of newest) if (text !== "") out.set(b, text);
  return out;
}
