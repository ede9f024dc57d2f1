import assert from "node:assert/strict";
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import {
  followPath,
  LIVE_DIRS,
  LiveSessionGuard,
  PI_SESSION_PLACE,
} from "../../src/control/engine/guard.ts";
import { isControlRefusal } from "../../src/control/refusal.ts";
import { tempDir } from "../helpers/reader.ts";

function refuses(fn: () => unknown, code: string, ...mentions: string[]): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(isControlRefusal(e), `expected a ControlRefusal, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    for (const m of mentions) assert.ok(e.message.includes(m), `${e.message} lacks ${m}`);
    return true;
  });
}

function touch(file: string, text = "{}\n"): string {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}

type Scene = {
  base: string;
  home: string;
  fixture: string;
  sessions: string;
  session: string;
  liveSession: string;
};

/**
 * A scratch HOME (restored after the test) with a live Pi session, and a fixture root with one
 * placed session: `<fixture>/demo/.pi/state/main/sessions/s.jsonl`.
 */
function scene(t: TestContext): Scene {
  const base = tempDir(t, "conv-guard-");
  const home = join(base, "home");
  const saved = process.env.HOME;
  process.env.HOME = home;
  t.after(() => {
    if (saved === undefined) delete process.env.HOME;
    else process.env.HOME = saved;
  });
  const liveSession = touch(join(home, ".pi", "agent", "sessions", "--w--", "live.jsonl"));
  for (const d of LIVE_DIRS) mkdirSync(join(home, d), { recursive: true });
  const fixture = join(base, "fixture");
  const sessions = join(fixture, "demo", ".pi", "state", "main", "sessions");
  const session = touch(join(sessions, "s.jsonl"));
  return { base, home, fixture, sessions, session, liveSession };
}

describe("guard: live roots (G1)", () => {
  it("takes its home from os.homedir(), which follows $HOME", (t) => {
    const s = scene(t);
    assert.equal(homedir(), s.home);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    assert.deepEqual(guard.liveRoots, [
      join(s.home, ".pi"),
      join(s.home, ".claude"),
      join(s.home, ".mosaic-dev"),
    ]);
  });

  for (const dir of LIVE_DIRS) {
    it(`refuses live-session-refused for a path inside ~/${dir}`, (t) => {
      const s = scene(t);
      const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
      const file = touch(join(s.home, dir, "x", "y.jsonl"));
      refuses(() => guard.check(file), "live-session-refused", join(s.home, dir));
    });
  }

  it("refuses live-session-refused for the live root itself", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    refuses(() => guard.check(join(s.home, ".pi")), "live-session-refused");
  });

  it("refuses live-session-refused for a path in a live root that doesn't exist yet", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    const future = join(s.home, ".mosaic-dev", "new", "dir");
    refuses(() => guard.check(future), "live-session-refused", future);
  });

  it("refuses live-session-refused for a live path written with ..", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    const written = `${s.home}/elsewhere/../.pi/agent/sessions`;
    refuses(() => guard.check(written), "live-session-refused");
  });

  it("protects the live roots of every home in guardOptions.homes", (t) => {
    const s = scene(t);
    const realHome = join(s.base, "real-home");
    const claude = touch(join(realHome, ".claude", "projects", "p", "c.jsonl"));
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture, homes: [realHome] });
    assert.ok(guard.liveRoots.includes(join(realHome, ".pi")));
    refuses(() => guard.check(claude), "live-session-refused", join(realHome, ".claude"));
    refuses(() => guard.check(s.liveSession), "live-session-refused");
  });

  it("accepts a path beside a live root whose name merely starts the same", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    const beside = touch(join(s.home, ".pinot", "x"));
    assert.equal(guard.check(beside).real, beside);
    assert.equal(guard.liveRootOf(beside), null);
  });

  it("accepts a fixture path and stamps each component it resolved", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    const stamp = guard.check(s.session);
    assert.equal(stamp.real, s.session);
    assert.equal(stamp.steps.at(-1)?.path, s.session);
    assert.equal(stamp.steps.at(-1)?.kind, "file");
  });

  it("refuses configuration for a relative path", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    refuses(() => guard.check("fixture/x"), "configuration", "absolute");
  });
});

describe("guard: symlinked live paths at construction (G2)", () => {
  it("refuses live-session-refused for a symlinked directory into a live root", (t) => {
    const s = scene(t);
    rmSync(s.sessions, { recursive: true });
    symlinkSync(dirname(s.liveSession), s.sessions);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    const viaLink = join(s.sessions, "live.jsonl");
    refuses(() => guard.checkSessionFile(viaLink), "live-session-refused", s.liveSession);
  });

  it("refuses live-session-refused for a session file symlinked to a live session", (t) => {
    const s = scene(t);
    const link = join(s.sessions, "linked.jsonl");
    symlinkSync(s.liveSession, link);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    refuses(() => guard.checkSessionFile(link, "main"), "live-session-refused", s.liveSession);
  });

  it("refuses live-session-refused for a dangling symlink into a live root", (t) => {
    const s = scene(t);
    const link = join(s.sessions, "dangling.jsonl");
    const target = join(dirname(s.liveSession), "not-yet.jsonl");
    symlinkSync(target, link);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    refuses(() => guard.checkSessionFile(link), "live-session-refused", target);
  });

  it("refuses live-session-refused for a relative symlink climbing into a live root", (t) => {
    const s = scene(t);
    const link = join(s.sessions, "rel.jsonl");
    const up = "../../../../../../home/.pi/agent/sessions/--w--/live.jsonl";
    symlinkSync(up, link);
    assert.equal(followPath(link).real, s.liveSession);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    refuses(() => guard.checkSessionFile(link), "live-session-refused");
  });

  it("refuses live-session-refused for .. after a symlink, as the kernel resolves it", (t) => {
    const s = scene(t);
    const link = join(s.fixture, "up");
    symlinkSync(join(s.home, ".pi", "agent", "sessions"), link);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    // Lexically this is <fixture>/settings.json; the kernel reaches ~/.pi/agent/settings.json.
    const written = `${link}/../settings.json`;
    assert.equal(followPath(written).real, join(s.home, ".pi", "agent", "settings.json"));
    refuses(() => guard.check(written), "live-session-refused");
  });

  it("refuses live-session-refused for a path under a live root's own symlink target", (t) => {
    const s = scene(t);
    const store = join(s.base, "pi-store");
    mkdirSync(store);
    rmSync(join(s.home, ".pi"), { recursive: true });
    symlinkSync(store, join(s.home, ".pi"));
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    const file = touch(join(store, "agent", "sessions", "x.jsonl"));
    refuses(() => guard.check(file), "live-session-refused", join(s.home, ".pi"));
  });

  it("refuses live-session-refused for a symlink loop", (t) => {
    const s = scene(t);
    const a = join(s.fixture, "a");
    const b = join(s.fixture, "b");
    symlinkSync(b, a);
    symlinkSync(a, b);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    refuses(() => guard.check(join(a, "x")), "live-session-refused", "loop");
  });

  it("refuses live-session-refused for a fixture root inside a live root", (t) => {
    const s = scene(t);
    const fixtureRoot = join(s.home, ".pi", "agent");
    refuses(() => new LiveSessionGuard({ fixtureRoot }), "live-session-refused");
  });

  it("refuses live-session-refused for a fixture root symlinked into a live root", (t) => {
    const s = scene(t);
    const fixtureRoot = join(s.base, "fixture-link");
    symlinkSync(join(s.home, ".claude"), fixtureRoot);
    refuses(() => new LiveSessionGuard({ fixtureRoot }), "live-session-refused", ".claude");
  });
});

describe("guard: the session file's place", () => {
  it("accepts <project>/.pi/state/<seat>/sessions/<name>.jsonl inside fixtureRoot", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    assert.deepEqual(guard.checkSessionFile(s.session, "main").session, {
      seat: "main",
      place: PI_SESSION_PLACE,
    });
    assert.equal(guard.checkSessionFile(s.session).real, s.session);
  });

  it("refuses configuration for a missing session file path", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    refuses(() => guard.checkSessionFile(""), "configuration", "required");
  });

  it("refuses configuration for a relative session file path", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    refuses(() => guard.checkSessionFile("demo/.pi/state/main/sessions/s.jsonl"), "configuration");
  });

  it("refuses configuration for an unnormalized session file path", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    const written = `${s.sessions}/../sessions/s.jsonl`;
    refuses(() => guard.checkSessionFile(written), "configuration", "normalized");
  });

  it("refuses configuration for a session file outside the seat layout", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    const misplaced = touch(join(s.fixture, "demo", "sessions", "s.jsonl"));
    refuses(() => guard.checkSessionFile(misplaced), "configuration", "<project>/.pi/state");
  });

  it("refuses configuration for a session file that isn't .jsonl", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    refuses(() => guard.checkSessionFile(join(s.sessions, "s.json")), "configuration");
  });

  it("refuses configuration for a session file under another seat", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    refuses(() => guard.checkSessionFile(s.session, "other"), "configuration", "state/other");
  });

  it("refuses configuration for a seat directory that isn't a seat name", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    const odd = join(s.fixture, "demo", ".pi", "state", "-x", "sessions", "s.jsonl");
    refuses(() => guard.checkSessionFile(odd), "configuration");
  });

  it("refuses configuration for a placed session file outside fixtureRoot", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    const outside = touch(
      join(s.base, "elsewhere", "demo", ".pi", "state", "main", "sessions", "o.jsonl"),
    );
    refuses(() => guard.checkSessionFile(outside), "configuration", s.fixture);
  });

  it("refuses live-session-refused for a session file whose real path leaves fixtureRoot", (t) => {
    const s = scene(t);
    const outside = touch(join(s.base, "elsewhere", "o.jsonl"));
    const link = join(s.sessions, "out.jsonl");
    symlinkSync(outside, link);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    refuses(() => guard.checkSessionFile(link), "live-session-refused", "outside fixtureRoot");
  });

  it("refuses configuration for a missing or relative fixture root", (t) => {
    scene(t);
    refuses(() => new LiveSessionGuard({ fixtureRoot: "" }), "configuration", "fixtureRoot");
    refuses(() => new LiveSessionGuard({ fixtureRoot: "fixture" }), "configuration", "fixtureRoot");
  });

  it("refuses configuration for a fixture root that doesn't exist", (t) => {
    const s = scene(t);
    const fixtureRoot = join(s.base, "nowhere");
    refuses(() => new LiveSessionGuard({ fixtureRoot }), "configuration", "not a directory");
  });

  it("refuses configuration for a relative home in guardOptions.homes", (t) => {
    const s = scene(t);
    const options = { fixtureRoot: s.fixture, homes: ["home"] };
    refuses(() => new LiveSessionGuard(options), "configuration", "home");
  });
});

describe("guard: swaps between construction and bind (G3)", () => {
  it("binds when nothing changed", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    const stamp = guard.checkSessionFile(s.session, "main");
    assert.equal(guard.bindCheck(s.session, stamp).real, s.session);
  });

  it("refuses live-session-refused when a directory was swapped for a symlink into a live root", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    const stamp = guard.checkSessionFile(s.session);
    rmSync(s.sessions, { recursive: true });
    touch(join(dirname(s.liveSession), "s.jsonl"));
    symlinkSync(dirname(s.liveSession), s.sessions);
    refuses(() => guard.bindCheck(s.session, stamp), "live-session-refused", ".pi");
  });

  it("refuses live-session-refused when a directory was swapped for another one", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    const stamp = guard.checkSessionFile(s.session);
    const state = join(s.fixture, "demo", ".pi", "state");
    renameSync(state, join(s.fixture, "old-state"));
    touch(s.session);
    refuses(() => guard.bindCheck(s.session, stamp), "live-session-refused", "changed", state);
  });

  it("refuses live-session-refused when the session file was replaced", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    const stamp = guard.checkSessionFile(s.session);
    const fresh = touch(join(s.sessions, "fresh.jsonl"));
    renameSync(fresh, s.session);
    refuses(() => guard.bindCheck(s.session, stamp), "live-session-refused", "changed");
  });

  it("refuses live-session-refused when a component was removed", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    const stamp = guard.checkSessionFile(s.session);
    rmSync(s.session);
    refuses(() => guard.bindCheck(s.session, stamp), "live-session-refused", "changed");
  });

  it("refuses live-session-refused when a symlink's target was swapped into a live root", (t) => {
    const s = scene(t);
    const store = join(s.base, "store");
    touch(join(store, "sessions", "s.jsonl"));
    rmSync(s.sessions, { recursive: true });
    symlinkSync(join(store, "sessions"), s.sessions);
    const guard = new LiveSessionGuard({ fixtureRoot: s.base });
    const stamp = guard.check(s.session);
    renameSync(store, join(s.base, "old-store"));
    symlinkSync(join(s.home, ".pi", "agent"), store);
    touch(join(s.home, ".pi", "agent", "sessions", "s.jsonl"));
    refuses(() => guard.bindCheck(s.session, stamp), "live-session-refused", ".pi");
  });

  it("allows a component created since construction, and checks it", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    const socketDir = join(s.fixture, "run", "sock");
    const stamp = guard.check(socketDir);
    assert.equal(stamp.steps.at(-1)?.kind, "missing");
    mkdirSync(socketDir, { recursive: true });
    assert.equal(guard.bindCheck(socketDir, stamp).steps.at(-1)?.kind, "dir");
  });

  it("refuses live-session-refused when a component created since is a symlink into a live root", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    const socketDir = join(s.fixture, "run");
    const stamp = guard.check(socketDir);
    symlinkSync(join(s.home, ".mosaic-dev"), socketDir);
    refuses(() => guard.bindCheck(socketDir, stamp), "live-session-refused", ".mosaic-dev");
  });

  it("refuses live-session-refused when bind names another path than construction", (t) => {
    const s = scene(t);
    const guard = new LiveSessionGuard({ fixtureRoot: s.fixture });
    const stamp = guard.check(s.session);
    refuses(() => guard.bindCheck(s.sessions, stamp), "live-session-refused", "bind names");
  });
});
