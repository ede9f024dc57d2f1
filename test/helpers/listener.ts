// A Unix socket this test process listens on, as a controller's would be for the registry
// (register() records the socket's identity; peer.ts checks who listens): closed after the test.
import { createServer, type Server } from "node:net";
import type { TestContext } from "node:test";

/** Listens on `path` (each connection is closed at once); the server closes after the test. */
export async function listenOn(t: Pick<TestContext, "after">, path: string): Promise<Server> {
  const server = createServer((c) => c.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(path, resolve);
  });
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return server;
}
