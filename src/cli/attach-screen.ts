// Where `conversation attach` reads keys and draws: the process's terminal (raw mode, its size,
// SIGWINCH as `resize`) or, off a terminal, stdin and stdout with the size the flags fix.
import type { AttachCommand } from "./attach-args.ts";

/** Where the app reads keys and draws. `tty` selects raw mode and control sequences. */
export type Screen = {
  tty: boolean;
  input: NodeJS.ReadableStream;
  write(text: string): void;
  size(): { columns: number; rows: number };
  onResize(fn: () => void): () => void;
  setRaw(on: boolean): void;
};

export function processScreen(cmd: AttachCommand): Screen {
  const tty = process.stdin.isTTY === true && process.stdout.isTTY === true;
  return {
    tty,
    input: process.stdin,
    write: (text) => process.stdout.write(text),
    size: () =>
      tty
        ? { columns: process.stdout.columns || 80, rows: process.stdout.rows || 24 }
        : { columns: cmd.columns ?? 80, rows: cmd.rows ?? 24 },
    onResize: (fn) => {
      if (!tty) return () => {};
      // Node turns SIGWINCH into the stream's `resize` event.
      process.stdout.on("resize", fn);
      return () => process.stdout.off("resize", fn);
    },
    setRaw: (on) => {
      if (tty) process.stdin.setRawMode(on);
    },
  };
}
