// The export route streams (issue 22 item 9): the body is chunked, with no Content-Length, made
// as the branch is read in the conversation's worker lane; the same document as the command's.
// A refusal part-way cannot change the status already sent: the document ends with a section
// saying so, and the response is cut before its terminating chunk, so no client takes it whole.
import assert from "node:assert/strict";
import { request } from "node:http";
import { describe, it } from "node:test";
import { startBoard } from "../../src/board/index.ts";
import { exportText, replacingReader, writeLongSession } from "../export/export-fixture.ts";
import { within } from "../helpers/deadline.ts";

type Download = {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** Whether the body arrived whole (its terminating chunk was read). */
  complete: boolean;
};

function download(port: number, path: string): Promise<Download> {
  return within(
    new Promise<Download>((resolve, reject) => {
      const req = request({ host: "127.0.0.1", port, path, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        // A cut response ends with 'aborted' and an error: what was read is kept either way.
        res.on("error", () => {});
        res.on("close", () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString("utf8"),
            complete: res.complete,
          }),
        );
      });
      req.on("error", reject);
      req.end();
    }),
    `the download of ${path}`,
    120_000,
  );
}

/** The document without its export time, which differs between two exports. */
function timeless(text: string): string {
  return text.replace(/Exported: [^\n]*|exported [0-9: -]+UTC/g, "");
}

describe("board export route, streamed", () => {
  it("sends the export chunked from the conversation's worker lane, the same document as the command's", async (t) => {
    const long = writeLongSession(t, 200, 30_000);
    const board = await startBoard({
      sources: {
        specs: [{ kind: "repository", projectRoot: long.projectRoot, seat: "main" }],
        registrations: [],
      },
      lanes: 1,
    });
    t.after(() => board.close());
    for (const format of ["md", "html", "json"] as const) {
      const got = await download(
        board.port,
        `/api/conversations/${long.conversation}/export?format=${format}`,
      );
      assert.equal(got.status, 200, format);
      assert.equal(got.headers["transfer-encoding"], "chunked", format);
      assert.equal(got.headers["content-length"], undefined, format);
      assert.equal(
        got.headers["content-security-policy"],
        "default-src 'none'; frame-ancestors 'none'; sandbox",
      );
      assert.equal(got.headers["x-content-type-options"], "nosniff");
      assert.ok(got.complete, `${format}: the body arrived whole`);
      const own = await exportText(long.reader, long.conversation, format);
      if (format === "json") {
        // Cursors and their times are each reader's own; the parts are the branch's.
        const parts = (text: string) =>
          JSON.stringify(
            (JSON.parse(text) as { pages: { parts: unknown }[] }).pages.map((p) => p.parts),
          );
        assert.ok(parts(got.text) === parts(own.text), "json: the command's pages");
      } else {
        assert.ok(timeless(got.text) === timeless(own.text), `${format}: the command's document`);
      }
    }
    assert.equal(board.readers().slabChunksInUse, 0);
  });

  it("ends the document with a section saying so and cuts the response, when the file is replaced part-way", async (t) => {
    for (const format of ["md", "html", "json"] as const) {
      const long = writeLongSession(t, 200, 30_000);
      const board = await startBoard({ reader: replacingReader(long.reader, long.file, 2) });
      t.after(() => board.close());
      const got = await download(
        board.port,
        `/api/conversations/${long.conversation}/export?format=${format}`,
      );
      assert.equal(got.status, 200, "the status went before the refusal");
      assert.equal(got.complete, false, `${format}: the response is cut before its last chunk`);
      if (format === "md")
        assert.match(
          got.text,
          /\n## Export stopped\n\n> \*\*This export is incomplete\.\*\* source-replaced: .*\n$/,
        );
      if (format === "html")
        assert.match(got.text, /<h2>Export stopped<\/h2>.*source-replaced: [\s\S]*<\/html>\n$/);
      if (format === "json") {
        assert.equal(
          (JSON.parse(got.text) as { stopped: { code: string } }).stopped.code,
          "source-replaced",
        );
      }
    }
  });
});
