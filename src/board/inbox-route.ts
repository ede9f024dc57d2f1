// The board's inbox (issue 27 item 2): `GET /api/inbox` answers the conversations that need a
// person as JSON, `GET /api/inbox/live` streams the same list as an `inbox` event at once and
// again at each change. One AttentionWatch (src/attention/watch.ts) per board watches every
// controller in the --state-dir registry with the observe-only grant, whether or not a page is
// open, so the list is current when a Console connects. Reading the inbox needs no login, as
// reading a conversation needs none; answering an approval is a logged-in POST (control-route).
import type { IncomingMessage, ServerResponse } from "node:http";
import { type RowHead, rowHead } from "../attention/row-head.ts";
import { DEFAULT_STALL_MS } from "../attention/states.ts";
import { AttentionWatch, type InboxRow } from "../attention/watch.ts";
import { openEventStream, send, writeEvent } from "./live.ts";
import { DEFAULT_OBSERVE_GRANT } from "./live-control.ts";
import { boardRefusal, jsonReply } from "./reply.ts";
import { type BoardRequest, checkRequest } from "./routes.ts";

export const INBOX_ROUTE = /^\/api\/inbox(\/live)?(\?.*)?$/;
/** Inbox streams open at once; more are refused, as the live route's are. */
const MAX_INBOX_STREAMS = 64;

export type InboxOptions = {
  /** The --state-dir registry; without one nothing is watched and the inbox is empty. */
  registryDir?: string;
  grant?: string;
  stallMs?: number;
  hosts: ReadonlySet<string>;
  log(line: string): void;
};

/** One row as the Console and scripts read it. */
export type InboxItem = RowHead & {
  reason: string;
  /** With waiting-approval: the dialog, for the Console's Allow and Deny. */
  dialog?: string;
  /** With a budget dialog: answered in the live panel (a raise needs a typed amount). */
  dialogMethod?: "budget";
};

export type InboxBody = {
  ok: true;
  /** False when the board has no registry to watch (serve without --state-dir). */
  watching: boolean;
  /** The board's clock when this was made: waiting times are counted from `since` to it. */
  at: string;
  stallMs: number;
  inbox: InboxItem[];
  /** Conversations watched that need no one now (running, idle). */
  others: number;
};

export class InboxHub {
  readonly #o: InboxOptions;
  readonly #watch: AttentionWatch | null;
  readonly #streams = new Set<ServerResponse>();
  readonly #stallMs: number;
  #started: Promise<void> = Promise.resolve();

  constructor(options: InboxOptions) {
    this.#o = options;
    this.#stallMs = options.stallMs ?? DEFAULT_STALL_MS;
    if (options.registryDir === undefined) {
      this.#watch = null;
      return;
    }
    const watch = new AttentionWatch({
      registryDir: options.registryDir,
      grant: options.grant ?? DEFAULT_OBSERVE_GRANT,
      stallMs: this.#stallMs,
      log: options.log,
    });
    this.#watch = watch;
    watch.onChange(() => this.#push());
    this.#started = watch.start().catch((e: unknown) => {
      options.log(`board: inbox: ${e instanceof Error ? e.message : String(e)}`);
    });
  }

  /** What needs someone now. */
  body(): InboxBody {
    const rows = this.#watch?.rows() ?? [];
    const inbox = this.#watch?.inbox() ?? [];
    return {
      ok: true,
      watching: this.#watch !== null,
      at: new Date().toISOString(),
      stallMs: this.#stallMs,
      inbox: inbox.map(itemOf),
      others: rows.length - inbox.length,
    };
  }

  /** Called with a conversation's row at each change of its state (push/hub.ts listens). */
  onChange(fn: (row: InboxRow) => void): () => void {
    return this.#watch?.onChange(fn) ?? (() => {});
  }

  async serve(req: IncomingMessage, res: ServerResponse, request: BoardRequest): Promise<void> {
    const refused = checkRequest(this.#o.hosts, request);
    if (refused !== null) return send(res, refused, req.method);
    const live = INBOX_ROUTE.exec(request.target)?.[1] !== undefined;
    // The first answer waits for the first look at the registry, so it is not an empty list
    // that fills a moment later.
    await this.#started;
    if (!live) return send(res, jsonReply(200, this.body()), req.method);
    if (request.method !== "GET") {
      const allow = { Allow: "GET" };
      return send(res, boardRefusal("method-not-allowed", "The inbox stream: GET only.", allow));
    }
    if (this.#streams.size >= MAX_INBOX_STREAMS) {
      return send(
        res,
        boardRefusal(
          "too-many-streams",
          `The board holds ${MAX_INBOX_STREAMS} inbox streams now, the most it keeps open; close other Console tabs.`,
        ),
      );
    }
    openEventStream(res, 2000);
    this.#streams.add(res);
    res.on("close", () => this.#streams.delete(res));
    writeEvent(res, "inbox", null, JSON.stringify(this.body()));
  }

  async close(): Promise<void> {
    for (const res of this.#streams) res.end();
    this.#streams.clear();
    await this.#watch?.close();
  }

  #push(): void {
    if (this.#streams.size === 0) return;
    const data = JSON.stringify(this.body());
    for (const res of this.#streams) writeEvent(res, "inbox", null, data);
  }
}

function itemOf(row: InboxRow): InboxItem {
  const a = row.attention;
  return {
    ...rowHead(row),
    reason: a.reason,
    ...(a.approval === undefined ? {} : { dialog: a.approval.id }),
    ...(a.approval?.budget ? { dialogMethod: "budget" as const } : {}),
  };
}
