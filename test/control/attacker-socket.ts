// The attacker of socket-peer.test.ts, run as another user (test/helpers/other-user.ts): it
// renames a folder it may write in aside, puts its own socket where the registry points, and
// reports every connection and every byte sent to it on stdout, one line each. It answers
// nothing and runs until it is killed.
//   node attacker-socket.ts <folder to move aside> <socket path>
import { chmodSync, mkdirSync, renameSync } from "node:fs";
import { createServer } from "node:net";
import { dirname } from "node:path";

const [aside, socket] = process.argv.slice(2);
if (aside === undefined || socket === undefined) throw new Error("usage: <aside> <socket>");
renameSync(aside, `${aside}.aside`);
mkdirSync(dirname(socket), { recursive: true, mode: 0o777 });
const server = createServer((conn) => {
  process.stdout.write("connection\n");
  conn.on("data", (d: Buffer) => process.stdout.write(`got ${JSON.stringify(d.toString())}\n`));
  conn.on("error", () => {});
});
server.listen(socket, () => {
  chmodSync(socket, 0o777);
  process.stdout.write("ready\n");
});
