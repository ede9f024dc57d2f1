// What the Markdown and HTML writers share: the events they answer (entries.ts), the ends a
// document can have, and the small state both keep while the pages stream by.
import type { UsageTotal } from "../present/usage.ts";
import type { RefusalRecord } from "../protocol/chat-01.ts";
import type { EntryEvents } from "./entries.ts";

/** What the end of a document says: how much was written, and the usage over it. */
export type ExportSummary = { entries: number; usage: UsageTotal | null };

/** One format's writer: each call returns the text to append, in order. */
export type FormatWriter = EntryEvents & {
  begin(): string;
  /** The branch was read to its end. */
  end(summary: ExportSummary): string;
  /** A refusal stopped the export after it began: the document says so and ends there. */
  stopped(refusal: RefusalRecord, summary: ExportSummary): string;
};

/** Read calls remembered for their results' language; a result follows its call closely. */
const READ_LANGS_KEPT = 256;

/**
 * The language of each recent `read` call's file, for the result that follows it. Bounded:
 * the export of a branch with a million reads holds the last few hundred.
 */
export class ReadLanguages {
  readonly #langs = new Map<string, string>();

  set(toolCallId: string, lang: string): void {
    this.#langs.delete(toolCallId);
    this.#langs.set(toolCallId, lang);
    if (this.#langs.size > READ_LANGS_KEPT) {
      const oldest = this.#langs.keys().next().value;
      if (oldest !== undefined) this.#langs.delete(oldest);
    }
  }

  get(toolCallId: string): string {
    return this.#langs.get(toolCallId) ?? "";
  }
}
