// The mediated terminal in the seed's direct form (its src/terminal.mjs): `node src/terminal.ts
// --socket PATH --grant ID [...]` is `conversation attach --socket PATH --grant ID [...]`, the
// same code (src/cli/attach.ts through the CLI's process runner): the same options, keys,
// screens and exit statuses. Nothing here but the entry point, which stands above the command
// it runs (control never imports the command). docs/terminal.md describes the terminal.
import { runProcess } from "./cli/main.ts";

if (import.meta.main) await runProcess(["attach", ...process.argv.slice(2)]);
