// A tiny scriptable engine for the engine link's tests. A `prompt` command's message says what
// to do ("<verb> <argument>"); any other command is echoed back in a success response.
// Run as `node test/control/tiny-engine.ts`. Not a model of Pi (fake-pi.ts is).
import { closeSync, readFileSync } from "node:fs";
import { LineSplitter } from "../../src/control/engine/framing.ts";

type Command = { id?: string; type?: string; [key: string]: unknown };

function out(text: string): void {
  process.stdout.write(text);
}

function respond(cmd: Command, data?: unknown): void {
  out(
    `${JSON.stringify({ id: cmd.id, type: "response", command: cmd.type, success: true, data })}\n`,
  );
}

function handle(cmd: Command): void {
  if (cmd.type !== "prompt") {
    respond(cmd, { echo: cmd });
    return;
  }
  const message = String(cmd.message);
  const space = message.indexOf(" ");
  const verb = space === -1 ? message : message.slice(0, space);
  const arg = space === -1 ? "" : message.slice(space + 1);
  switch (verb) {
    case "whoami": {
      // /proc/self/stat field 5 is the process group (proc(5)); the name field has no spaces here.
      const stat = readFileSync("/proc/self/stat", "utf8").split(" ");
      respond(cmd, {
        env: process.env,
        cwd: process.cwd(),
        pid: process.pid,
        pgrp: Number(stat[4]),
      });
      return;
    }
    case "delay":
      setTimeout(() => respond(cmd, { delayed: Number(arg) }), Number(arg));
      return;
    case "fail":
      out(
        `${JSON.stringify({ id: cmd.id, type: "response", command: "prompt", success: false, error: "no" })}\n`,
      );
      return;
    case "raw":
      // Writes the given text verbatim, then answers.
      out(JSON.parse(arg) as string);
      respond(cmd);
      return;
    case "stderr":
      process.stderr.write("e".repeat(Number(arg) - 4));
      process.stderr.write("TAIL");
      respond(cmd);
      return;
    case "big":
      respond(cmd, "x".repeat(Number(arg)));
      return;
    case "exit":
      process.stderr.write(`exiting ${arg}\n`);
      process.stdout.write("", () => process.exit(Number(arg)));
      return;
    case "close-stdout":
      respond(cmd);
      // process.stdout.destroy() leaves fd 1 open, so close the fd itself.
      process.stdout.write("", () => closeSync(1));
      return;
    case "ignore-eof":
      process.stdin.removeAllListeners("end");
      process.stdin.on("end", () => setInterval(() => {}, 1000));
      respond(cmd);
      return;
    case "ignore-term":
      process.removeAllListeners("SIGTERM");
      process.on("SIGTERM", () => {});
      respond(cmd);
      return;
    case "silent":
      return;
    default:
      respond(cmd, { echo: cmd });
      return;
  }
}

const splitter = new LineSplitter();
process.stdin.on("data", (chunk: Buffer) => {
  for (const line of splitter.push(chunk)) handle(JSON.parse(line) as Command);
});
// Exits once what it wrote has left: a pipe write the reader has not caught up with waits in
// Node's queue, and process.exit drops it (a loaded CI lost 53,824 of 200,000 stderr bytes).
// Callbacks of writes to one stream run in order, so these run after everything before them.
process.stdin.on("end", () => {
  process.stderr.write("", () => process.stdout.write("", () => process.exit(0)));
});
process.on("SIGTERM", () => process.exit(143));
