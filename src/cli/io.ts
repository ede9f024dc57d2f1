// Where a command writes: the process's stdout and stderr in a shell, buffers in tests.
export type Io = {
  out(text: string): void;
  err(text: string): void;
  /** Columns for text output. */
  width: number;
};
