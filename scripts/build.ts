// `npm run build` (and `prepack`): dist/ from nothing, so a tarball never carries stale files.
// The Console's bundles first when the project has a `build:console` script (their output,
// src/present/vendor.js, src/board/console/present.js and transcript.js, is git-ignored), then
// tsc, then the Console's folder as it is (the board reads those files next to its own module,
// dist/board/console/) and the Markdown bundle beside dist/present/markdown.js.
import { spawnSync } from "node:child_process";
import { cpSync, readFileSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "..");
const DIST = join(ROOT, "dist");

function run(what: string, command: string, args: string[]): void {
  const r = spawnSync(command, args, { cwd: ROOT, stdio: "inherit" });
  if (r.error) throw new Error(`${what}: ${r.error.message}`);
  if (r.status !== 0) {
    process.stderr.write(`build: ${what} failed (${r.signal ?? `exit ${r.status}`})\n`);
    process.exit(1);
  }
}

const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  scripts?: Record<string, string>;
};
rmSync(DIST, { recursive: true, force: true });
if (pkg.scripts?.["build:console"] !== undefined) {
  // npm_execpath is the npm that runs this script; fall back to `npm` on PATH.
  const npm = process.env.npm_execpath;
  if (npm?.endsWith(".js")) run("build:console", process.execPath, [npm, "run", "build:console"]);
  else run("build:console", "npm", ["run", "build:console"]);
}
run("tsc", process.execPath, [
  join(ROOT, "node_modules/typescript/bin/tsc"),
  "-p",
  "tsconfig.build.json",
]);
cpSync(join(ROOT, "src/board/console"), join(DIST, "board/console"), { recursive: true });
// The Markdown bundle markdown.ts imports (tsc compiles TypeScript only), with its types.
for (const f of ["vendor.js", "vendor.d.ts"]) {
  cpSync(join(ROOT, "src/present", f), join(DIST, "present", f));
}
process.stdout.write(`build: ${DIST}\n`);
