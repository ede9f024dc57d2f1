// The mediated terminal in the seed's direct form: `node src/control/terminal.ts --socket PATH
// --grant ID [...]` is `conversation attach --socket PATH --grant ID [...]`, the same code
// (src/cli/attach.ts through the CLI's process runner): the same options, keys, screens and exit
// statuses. Nothing here but the entry point. docs/terminal.md describes the terminal.
import { runProcess } from "../cli/main.ts";

if (import.meta.main) await runProcess(["attach", ...process.argv.slice(2)]);
