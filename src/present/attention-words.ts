// What a notification of an attention state says (issue 27): the state in words and where the
// agent runs (the project folder's last part and the seat), never the conversation's title or
// text, since a notification shows on a lock screen. The board's Web Push payload takes its
// label from here; the Console's in-page notification (console/inbox.js) says the same.

/** The states a person is needed for, in words (attention/states.ts NEEDS_YOU). */
export const ATTENTION_WORDS = {
  "waiting-approval": "Waiting for approval",
  "waiting-input": "Waiting for input",
  failed: "Failed",
  stalled: "Stalled",
} as const;

export type NeedsYouState = keyof typeof ATTENTION_WORDS;

/** "Failed: my-project/main": the state and the place, no conversation text. */
export function notificationLabel(state: NeedsYouState, project: string, seat: string): string {
  const last = project.split("/").filter(Boolean).at(-1) ?? project;
  return `${ATTENTION_WORDS[state]}: ${last}/${seat}`;
}
