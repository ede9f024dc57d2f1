// GET /api/conversations/:id/export?format=md|html|json[&branch=]: the branch rendered by
// src/export, sent as a download (Content-Disposition: attachment) so the board's origin never
// renders it; its own CSP is the sandboxing one of every non-page response.
import { EXPORT_FORMATS, isExportFormat, readBranchExport, renderExport } from "../export/index.ts";
import type { Reader } from "../reader/reader.ts";
import { boardRefusal, jsonReply, OTHER_CSP, type Reply, reply } from "./reply.ts";
import { statusOf } from "./status.ts";

export function readExport(
  reader: Reader,
  conversation: string,
  params: Partial<Record<string, string>>,
): Reply {
  const { format, branch } = params;
  if (format === undefined || !isExportFormat(format)) {
    return boardRefusal(
      "bad-request",
      `Name the export format: format=${EXPORT_FORMATS.join(", format=")}.`,
    );
  }
  const read = readBranchExport(reader, conversation, branch);
  if (!read.ok) return jsonReply(statusOf(read.refusal.code), read);
  const file = renderExport(read.value, format);
  return reply(200, file.contentType, Buffer.from(file.body, "utf8"), {
    "Content-Disposition": `attachment; filename="${file.fileName}"`,
    "Content-Security-Policy": OTHER_CSP,
  });
}
