// Pi's own session store as a source (issue 12): `<store>/--<encoded cwd>--/*.jsonl`. Every call
// goes through checkedReader (the store's tree fingerprinted before and after, every result
// schema-checked), so each test also proves the reader wrote, created and changed nothing there.
import assert from "node:assert/strict";
import {
  appendFileSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, it, type TestContext } from "node:test";
import {
  type BoardSpec,
  type CatalogueRow,
  conversationId,
  defaultPiSessionsDir,
  encodeCwd,
  rootsFromSpecs,
  STORE_SEAT,
} from "../../src/index.ts";
import { COUNT_BUDGET } from "../../src/reader/message-count.ts";
import {
  assistant,
  checkedReader,
  entriesOf,
  expectOk,
  expectRefusal,
  header,
  project,
  readAll,
  rootsOf,
  tempDir,
  user,
  writeSession,
} from "../helpers/reader.ts";

type Store = { base: string; store: string; spec: BoardSpec };

/** `<tmp>/agent/sessions`, created, and its spec. */
function makeStore(t: TestContext): Store {
  const base = tempDir(t, "pi-store-");
  const store = join(base, "agent", "sessions");
  mkdirSync(store, { recursive: true });
  return { base, store, spec: { kind: "pi-agent", sessionsDir: store } };
}

/** A session of `cwd` in its directory of the store, as Pi files it. */
function writeStoreSession(store: string, cwd: string, name: string, text = "hello"): string {
  const dir = join(store, encodeCwd(cwd));
  mkdirSync(dir, { recursive: true });
  return writeSession(dir, name, [
    header(cwd),
    user("u1", null, text),
    assistant("a1", "u1", `re: ${text}`),
  ]);
}

function readerOver(s: Store, specs: BoardSpec[] = [s.spec]) {
  return checkedReader(s.base, { roots: rootsOf(specs) });
}

function rowNamed(rows: CatalogueRow[], fileName: string): CatalogueRow {
  const row = rows.find((r) => r.fileName === fileName);
  if (!row) throw new Error(`no row for ${fileName}`);
  return row;
}

