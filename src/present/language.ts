// A file's language by its name, for highlighting what a tool wrote or read: the languages the
// Console's bundle carries (vendor-entry.js), by extension. Nothing else is guessed.

/** The highlight.js language for a file name's extension, or "". */
export function languageOfPath(path: string): string {
  const m = /\.([A-Za-z0-9]+)$/.exec(typeof path === "string" ? path : "");
  if (!m?.[1]) return "";
  const ext = m[1].toLowerCase();
  return Object.hasOwn(EXTENSIONS, ext) ? (EXTENSIONS[ext] ?? "") : "";
}

const EXTENSIONS: Readonly<Record<string, string>> = {
  sh: "bash",
  bash: "bash",
  zsh: "bash",
  c: "c",
  h: "c",
  cc: "cpp",
  cpp: "cpp",
  hpp: "cpp",
  css: "css",
  diff: "diff",
  patch: "diff",
  go: "go",
  java: "java",
  js: "javascript",
  mjs: "javascript",
  cjs: "javascript",
  jsx: "javascript",
  json: "json",
  jsonl: "json",
  md: "markdown",
  py: "python",
  rs: "rust",
  sql: "sql",
  ts: "typescript",
  tsx: "typescript",
  mts: "typescript",
  cts: "typescript",
  html: "xml",
  xml: "xml",
  svg: "xml",
  yml: "yaml",
  yaml: "yaml",
};
