// How every `conversation` command reads its flags: node:util parseArgs, strict (an unknown
// flag throws parseArgs' TypeError, which args.ts turns into a usage error), positionals allowed
// so that each command says which it takes and refuses the rest in words of its own.
import { type ParseArgsOptionsConfig, parseArgs } from "node:util";

/** `args` parsed by `options`, strictly, positionals kept. */
export function parseFlags<O extends ParseArgsOptionsConfig>(args: string[], options: O) {
  return parseArgs({ args, options, allowPositionals: true as const, strict: true as const });
}