describe("pi-store", () => {
  describe("sources", () => {
    it("encodes a cwd as Pi names its directory when the path has separators, colons or ..", () => {
      assert.equal(encodeCwd("/home/u/code/app"), "--home-u-code-app--");
      assert.equal(encodeCwd("/home/u/a:b\\c/"), "--home-u-a-b-c--");
      assert.equal(encodeCwd("/home/u/x/../app"), "--home-u-app--");
      assert.equal(encodeCwd("/"), "----");
    });

    it("finds Pi's store in PI_CODING_AGENT_DIR, else in ~/.pi/agent, as Pi's getAgentDir", () => {
      const home = "/h";
      assert.equal(defaultPiSessionsDir({}, home), "/h/.pi/agent/sessions");
      assert.equal(
        defaultPiSessionsDir({ PI_CODING_AGENT_DIR: "" }, home),
        "/h/.pi/agent/sessions",
      );
      assert.equal(defaultPiSessionsDir({ PI_CODING_AGENT_DIR: "/a/g" }, home), "/a/g/sessions");
      assert.equal(defaultPiSessionsDir({ PI_CODING_AGENT_DIR: "~/g" }, home), "/h/g/sessions");
      assert.equal(defaultPiSessionsDir({ PI_CODING_AGENT_DIR: "~" }, home), "/h/sessions");
      assert.equal(
        defaultPiSessionsDir({ PI_CODING_AGENT_DIR: "file:///a/b" }, home),
        "/a/b/sessions",
      );
    });

    it("gives one store root per store when specs name it twice, beside repository roots", () => {
      const roots = rootsFromSpecs(
        [
          { kind: "pi-agent", sessionsDir: "/s/sessions" },
          { kind: "pi-agent", sessionsDir: "/s/sessions/" },
          { kind: "repository", projectRoot: "/p/demo", seat: "main" },
          { kind: "pi-agent", sessionsDir: "" },
        ],
        [],
      );
      assert.deepEqual(
        roots.map((r) => r.kind),
        ["pi-store", "pi"],
      );
      assert.deepEqual(roots[0], { kind: "pi-store", storeDir: "/s/sessions" });
    });
  });

  describe("catalogue", () => {
    it("lists each --…-- directory as a root whose rows show the header's cwd as project", (t) => {
      const s = makeStore(t);
      const app = join(s.base, "code", "app");
      const lib = join(s.base, "code", "lib");
      writeStoreSession(s.store, app, "2026-01-01T00-00-00-000Z_a.jsonl", "first");
      writeStoreSession(s.store, app, "2026-01-02T00-00-00-000Z_b.jsonl", "second");
      writeStoreSession(s.store, lib, "2026-01-03T00-00-00-000Z_c.jsonl", "third");
      const c = readerOver(s).catalogue();
      assert.deepEqual(c.refusedRoots, []);
      assert.deepEqual(
        c.conversations.map((r) => [r.project, r.seat, r.title, r.unsupportedReason]).sort(),
        [
          [app, STORE_SEAT, "first", null],
          [app, STORE_SEAT, "second", null],
          [lib, STORE_SEAT, "third", null],
        ],
      );
      for (const row of c.conversations) assert.match(row.conversation, /^pi-[0-9a-f]{40}$/);
      assert.equal(new Set(c.conversations.map((r) => r.conversation)).size, 3);
    });

    it("ignores entries that are not --…-- directories and everything below the first level", (t) => {
      const s = makeStore(t);
      const app = join(s.base, "app");
      writeStoreSession(s.store, app, "s.jsonl");
      // Not Pi's naming: never listed. A session one level deeper: never listed.
      writeSession(join(s.store), "loose.jsonl", [header(app)]);
      mkdirSync(join(s.store, "other"));
      writeSession(join(s.store, "other"), "o.jsonl", [header(app)]);
      const deep = join(s.store, encodeCwd(app), "nested");
      mkdirSync(deep);
      writeSession(deep, "d.jsonl", [header(app)]);
      const c = readerOver(s).catalogue();
      assert.deepEqual(
        c.conversations.map((r) => r.fileName),
        ["s.jsonl"],
      );
    });

    it("refuses foreign-project when a header's cwd does not encode to its directory", (t) => {
      const s = makeStore(t);
      const app = join(s.base, "app");
      const other = join(s.base, "other");
      writeStoreSession(s.store, app, "good.jsonl");
      const dir = join(s.store, encodeCwd(app));
      writeSession(dir, "moved.jsonl", [header(other), user("u1", null, "hi")]);
      writeSession(dir, "relative.jsonl", [header("app"), user("u1", null, "hi")]);
      writeSession(dir, "nocwd.jsonl", [{ ...header(app), cwd: undefined }]);
      const reader = readerOver(s);
      const rows = reader.catalogue().conversations;
      assert.equal(rowNamed(rows, "good.jsonl").unsupportedReason, null);
      for (const name of ["moved.jsonl", "relative.jsonl", "nocwd.jsonl"]) {
        const row = rowNamed(rows, name);
        assert.equal(row.unsupportedReason, "foreign-project", name);
        // Its cwd is not believed: the row names the directory it was found in.
        assert.equal(row.project, encodeCwd(app), name);
        expectRefusal(reader.open({ conversation: row.conversation }), "foreign-project");
      }
    });

    it("names the store in refusedRoots when it is missing, a file, or reached by a linked directory", (t) => {
      const s = makeStore(t);
      const missing = join(s.base, "nowhere");
      const file = join(s.base, "file");
      writeFileSync(file, "");
      const c = readerOver(s, [
        { kind: "pi-agent", sessionsDir: missing },
        { kind: "pi-agent", sessionsDir: file },
      ]).catalogue();
      assert.deepEqual(
        c.refusedRoots.map((r) => [r.project, r.seat, r.code]),
        [
          [missing, STORE_SEAT, "unavailable"],
          [file, STORE_SEAT, "unsafe-path"],
        ],
      );
      assert.match(c.refusedRoots[0]?.message ?? "", /Pi's session store does not exist/);
    });

    it("refuses unsafe-path for a linked --…-- directory and a linked session file", (t) => {
      const s = makeStore(t);
      const app = join(s.base, "app");
      const elsewhere = join(s.base, "elsewhere");
      mkdirSync(elsewhere);
      writeSession(elsewhere, "x.jsonl", [header(join(s.base, "lnk")), user("u1", null, "hi")]);
      symlinkSync(elsewhere, join(s.store, encodeCwd(join(s.base, "lnk"))));
      const real = writeStoreSession(s.store, app, "real.jsonl");
      symlinkSync(real, join(s.store, encodeCwd(app), "link.jsonl"));
      const c = readerOver(s).catalogue();
      assert.deepEqual(
        c.refusedRoots.map((r) => [r.project, r.code]),
        [[encodeCwd(join(s.base, "lnk")), "unsafe-path"]],
      );
      assert.equal(rowNamed(c.conversations, "link.jsonl").unsupportedReason, "unsafe-path");
      assert.equal(rowNamed(c.conversations, "real.jsonl").unsupportedReason, null);
    });

    it("reads only the head and tail of a large session in the store, and nothing of an unchanged one", (t) => {
      const s = makeStore(t);
      const app = join(s.base, "app");
      const dir = join(s.store, encodeCwd(app));
      mkdirSync(dir);
      const lines: object[] = [header(app)];
      let parent: string | null = null;
      for (let i = 0; i < 2000; i++) {
        lines.push(user(`u${i}`, parent, "y".repeat(5000)));
        parent = `u${i}`;
      }
      writeSession(dir, "big.jsonl", lines);
      const reader = readerOver(s).raw;
      const rchar = () => Number(/rchar: (\d+)/.exec(readFileSync("/proc/self/io", "utf8"))?.[1]);
      // The head and tail (64 KiB each), and the message count's budget of COUNT_BUDGET a
      // listing (docs/reader.md): 10 MB to count, so it is known at the second listing; after
      // that an unchanged file costs nothing but its stat.
      const reads: number[] = [];
      const counts: (number | null)[] = [];
      let project: string | undefined;
      for (let i = 0; i < 3; i++) {
        const before = rchar();
        const row = reader.catalogue().conversations[0];
        reads.push(rchar() - before);
        counts.push(row?.messageCount ?? null);
        project = row?.project;
      }
      assert.equal(project, app);
      assert.deepEqual(counts, [null, 2000, 2000]);
      for (const n of reads.slice(0, 2)) {
        assert.ok(n < COUNT_BUDGET + 200 * 1024, `a listing read ${n} bytes of a 10 MB file`);
      }
      assert.ok(reads[2]! < 8 * 1024, `the third listing read ${reads[2]} bytes`);
    });
  });

  describe("ids", () => {
    it("keeps ids apart from repository ids and from the same file name in another directory", (t) => {
      const s = makeStore(t);
      const a = join(s.base, "a");
      const b = join(s.base, "b");
      writeStoreSession(s.store, a, "same.jsonl", "in a");
      writeStoreSession(s.store, b, "same.jsonl", "in b");
      const reader = readerOver(s);
      const rows = reader.catalogue().conversations;
      assert.equal(rows.length, 2);
      assert.notEqual(rows[0]?.conversation, rows[1]?.conversation);
      for (const row of rows) {
        const r = expectOk(reader.open({ conversation: row.conversation }));
        assert.equal(r.page.parts[0]?.blocks[0]?.type, "text");
        assert.equal(row.title, row.project === a ? "in a" : "in b");
        // A repository id for the same place names nothing here.
        for (const [root, seat] of [
          [s.store, STORE_SEAT],
          [join(s.store, encodeCwd(a)), STORE_SEAT],
          [row.project, "main"],
        ] as const) {
          expectRefusal(
            reader.open({ conversation: conversationId(root, seat, "same.jsonl") }),
            "unknown-conversation",
          );
        }
      }
    });

    it("refuses unknown-conversation when a caller sends a path, or the store leaves the specs", (t) => {
      const s = makeStore(t);
      const file = writeStoreSession(s.store, join(s.base, "app"), "s.jsonl");
      let specs: BoardSpec[] = [s.spec];
      const reader = checkedReader(s.base, { roots: () => rootsFromSpecs(specs, []) });
      for (const id of [file, encodeCwd(join(s.base, "app")), "s.jsonl", "../s.jsonl"]) {
        expectRefusal(reader.open({ conversation: id }), "unknown-conversation");
      }
      const id = reader.catalogue().conversations[0]?.conversation ?? "";
      expectOk(reader.open({ conversation: id }));
      specs = [];
      expectRefusal(reader.open({ conversation: id }), "unknown-conversation");
    });
  });

  describe("reading", () => {
    it("follows appends and refuses source-replaced on a rewrite and on a rename-over", (t) => {
      const s = makeStore(t);
      const app = join(s.base, "app");
      const file = writeStoreSession(s.store, app, "s.jsonl");
      const reader = readerOver(s);
      const id = reader.catalogue().conversations[0]?.conversation ?? "";
      const first = readAll(reader, id);
      assert.deepEqual(entriesOf(first.last.page.parts), ["n.u1", "n.a1"]);
      appendFileSync(file, `${JSON.stringify(user("u2", "a1", "more", 3))}\n`);
      const f = expectOk(
        reader.next({ cursor: first.last.follow?.id ?? "", conversation: id, branch: "main" }),
      );
      assert.deepEqual(entriesOf(f.page.parts), ["n.u2"]);
      // Same length, same inode, one byte changed in the pinned prefix.
      const bytes = readFileSync(file);
      const at = bytes.indexOf("hello");
      bytes.write("jello", at);
      writeFileSync(file, bytes);
      expectRefusal(
        reader.next({ cursor: f.follow?.id ?? "", conversation: id, branch: "main" }),
        "source-replaced",
      );
      const again = readAll(reader, id);
      const copy = join(s.base, "copy.jsonl");
      writeFileSync(copy, readFileSync(file));
      renameSync(copy, file);
      expectRefusal(
        reader.next({ cursor: again.last.follow?.id ?? "", conversation: id, branch: "main" }),
        "source-replaced",
      );
    });

    it("refuses unsafe-path when a store directory is swapped for a link after an open", (t) => {
      const s = makeStore(t);
      const app = join(s.base, "app");
      writeStoreSession(s.store, app, "s.jsonl");
      const reader = readerOver(s);
      const id = reader.catalogue().conversations[0]?.conversation ?? "";
      expectOk(reader.open({ conversation: id }));
      const dir = join(s.store, encodeCwd(app));
      const moved = join(s.base, "moved");
      renameSync(dir, moved);
      symlinkSync(moved, dir);
      expectRefusal(reader.open({ conversation: id }), "unsafe-path");
      rmSync(dir);
      renameSync(moved, dir);
      expectOk(reader.open({ conversation: id }));
    });

    it("reads a store and a repository project side by side in one reader", (t) => {
      const s = makeStore(t);
      const p = project(s.base, "repo");
      writeSession(p.sessionsDir, "r.jsonl", [header(p.projectRoot), user("u1", null, "repo")]);
      writeStoreSession(s.store, join(s.base, "app"), "s.jsonl", "store");
      const reader = readerOver(s, [
        { kind: "repository", projectRoot: p.projectRoot, seat: "main" },
        s.spec,
      ]);
      const rows = reader.catalogue().conversations;
      assert.deepEqual(rows.map((r) => [r.project, r.seat, r.title]).sort(), [
        [join(s.base, "app"), STORE_SEAT, "store"],
        ["repo", "main", "repo"],
      ]);
      for (const row of rows) expectOk(reader.open({ conversation: row.conversation }));
    });
  });
});
