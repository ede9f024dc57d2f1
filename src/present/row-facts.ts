// What a catalogue row shows beyond its title, in one place for the terminal's `catalogue` and
// the Console's list (issue 24 item 5): the first prompt when it says more than the title, and
// the message count and the model as short facts.

type RowFacts = {
  title: string | null;
  preview: string | null;
  messageCount: number | null;
  model: string | null;
};

/** The first prompt to show under the title: none when the title is that prompt already. */
export function previewOf(row: RowFacts): string | null {
  if (row.preview === null || row.preview === row.title) return null;
  return row.preview;
}

/** "1 message", "12 messages"; null while the count is not known. */
export function messagesLabel(row: RowFacts): string | null {
  const n = row.messageCount;
  if (n === null) return null;
  return n === 1 ? "1 message" : `${n.toLocaleString("en-US")} messages`;
}

/**
 * A fork's parent as one phrase (issue 24 item 14): `forked from “Its title”`, or its id when it
 * has no title. The terminal adds the id to read it by; the Console makes it a link.
 */
export function forkedFromLabel(from: { conversation: string; title: string | null }): string {
  const title = from.title?.trim() ?? "";
  return title === "" ? `forked from ${from.conversation}` : `forked from “${title}”`;
}
