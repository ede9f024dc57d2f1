// What the Console's bundle of the transcript state machine uses in place of `node:buffer`:
// json-text.ts (src/reader) stops serializing at V8's longest string, read there from
// `constants.MAX_STRING_LENGTH`. Chromium runs the same V8, whose limit on 64-bit builds is
// this number (Node 24 reports it too; test/board/transcript-bundle.test.ts checks).
export const constants = Object.freeze({ MAX_STRING_LENGTH: 2 ** 29 - 24 });
