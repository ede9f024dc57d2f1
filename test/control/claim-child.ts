// A claimer in its own process, for claim.test.ts: races and crashes need real pids. Argv[2] is
// a JSON ChildArgs. It prints one JSON event per line; stdin lines "go" and "release" drive it,
// and stdin EOF ends it, so a child never outlives its test.
import { ClaimStore, type SeatKey } from "../../src/control/claim/claim.ts";
import { isControlRefusal } from "../../src/control/refusal.ts";

export type ChildArgs = {
  root: string;
  /** race: ready, wait for "go", acquire; hold: acquire at once; crash: acquire, mark stopping. */
  mode: "race" | "hold" | "crash";
  seatKey: SeatKey;
  sessionKey: string;
  execution: string;
  /** crash mode: SIGKILL self right after the revision `<key>:<state>` is committed. */
  crashAfter?: "session:held" | "seat:held" | "session:stopping";
};

export type ChildEvent =
  | { event: "ready"; pid: number }
  | { event: "acquired"; pid: number; revisions: { session: number | null; seat: number | null } }
  | { event: "refused"; pid: number; code: string; message: string }
  | { event: "released"; pid: number };

const args = JSON.parse(process.argv[2] ?? "{}") as ChildArgs;

function emit(e: ChildEvent): void {
  process.stdout.write(`${JSON.stringify(e)}\n`);
}

const waiters = new Map<string, () => void>();
let buffered = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk: string) => {
  buffered += chunk;
  for (let i = buffered.indexOf("\n"); i >= 0; i = buffered.indexOf("\n")) {
    const line = buffered.slice(0, i);
    buffered = buffered.slice(i + 1);
    waiters.get(line)?.();
  }
});
process.stdin.on("end", () => process.exit(0));

const command = (line: string): Promise<void> =>
  new Promise((resolve) => waiters.set(line, resolve));

const store = new ClaimStore({
  root: args.root,
  afterWrite: (revision) => {
    if (args.mode === "crash" && `${revision.key}:${revision.state}` === args.crashAfter) {
      process.kill(process.pid, "SIGKILL");
    }
  },
});
const holder = await store.holderFor({ execution: args.execution, incarnation: "i1" });

if (args.mode === "race") {
  const go = command("go");
  emit({ event: "ready", pid: process.pid });
  await go;
}
try {
  const claim = await store.acquire({ seatKey: args.seatKey, sessionKey: args.sessionKey, holder });
  if (args.mode === "crash") await store.markStopping(claim);
  const release = command("release");
  emit({ event: "acquired", pid: process.pid, revisions: claim.revisions });
  await release;
  await store.release(claim, "engine-exited");
  emit({ event: "released", pid: process.pid });
  process.exit(0);
} catch (e) {
  if (!isControlRefusal(e)) throw e;
  emit({ event: "refused", pid: process.pid, code: e.code, message: e.message });
  process.exit(0);
}
