// How to invoke this command again, for the lines it prints ("Attach: ..."): one place that
// decides, so every printed command runs as printed. Run through an npm script of a checkout
// (`npm run conversation`, `npm start`), it is `npm run conversation --`; run as the installed
// `conversation` bin, it is `conversation`; otherwise (`node src/cli/main.ts`, a library host,
// tests) it is this Node and this module's `main`, absolute. Arguments are quoted for a POSIX
// shell.
import { extname, join } from "node:path";

const NPM_SCRIPTS = new Set(["conversation", "start"]);

/** The words that start this command, as a shell line prefix. */
export function invocationPrefix(
  env: NodeJS.ProcessEnv = process.env,
  argv: readonly string[] = process.argv,
): string {
  const script = env.npm_lifecycle_event;
  if (script !== undefined && NPM_SCRIPTS.has(script)) return "npm run conversation --";
  if (/(^|\/)conversation(\.js)?$/.test(argv[1] ?? "")) return "conversation";
  const main = join(import.meta.dirname, `main${extname(import.meta.filename)}`);
  return [process.execPath, main].map(shellQuote).join(" ");
}

/** A command line that runs `conversation <args...>` as printed. */
export function commandLine(args: readonly string[]): string {
  return [invocationPrefix(), ...args.map(shellQuote)].join(" ");
}

/** `s` as one POSIX shell word: bare when it is plain, else single-quoted. */
export function shellQuote(s: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(s)) return s;
  return `'${s.replaceAll("'", `'\\''`)}'`;
}
