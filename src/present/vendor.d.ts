// Types for vendor.js, the bundle `npm run build:console` makes from vendor-entry.js
// (git-ignored): markdown-it, a parser only, and highlight.js with the languages it registers.
// highlight.js is typed here by the two calls markdown.ts makes: its own types pull the DOM's
// into every file the compiler checks, and its token tree is read unchecked anyway.
import type { MarkdownIt } from "markdown-it";

export const markdownIt: MarkdownIt;
export const hljs: {
  getLanguage(name: string): object | undefined;
  highlight(code: string, options: { language: string; ignoreIllegals: boolean }): object;
};
