// The exports' own words beside the shared ones (src/present/labels.ts): the time as UTC and
// the conversation's title, for the Markdown and HTML exports.

/** `2026-01-01 12:00:00 UTC`, or "" when the time is missing or not a date. */
export function utcTime(iso: string | undefined): string {
  if (iso === undefined) return "";
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return "";
  return `${t.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/** The conversation's title: its name, else its file name, else its id. */
export function titleOf(doc: {
  row: { title: string | null; fileName: string | null } | null;
  conversation: string;
}): string {
  return doc.row?.title ?? doc.row?.fileName ?? doc.conversation;
}
