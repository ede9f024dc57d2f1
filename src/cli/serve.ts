// Starts the board for the command and for `npm start`: a loopback address only, and the
// default port falls back to a free one when it is taken (a port the user named never does).
// The board module is loaded only here, so the other commands never load it.
import type { DeviceLinks } from "../board/device-links.ts";
import type { ProxyConfig } from "../board/identity.ts";
import type { BoardReading } from "../board/index.ts";
import type { PushOptions } from "../board/push/hub.ts";

/**
 * `loginUrl`: the current operator link, printed for the operator only. It logs in once; a
 * fresh one is drawn at every start and after every login (`onLoginLinkUsed`).
 */
export type Serving = {
  url: string;
  readonly loginUrl: string;
  port: number;
  close(): Promise<void>;
  mintDeviceLink(identity: string): { id: string; url: string; expiresAt: string };
};
/** `reading`: the sources, so the board reads in worker threads off its request loop. */
export type ServeRequest = {
  reading: BoardReading;
  host: string;
  port: number;
  portGiven: boolean;
  /** The grant a logged-in action's controller connection uses (`npm start`: the demo's own). */
  grant?: string;
  /** The observe-only grant the live streams watch with (`npm start`: the demo's own). */
  observeGrant?: string;
  /** Where the next login link goes once one is used: printed as `nextLoginLine` says. */
  onLoginLinkUsed?: (loginUrl: string) => void;
  /** Behind a proxy (docs/remote.md). */
  proxy?: ProxyConfig;
  /** Device login links (`--phone`). */
  devices?: DeviceLinks;
  /** Web Push: the board's state folder (docs/push.md). */
  push?: PushOptions;
};

/** What `serve` and `npm start` print when a login link was used: the link for the next one. */
export function nextLoginLine(loginUrl: string): string {
  return `A login link was used (each logs in once). For another login, open: ${loginUrl}\n`;
}

/** Why `host` cannot be served on, or null when it is a loopback name the board accepts. */
export async function checkHost(host: string): Promise<string | null> {
  const { loopbackAddress } = await import("../board/index.ts");
  try {
    loopbackAddress(host);
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

/** Starts the board, or says why it could not (a failed listen, a refused host). */
export async function startServing(
  req: ServeRequest,
): Promise<{ ok: true; board: Serving } | { ok: false; error: string }> {
  const { startBoard } = await import("../board/index.ts");
  const extra = {
    ...(req.grant === undefined ? {} : { grant: req.grant }),
    ...(req.observeGrant === undefined ? {} : { observeGrant: req.observeGrant }),
    ...(req.onLoginLinkUsed === undefined ? {} : { onLoginLinkUsed: req.onLoginLinkUsed }),
    ...(req.proxy === undefined ? {} : { proxy: req.proxy }),
    ...(req.devices === undefined ? {} : { devices: req.devices }),
    ...(req.push === undefined ? {} : { push: req.push }),
  };
  const attempt = async (port: number) =>
    startBoard({ ...req.reading, ...extra, host: req.host, port });
  try {
    return { ok: true, board: await attempt(req.port) };
  } catch (e) {
    const taken = (e as NodeJS.ErrnoException).code === "EADDRINUSE";
    if (!taken || req.portGiven || req.port === 0) return { ok: false, error: describe(e) };
  }
  try {
    return { ok: true, board: await attempt(0) };
  } catch (e) {
    return { ok: false, error: describe(e) };
  }
}

function describe(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  if (err.code === "EADDRINUSE") return `${err.message}: the port is taken; try another --port`;
  return err instanceof Error ? err.message : String(e);
}

/** Resolves when `signal` aborts (at once if it already has). */
export function whenAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) =>
    signal.addEventListener("abort", () => resolve(), { once: true }),
  );
}
