// The attacker of cache-private.test.ts, run as another user (test/helpers/other-user.ts).
//   plant <cache folder> <shard name> <target>: makes the cache folder first, world-writable,
//     with the shard a symbolic link to `target` (another database the victim owns).
//   read <file>...: tries to read each file; prints `<file> <errno or "read">` per line.
import { chmodSync, mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";

const [mode, ...args] = process.argv.slice(2);
if (mode === "plant") {
  const [folder, shard, target] = args as [string, string, string];
  mkdirSync(folder, { recursive: true });
  chmodSync(folder, 0o777);
  symlinkSync(target, join(folder, shard));
  process.stdout.write("planted\n");
} else if (mode === "read") {
  for (const file of args) {
    try {
      readFileSync(file);
      process.stdout.write(`${file} read\n`);
    } catch (e) {
      process.stdout.write(`${file} ${(e as NodeJS.ErrnoException).code}\n`);
    }
  }
} else {
  throw new Error(`unknown mode ${mode}`);
}
