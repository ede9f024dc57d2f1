// How to invoke this command again, for the lines it prints ("Attach: ..."): one place that
// decides, so every printed command runs as printed. Run through `npm run conversation` (a
// checkout), it is `npm run conversation --`; run as the installed `conversation` bin, it is
// `conversation`; otherwise (`node src/cli/main.ts`, tests) it is this Node and this script,
// quoted. Arguments are quoted for a POSIX shell.

/** The words that start this command, as a shell line prefix. */
export function invocationPrefix(
  env: NodeJS.ProcessEnv = process.env,
  argv: readonly string[] = process.argv,
): string {
  if (env.npm_lifecycle_event === "conversation") return "npm run conversation --";
  const script = argv[1] ?? "";
  if (/(^|\/)conversation(\.js)?$/.test(script)) return "conversation";
  return [process.execPath, script].map(shellQuote).join(" ");
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
