// The private-folder rule (src/fs/private-folder.ts), the one the control layer and the search
// cache share: a real folder of this user with mode 0700, every folder above it up to `/`
// this user's or root's and not writable by group or others unless sticky (and then what is
// in it this user's or root's), links followed and their targets checked; files 0600, one
// name, this user's. Ownership by another user is made with chown (the tests run as root);
// what that user can then do is proven by the attacks in socket-peer and cache-private.
import assert from "node:assert/strict";
import {
  chmodSync,
  chownSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import {
  checkParents,
  checkPrivateFile,
  checkPrivateFolder,
  ensurePrivateFolder,
  type PrivateCheck,
} from "../../src/fs/private-folder.ts";

const WORDS = { what: "the state dir", instead: "choose another with --state-dir" };
const asRoot = { skip: process.getuid?.() === 0 ? false : "chown needs root" };

function temp(t: TestContext): string {
  const dir = mkdtempSync("/tmp/pf-");
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function refusal(check: PrivateCheck): { code: string; path: string; message: string } {
  assert.equal(check.ok, false, "refused");
  return check.ok ? { code: "", path: "", message: "" } : check.problem;
}

describe("private-folder", () => {
  it("creates a missing folder and its missing parents 0700 when asked to", (t) => {
    const base = temp(t);
    const made = join(base, "a", "b", "state");
    assert.deepEqual(ensurePrivateFolder(made, WORDS), { ok: true });
    for (const d of [join(base, "a"), join(base, "a", "b"), made]) {
      assert.equal(statSync(d).mode & 0o7777, 0o700, d);
    }
    assert.deepEqual(checkPrivateFolder(made, WORDS), { ok: true });
  });

  it("refuses a folder others can enter or write, with the chmod that fixes it", (t) => {
    const dir = join(temp(t), "state");
    mkdirSync(dir);
    chmodSync(dir, 0o777);
    assert.equal(
      refusal(checkPrivateFolder(dir, WORDS)).message,
      `the state dir ${dir} is writable by others (mode 777): make it yours and 0700 (chmod 700 ${dir}), or choose another with --state-dir`,
    );
    chmodSync(dir, 0o711);
    assert.match(
      refusal(ensurePrivateFolder(dir, WORDS)).message,
      /can be entered by others \(mode 711\)/,
    );
  });

  it("refuses a folder that is a link, or not a folder, or not there", (t) => {
    const base = temp(t);
    const real = join(base, "real");
    mkdirSync(real, { mode: 0o700 });
    symlinkSync(real, join(base, "link"));
    assert.equal(refusal(checkPrivateFolder(join(base, "link"), WORDS)).code, "link");
    writeFileSync(join(base, "file"), "");
    assert.equal(refusal(checkPrivateFolder(join(base, "file"), WORDS)).code, "not-a-folder");
    assert.equal(refusal(checkPrivateFolder(join(base, "none"), WORDS)).code, "missing");
  });

  it("refuses a folder another user owns", asRoot, (t) => {
    const dir = join(temp(t), "state");
    mkdirSync(dir, { mode: 0o700 });
    chownSync(dir, 65534, 65534);
    const p = refusal(checkPrivateFolder(dir, WORDS));
    assert.equal(p.code, "not-yours");
    assert.match(p.message, /belongs to uid 65534, not to you \(uid 0\)/);
  });

  it("refuses, and creates nothing, under a folder group or others can write", (t) => {
    const base = temp(t);
    const open = join(base, "open");
    mkdirSync(open);
    for (const mode of [0o777, 0o770, 0o757]) {
      chmodSync(open, mode);
      const wanted = join(open, "x", "state");
      const p = refusal(ensurePrivateFolder(wanted, WORDS));
      assert.equal(p.code, "unsafe-parent");
      assert.equal(p.path, open);
      assert.ok(p.message.startsWith(`${open}, above the state dir ${wanted}, is writable by`));
      assert.ok(p.message.includes(`(mode ${mode.toString(8)})`), p.message);
      assert.ok(p.message.includes(`chmod go-w ${open}`), p.message);
      assert.equal(existsSync(join(open, "x")), false, "nothing was made there");
    }
  });

  it("refuses a folder above that another user owns", asRoot, (t) => {
    const base = temp(t);
    const theirs = join(base, "theirs");
    mkdirSync(join(theirs, "state"), { recursive: true, mode: 0o700 });
    chmodSync(theirs, 0o755);
    chownSync(theirs, 65534, 65534);
    const p = refusal(checkPrivateFolder(join(theirs, "state"), WORDS));
    assert.equal(p.path, theirs);
    assert.match(p.message, /belongs to uid 65534: that user could replace what is in it/);
  });

  it("accepts a sticky shared folder above, when what is in it is this user's", asRoot, (t) => {
    const base = temp(t);
    const shared = join(base, "shared");
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    const mine = join(shared, "mine", "state");
    assert.deepEqual(ensurePrivateFolder(mine, WORDS), { ok: true });
    // Theirs in the sticky folder: they can replace what is under it.
    const theirs = join(shared, "theirs");
    mkdirSync(join(theirs, "state"), { recursive: true, mode: 0o700 });
    chownSync(theirs, 65534, 65534);
    const p = refusal(checkPrivateFolder(join(theirs, "state"), WORDS));
    assert.equal(p.path, theirs);
    assert.match(p.message, /is in the shared folder .*shared and belongs to uid 65534/);
  });

  it("follows a link on the way and checks where it leads", (t) => {
    const base = temp(t);
    const safe = join(base, "safe");
    mkdirSync(join(safe, "state"), { recursive: true, mode: 0o700 });
    symlinkSync(safe, join(base, "via"));
    assert.deepEqual(checkPrivateFolder(join(base, "via", "state"), WORDS), { ok: true });
    // The same link to a folder others can write: refused at the folder it leads to.
    const open = join(base, "open");
    mkdirSync(join(open, "state"), { recursive: true, mode: 0o700 });
    chmodSync(open, 0o777);
    symlinkSync(open, join(base, "via-open"));
    const p = refusal(checkPrivateFolder(join(base, "via-open", "state"), WORDS));
    assert.equal(p.path, open);
    // A loop is refused, not walked forever.
    symlinkSync(join(base, "loop-b"), join(base, "loop-a"));
    symlinkSync(join(base, "loop-a"), join(base, "loop-b"));
    assert.equal(refusal(checkParents(join(base, "loop-a", "x"), WORDS)).code, "unusable");
  });

  it("takes files only when they are regular, this user's, one name and 0600", asRoot, (t) => {
    const dir = temp(t);
    const file = join(dir, "f");
    writeFileSync(file, "x", { mode: 0o600 });
    assert.deepEqual(checkPrivateFile(file, WORDS), { ok: true });
    chmodSync(file, 0o644);
    assert.equal(refusal(checkPrivateFile(file, WORDS)).code, "open");
    chmodSync(file, 0o600);
    linkSync(file, join(dir, "second"));
    assert.equal(refusal(checkPrivateFile(file, WORDS)).code, "linked-twice");
    rmSync(join(dir, "second"));
    chownSync(file, 65534, 65534);
    assert.equal(refusal(checkPrivateFile(file, WORDS)).code, "not-yours");
    symlinkSync(file, join(dir, "l"));
    assert.equal(refusal(checkPrivateFile(join(dir, "l"), WORDS)).code, "link");
    mkdirSync(join(dir, "d"));
    assert.equal(refusal(checkPrivateFile(join(dir, "d"), WORDS)).code, "not-a-file");
    assert.equal(refusal(checkPrivateFile(join(dir, "none"), WORDS)).code, "missing");
  });
});
