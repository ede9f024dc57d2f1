// Run as another user by requestAsOtherUser (test/helpers/other-user.ts): sends one HTTP
// request to the board on 127.0.0.1:<port> and prints { uid, status, body } as JSON.
//   node attacker-request.ts <port> '{"path","method","headers","body"}'
import { request } from "node:http";

const port = Number(process.argv[2]);
const spec = JSON.parse(process.argv[3] ?? "{}") as {
  path: string;
  method: string;
  headers?: Record<string, string>;
  body?: string;
};
const req = request(
  {
    host: "127.0.0.1",
    port,
    path: spec.path,
    method: spec.method,
    headers: spec.headers,
    agent: false,
    signal: AbortSignal.timeout(10_000),
  },
  (res) => {
    const chunks: Buffer[] = [];
    res.on("data", (c: Buffer) => chunks.push(c));
    res.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      process.stdout.write(
        JSON.stringify({ uid: process.getuid?.(), status: res.statusCode, body }),
      );
    });
  },
);
req.on("error", (e) => {
  process.stderr.write(String(e));
  process.exit(1);
});
req.end(spec.body);
