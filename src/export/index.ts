// Export of one branch, shared by `conversation export` and the board's export route: read the
// branch whole (branch.ts), then render it as Markdown, one self-contained HTML file, or JSON
// (the branch's CHAT-01 pages, as `read --json` prints them).
import { type BranchExport, readBranchExport } from "./branch.ts";
import { renderHtml } from "./html.ts";
import { renderMarkdown } from "./markdown.ts";

export { type BranchExport, readBranchExport };

export const EXPORT_FORMATS = ["md", "html", "json"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export function isExportFormat(s: string): s is ExportFormat {
  return (EXPORT_FORMATS as readonly string[]).includes(s);
}

export type Rendered = { body: string; contentType: string; fileName: string };

const TYPES: Record<ExportFormat, string> = {
  md: "text/markdown; charset=utf-8",
  html: "text/html; charset=utf-8",
  json: "application/json; charset=utf-8",
};

/** The export as a file: its text, content type and a file name made of ids only. */
export function renderExport(doc: BranchExport, format: ExportFormat, now = new Date()): Rendered {
  // Ids match CHAT-01's id pattern ([A-Za-z0-9._-]), so the name needs no quoting or escaping.
  const fileName = `conversation-${doc.conversation}-${doc.branch}.${format}`;
  switch (format) {
    case "md":
      return { body: renderMarkdown(doc, now), contentType: TYPES.md, fileName };
    case "html":
      return { body: renderHtml(doc, now), contentType: TYPES.html, fileName };
    case "json": {
      const { conversation, branch, view, pages } = doc;
      const body = `${JSON.stringify({ conversation, branch, view, pages })}\n`;
      return { body, contentType: TYPES.json, fileName };
    }
    default:
      return unreachable(format);
  }
}

function unreachable(x: never): never {
  throw new Error(`unhandled export format ${String(x)}`);
}
