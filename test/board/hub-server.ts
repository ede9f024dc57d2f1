// A bare HTTP server for the live route's tests: `/live?` requests go to the hub, the rest to
// the board's handler, on 127.0.0.1 and an unused port, closed with the test.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { TestContext } from "node:test";
import type { LiveHub } from "../../src/board/live.ts";
import type { createHandler } from "../../src/board/routes.ts";

/**
 * Serves `hub` and `handle` and names the server's host in `hosts` (the board's Host check);
 * its port. `beforeClose` runs first when the test ends (a gate to open before the hub closes).
 */
export async function serveHub(
  t: TestContext,
  hub: LiveHub,
  handle: ReturnType<typeof createHandler>,
  hosts: Set<string>,
  beforeClose: () => void = () => {},
): Promise<number> {
  const server = createServer((req, res) => {
    const request = { method: req.method ?? "", target: req.url ?? "", host: req.headers.host };
    if (/\/live\?/.test(request.target)) {
      req.resume();
      void hub.serve(req, res, request);
    } else {
      const out = handle(request);
      res.writeHead(out.status, out.headers).end(out.body);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(async () => {
    beforeClose();
    await hub.close();
    server.closeAllConnections();
    server.close();
  });
  const address = server.address();
  assert.ok(address !== null && typeof address === "object");
  hosts.add(`127.0.0.1:${address.port}`);
  return address.port;
}
