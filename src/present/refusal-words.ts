// A refusal as a person reads it (issue 24 item 12): plain words first (what happened, then what
// to do), the code and the layer's own message after them, in parentheses. The layers' messages
// are written for whoever knows the rules ("this connection is not the controller", "a prompt
// holds the dispatch slot; there is no queue", "No approved session root holds this
// conversation now"); a code a person meets often gets words of its own here. A code not in the
// table is shown by its own message, which is then the plain words (and the code alone follows).

/** What happened and what to do about it, in words; `todo` is null when nothing can be done. */
type Words = { said: string; todo: string | null };

const WORDS: Readonly<Record<string, Words>> = {
  // The reader (src/reader): a conversation, a branch or a cursor that cannot be read.
  "unknown-conversation": {
    said: "This conversation is no longer on this board: its file was moved or deleted, or its folder is no longer one the board reads.",
    todo: "Reload the catalogue to see what is there now.",
  },
  unavailable: {
    said: "The folder that holds this conversation cannot be read now.",
    todo: "Check that the folder is still there, then read again.",
  },
  "unsafe-path": {
    said: "The board does not read this file: it is a link, not a regular file, or reached through a link.",
    todo: null,
  },
  "foreign-project": {
    said: "This session was recorded for another project than the folder it is in, so the board does not read it.",
    todo: null,
  },
  unreadable: {
    said: "This file cannot be read (its permissions, or an error of the disk).",
    todo: null,
  },
  "unsupported-harness": {
    said: "This conversation was written by an agent the board cannot read yet.",
    todo: null,
  },
  "not-a-pi-session": { said: "This file is not a session the board can read.", todo: null },
  "too-large": { said: "This file is too large to read here (over 256 MiB).", todo: null },
  "incomplete-header": {
    said: "This session's first line is still being written.",
    todo: "Read again in a moment.",
  },
  "source-replaced": {
    said: "The file was replaced or rewritten while the page was reading it.",
    todo: "Read it again from the start.",
  },
  "cursor-unknown": {
    said: "The board no longer knows where this page was reading (it restarted, or read the file again).",
    todo: "Read it again from the start.",
  },
  "cursor-expired": {
    said: "The place this page was reading from expired while the page was idle.",
    todo: "Read it again from the start.",
  },
  // The board (src/board) and the Console itself.
  "board-unreachable": {
    said: "The board did not answer.",
    todo: "Check that `conversation serve` still runs, then reload the page.",
  },
  "board-busy": { said: "The board is busy.", todo: "Try again in a moment." },
  "no-controller": {
    said: "No controller runs this conversation now, so nothing can be sent to it.",
    todo: null,
  },
  "outcome-unknown": {
    said: "The controller's answer was lost, and the request was not sent again.",
    todo: "Look at the history to see whether it happened.",
  },
  // The controller (src/control): what this page may do now.
  controller: {
    said: "This page does not control the run.",
    todo: "Press Take control first, then try again.",
  },
  "already-controller": { said: "This page already controls the run.", todo: null },
  capability: {
    said: "This login's grant does not allow that.",
    todo: "Ask whoever runs the controller for a grant that does.",
  },
  // The same words for Pi and Claude Code: a page does not know which engine answers.
  busy: {
    said: "The agent is still answering the last message, and messages are not queued.",
    todo: "Wait for the run to end (Interrupt goes), or interrupt it, then send again.",
  },
  budget: {
    said: "This run's budget is spent, so nothing was sent.",
    todo: "Raise the budget in the box below (an admin's role), or stop there.",
  },
  "no-turn": { said: "Nothing is running, so there is nothing to interrupt.", todo: null },
  generation: {
    said: "Control changed hands just before this arrived.",
    todo: "Try again.",
  },
  channel: {
    said: "The controller cannot be reached.",
    todo: "Check that `conversation control` still runs.",
  },
  dialog: {
    said: "This approval is no longer open: it was answered, denied by an interrupt, or closed.",
    todo: null,
  },
  "role-refused": {
    said: "Your role on this board does not allow that.",
    todo: "Ask whoever keeps the board's roles file for a role that does.",
  },
  confirmation: {
    said: "The confirmation for this was used or has expired.",
    todo: "Press the button again.",
  },
};

/** The codes given words of their own (a test checks each is a code some layer refuses with). */
export const WORDED_CODES: readonly string[] = Object.keys(WORDS);

/** A refusal in plain words: `said` and `todo` first, then `code` and `detail` in parentheses. */
export type RefusalWords = {
  said: string;
  todo: string | null;
  code: string;
  /** The layer's own message, when the plain words replaced it; null when they are it. */
  detail: string | null;
};

/** The plain words of a refusal `code` whose layer said `message`. */
export function refusalWords(code: string, message: string): RefusalWords {
  const known = Object.hasOwn(WORDS, code) ? WORDS[code] : undefined;
  if (!known) return { said: message, todo: null, code, detail: null };
  return { said: known.said, todo: known.todo, code, detail: message === "" ? null : message };
}

/** The same, as one line of text: "Words. What to do. (code: message)". */
export function refusalLine(code: string, message: string): string {
  const w = refusalWords(code, message);
  const todo = w.todo === null ? "" : ` ${w.todo}`;
  const why = w.detail === null ? w.code : `${w.code}: ${w.detail}`;
  return `${w.said}${todo} (${why})`;
}
