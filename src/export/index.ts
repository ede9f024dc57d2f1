// Export of one branch, shared by `conversation export` and the board's export route: open the
// branch at its first page (a refusal then comes before anything is written), then write the
// document as each page is read — Markdown, one self-contained HTML file, or JSON (the branch's
// CHAT-01 pages, as `read --json` prints them) — so memory holds a page, never the document.
// A refusal after the start (the file replaced while it was read) ends the document with a
// last section saying it is incomplete, and the outcome says so (docs/board.md, Export).
import { addUsage } from "../present/usage.ts";
import type { Page, RefusalRecord } from "../protocol/chat-01.ts";
import type { Reader } from "../reader/reader.ts";
import { type BranchHead, type BranchPages, openBranch } from "./branch.ts";
import { EntryStream } from "./entries.ts";
import type { ExportSummary, FormatWriter } from "./format.ts";
import { htmlWriter } from "./html.ts";
import { markdownWriter } from "./markdown.ts";

export const EXPORT_FORMATS = ["md", "html", "json"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export function isExportFormat(s: string): s is ExportFormat {
  return (EXPORT_FORMATS as readonly string[]).includes(s);
}

const TYPES: Record<ExportFormat, string> = {
  md: "text/markdown; charset=utf-8",
  html: "text/html; charset=utf-8",
  json: "application/json; charset=utf-8",
};

/**
 * Text is handed to the sink in chunks of about this many characters (a part's text may make
 * one larger): small enough to bound what is held, large enough that writes stay few.
 */
export const EXPORT_CHUNK_CHARS = 64 * 1024;

/** Where an export's text goes. A returned promise is waited for before more is read. */
export type ExportSink = { write(text: string): void | Promise<void> };

/** How a started export ended: whole, stopped by a refusal (said in the document), or cut. */
export type ExportEnd =
  | { ok: true; characters: number }
  | { ok: false; stopped: "refused"; refusal: RefusalRecord; characters: number }
  | { ok: false; stopped: "cancelled"; characters: number };

export type OpenedExport = {
  contentType: string;
  /** `conversation-<id>-<branch>.<format>`: ids only, so it needs no quoting. */
  fileName: string;
  /** Writes the document to `sink`; stops early (no more reads) once `signal` aborts. */
  write(sink: ExportSink, signal?: AbortSignal): Promise<ExportEnd>;
};

export type ExportOpen = { ok: true; value: OpenedExport } | { ok: false; refusal: RefusalRecord };

/** Opens the export of `branch` (Pi's default when omitted); `now` is the export's time. */
export function openExport(
  reader: Reader,
  request: { conversation: string; branch?: string | undefined; format: ExportFormat },
  now = new Date(),
): ExportOpen {
  const opened = openBranch(reader, request.conversation, request.branch);
  if (!opened.ok) return opened;
  const { pages } = opened;
  const { format } = request;
  return {
    ok: true,
    value: {
      contentType: TYPES[format],
      fileName: `conversation-${pages.head.conversation}-${pages.head.branch}.${format}`,
      write: (sink, signal) => writeDocument(pages, format, now, sink, signal),
    },
  };
}

async function writeDocument(
  pages: BranchPages,
  format: ExportFormat,
  now: Date,
  sink: ExportSink,
  signal: AbortSignal | undefined,
): Promise<ExportEnd> {
  const out = new ChunkedText(sink);
  const doc = format === "json" ? jsonDocument(pages.head) : entryDocument(format, pages.head, now);
  out.add(doc.begin());
  for (;;) {
    if (signal?.aborted) return { ok: false, stopped: "cancelled", characters: out.characters };
    const read = pages.next();
    if (!read.ok) {
      out.add(doc.stopped(read.refusal));
      await out.flush();
      return { ok: false, stopped: "refused", refusal: read.refusal, characters: out.characters };
    }
    if (read.page === null) break;
    for (const text of doc.page(read.page)) {
      out.add(text);
      await out.flush(false);
    }
  }
  out.add(doc.end());
  await out.flush();
  return { ok: true, characters: out.characters };
}

/** One format's document over the pages: its start, each page, and its two possible ends. */
type Document = {
  begin(): string;
  /** The page's text, a part at a time. */
  page(page: Page): Iterable<string>;
  end(): string;
  stopped(refusal: RefusalRecord): string;
};

function entryDocument(format: "md" | "html", head: BranchHead, now: Date): Document {
  const writer: FormatWriter = format === "md" ? markdownWriter(head, now) : htmlWriter(head, now);
  const summary: ExportSummary = { entries: 0, usage: null };
  const stream = new EntryStream({
    ...writer,
    entry(entry) {
      summary.entries++;
      if (entry.meta?.usage) summary.usage = addUsage(summary.usage, entry.meta.usage);
      return writer.entry(entry);
    },
  });
  return {
    begin: () => writer.begin(),
    *page(page) {
      for (const part of page.parts) yield stream.part(part);
    },
    end: () => stream.finish() + writer.end(summary),
    stopped: (refusal) => writer.stopped(refusal, summary),
  };
}

/** `{ conversation, branch, view, pages }`, a page at a time; a stop adds `stopped` after them. */
function jsonDocument(head: BranchHead): Document {
  let first = true;
  return {
    begin: () =>
      `{"conversation":${JSON.stringify(head.conversation)},"branch":${JSON.stringify(head.branch)},"view":${JSON.stringify(head.view)},"pages":[`,
    *page(page) {
      yield `${first ? "" : ","}${JSON.stringify(page)}`;
      first = false;
    },
    end: () => "]}\n",
    stopped: (refusal) =>
      `],"stopped":${JSON.stringify({ code: refusal.code, message: refusal.message })}}\n`,
  };
}

/** Text gathered into chunks for the sink; `flush` hands over what is held once it is enough. */
class ChunkedText {
  readonly #sink: ExportSink;
  #held: string[] = [];
  #size = 0;
  characters = 0;

  constructor(sink: ExportSink) {
    this.#sink = sink;
  }

  add(text: string): void {
    if (text === "") return;
    this.#held.push(text);
    this.#size += text.length;
    this.characters += text.length;
  }

  /** Hands over what is held when it reaches a chunk, or everything when `all`. */
  async flush(all = true): Promise<void> {
    if (this.#size === 0 || (!all && this.#size < EXPORT_CHUNK_CHARS)) return;
    const chunk = this.#held.join("");
    this.#held = [];
    this.#size = 0;
    await this.#sink.write(chunk);
  }
}

export type { BranchHead };
