// Pi's `label` entries (session-manager.js `appendLabelChange`, `_buildIndex`): `{ type:
// "label", targetId, label }`, a truthy label setting the target's label and a falsy one
// (undefined, "") clearing it. Only text can be shown, so a label that is not a string (no Pi
// writes one) changes nothing here. A label of blanks is set, as Pi sets it, but names nothing a
// person could read: its text is "" and the branch falls back to its first words.

import { isObject, parseLine } from "../../entries.ts";
import type { LabelChange, LabelFormat } from "../../tree.ts";

export const PI_LABELS: LabelFormat = {
  type: "label",
  change(buf, start, end): LabelChange | null {
    const obj = parseLine(buf, start, end);
    if (!isObject(obj) || obj.type !== "label" || typeof obj.targetId !== "string") return null;
    const label = obj.label;
    if (!label) return { target: obj.targetId, text: null };
    if (typeof label !== "string") return null;
    const text = label.replace(/\s+/g, " ").trim();
    return { target: obj.targetId, text };
  },
};
