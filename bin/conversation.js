#!/usr/bin/env node
// The `conversation` bin. Plain JavaScript that an older Node still parses, so that Node gets
// one line saying what to install (exit 2, a usage-level failure) instead of a stack trace from
// the real CLI, which needs Node 24 (package.json "engines").
const [major] = process.versions.node.split(".").map(Number);
if (!(major >= 24)) {
  process.stderr.write(
    `conversation: needs Node 24 or newer, and this is Node ${process.versions.node}; ` +
      "install Node 24 (https://nodejs.org/en/download, or `nvm install 24`) and run it again\n",
  );
  process.exit(2);
}
const cli = await import("../dist/cli/main.js");
await cli.runProcess();
