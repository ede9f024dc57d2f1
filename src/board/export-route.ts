// GET /api/conversations/:id/export?format=md|html|json[&branch=]: the branch rendered by
// src/export, sent as a download (Content-Disposition: attachment) so the board's origin never
// renders it; its own CSP is the sandboxing one of every non-page response. The branch is
// opened first (a refusal keeps its status), then the body is streamed as it is read
// (stream-reply.ts): a refusal part-way ends the document with a section saying so and cuts
// the response before its last chunk.
import { EXPORT_FORMATS, isExportFormat, openExport } from "../export/index.ts";
import type { Reader } from "../reader/reader.ts";
import { boardRefusal, jsonReply, OTHER_CSP, type Reply, SECURITY_HEADERS } from "./reply.ts";
import { statusOf } from "./status.ts";
import { pulledFrom } from "./stream-reply.ts";

export function readExport(
  reader: Reader,
  conversation: string,
  params: Partial<Record<string, string>>,
  log: (line: string) => void,
): Reply {
  const { format, branch } = params;
  if (format === undefined || !isExportFormat(format)) {
    return boardRefusal(
      "bad-request",
      `Name the export format: format=${EXPORT_FORMATS.join(", format=")}.`,
    );
  }
  const opened = openExport(reader, { conversation, branch, format });
  if (!opened.ok) return jsonReply(statusOf(opened.refusal.code), opened);
  const file = opened.value;
  return {
    status: 200,
    headers: {
      ...SECURITY_HEADERS,
      "Content-Type": file.contentType,
      "Content-Disposition": `attachment; filename="${file.fileName}"`,
      "Content-Security-Policy": OTHER_CSP,
    },
    body: Buffer.alloc(0),
    stream: pulledFrom((sink, signal) => file.write(sink, signal), log),
  };
}
