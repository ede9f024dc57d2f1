// The tarball is the product (issue 11): `npm pack` of this checkout, installed offline into an
// empty project and into a global prefix, and every command driven there as a person types it:
// --help, catalogue, read, follow, serve (the Console loads), control on the real pinned Pi and
// the Attach: line it prints, the imports with their types, the pin refusing an altered Pi, and
// an older Node refused in one line. One pack and two installs serve every test.
import assert from "node:assert/strict";
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { PI_PACKAGE } from "../src/control/engine/pi/pi-pin.ts";
import { DEADLINE_MS, SLOW_TEST_MS } from "./helpers/deadline.ts";
import { startFakeModel } from "./helpers/fake-model.ts";
import {
  installGlobally,
  installInProject,
  interrupt,
  isCleanInterrupt,
  olderNode,
  PACKAGE,
  pack,
  ROOT,
  run,
  runLine,
  startLine,
  userEnv,
} from "./helpers/packed.ts";
import { assistant, header, project, user, writeSession } from "./helpers/reader.ts";
import { MODEL, settledSession, writeAgentFiles, writeLines } from "./helpers/real-pi.ts";

const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  dependencies?: Record<string, string>;
  devDependencies: Record<string, string>;
  engines: Record<string, string>;
  exports: Record<string, string | { types?: string; default?: string }>;
  bin: Record<string, string>;
  files: string[];
};

describe("package.json", () => {
  it("depends on exactly the pinned Pi, the QR encoder and web-push, and nothing else at run time", () => {
    // qrcode-generator draws `serve --phone`'s link for a phone to scan; web-push encrypts and
    // signs the board's Web Push (RFC 8291, 8292) (docs/package.md).
    assert.deepEqual(manifest.dependencies, {
      [PI_PACKAGE]: "0.85.1",
      "qrcode-generator": "2.0.4",
      "web-push": "3.6.7",
    });
    assert.equal(manifest.devDependencies[PI_PACKAGE], undefined);
    assert.equal(manifest.engines.node, ">=24");
  });
});

/** `conversation` as shell words, with the session's sources. */
const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

describe("package: the tarball, installed", { timeout: 6 * SLOW_TEST_MS }, () => {
  let base = "";
  let tarball = "";
  let files: string[] = [];
  let app = "";
  let prefix = "";
  let globalPkg = "";
  let data = { projectRoot: "", sessionsDir: "", id: "" };

  before(
    async () => {
      // Two installs are some 30,000 files: on a tmpfs they cost seconds, on a busy disk a minute.
      base = mkdtempSync(join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "conv-pack-"));
      const t0 = performance.now();
      tarball = await pack(base);
      const t1 = performance.now();
      files = (await run("tar", ["tzf", tarball], { cwd: base })).trim().split("\n");
      app = join(base, "app");
      prefix = join(base, "g");
      [, globalPkg] = await Promise.all([
        installInProject(app, tarball),
        installGlobally(prefix, tarball),
      ]);
      // Where the time goes, for the report: pack (with the build), then both installs.
      process.stderr.write(
        `# pack ${Math.round(t1 - t0)} ms, installs ${Math.round(performance.now() - t1)} ms\n`,
      );
      const p = project(join(base, "data"));
      writeSession(p.sessionsDir, "s.jsonl", [
        header(p.projectRoot),
        user("u1", null, "hello from the packed test"),
        assistant("a1", "u1", "hi"),
      ]);
      const { conversationId } = await import("../src/index.ts");
      data = { ...p, id: conversationId(p.projectRoot, p.seat, "s.jsonl") };
      // A hook has the run's 180 s test timeout unless it names its own: npm pack (with the
      // build) and two installs took over three minutes beside three other files.
    },
    { timeout: 3 * SLOW_TEST_MS },
  );
  after(() => rmSync(base, { recursive: true, force: true }));

  const src = () => `--project ${q(data.projectRoot)}`;

  it("ships the bin, every export's files, the Console's folder and the schema, and no sources", () => {
    const has = (p: string) => files.includes(`package/${p.replace(/^\.\//, "")}`);
    for (const target of Object.values(manifest.exports)) {
      for (const f of typeof target === "string" ? [target] : Object.values(target)) {
        assert.ok(has(f as string), `${String(f)} is in the tarball`);
      }
    }
    for (const f of Object.values(manifest.bin)) assert.ok(has(f), f);
    const consoleDir = join(ROOT, "src", "board", "console");
    for (const f of readdirSync(consoleDir, { recursive: true, encoding: "utf8" })) {
      if (!f.includes(".")) continue; // a folder
      assert.ok(has(`dist/board/console/${f}`), `the Console's ${f}`);
    }
    assert.ok(has("schema/chat-01.schema.json"));
    // Every docs/*.md the README, a help text or a message names is there to be read.
    const named = new Set<string>();
    const texts = [readFileSync(join(ROOT, "README.md"), "utf8")];
    for (const f of readdirSync(join(ROOT, "src", "cli"))) {
      if (f.endsWith(".ts")) texts.push(readFileSync(join(ROOT, "src", "cli", f), "utf8"));
    }
    // Pi's own docs ("Pi's docs/providers.md") are Pi's package's, not this one's.
    for (const text of texts)
      for (const m of text.matchAll(/(?<!Pi's )docs\/([\w.-]+\.md)/g)) named.add(m[1] ?? "");
    assert.ok(named.size >= 5, [...named].join(" "));
    for (const doc of named) assert.ok(has(`docs/${doc}`), `docs/${doc} is in the tarball`);
    assert.ok(has("dist/control/cohort/shim.js"), "the launcher's shim");
    assert.ok(has("dist/present/vendor.js"), "the Markdown bundle the exports import");
    assert.deepEqual(
      files.filter(
        (f) => /^package\/(src|test|bench|scripts)\//.test(f) || f.endsWith("package-lock.json"),
      ),
      [],
    );
  });

  it("answers npx conversation --help in a project, naming itself as npx conversation", async (t) => {
    const r = await runLine(t, "npx conversation --help", { cwd: app });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Usage: npx conversation <command> \[options\]\n/);
    assert.equal(r.stderr, "");
    // The help says where the docs it names are, and they are there.
    const docs = /\nThe docs\/ files named here are in\n {2}(\S+)\n$/.exec(r.stdout)?.[1] ?? "";
    assert.equal(docs, join(app, "node_modules", ...PACKAGE.split("/"), "docs"));
    assert.ok(existsSync(join(docs, "control-cli.md")));
  });

  it("lists, reads and follows a conversation with npx conversation", async (t) => {
    // The README's Install line, with the project filled in.
    const cat = await runLine(t, `npx conversation catalogue ${src()} --seat '*'`, { cwd: app });
    assert.equal(cat.code, 0, cat.stderr);
    assert.match(cat.stdout, /^1 conversation in 1 project\n/);
    assert.ok(cat.stdout.includes(data.id));
    const read = await runLine(t, `npx conversation read ${data.id} ${src()}`, { cwd: app });
    assert.equal(read.code, 0, read.stderr);
    assert.ok(read.stdout.includes("hello from the packed test"));
    const follow = startLine(t, `npx conversation follow ${data.id} ${src()}`, { cwd: app });
    await follow.waitFor("following", (p) => p.stderr().includes("following "));
    appendFileSync(
      join(data.sessionsDir, "s.jsonl"),
      `${JSON.stringify(user("u2", "a1", "appended while following", 3))}\n`,
    );
    await follow.waitFor("the appended message", (p) =>
      p.stdout().includes("appended while following"),
    );
    assert.ok(isCleanInterrupt(await interrupt(follow)), follow.stderr());
    assert.match(follow.stderr(), /^following \S+ on branch main; Ctrl-C to stop\n$/);
  });

  it("serves the board and the Console's page and every asset it loads", async (t) => {
    const serve = startLine(t, `npx conversation serve ${src()} --port 0`, { cwd: app });
    await serve.waitFor("the URL", (p) => /http:\/\/\S+\n/.test(p.stdout()));
    const url = /(http:\/\/\S+?)\/?\n/.exec(serve.stdout())?.[1] ?? "";
    const page = await fetch(`${url}/`);
    assert.equal(page.status, 200);
    const html = await page.text();
    assert.match(html, /<html/i);
    const assets = [...html.matchAll(/(?:src|href)="\.?\/?([^"#?:]+)"/g)].map((m) => m[1] ?? "");
    assert.ok(assets.length >= 2, `assets in index.html: ${assets.join(", ")}`);
    for (const a of assets) {
      const r = await fetch(`${url}/${a}`);
      assert.equal(r.status, 200, a);
      await r.arrayBuffer();
    }
    const api = (await (await fetch(`${url}/api/conversations`)).json()) as {
      conversations: { conversation: string }[];
    };
    assert.deepEqual(
      api.conversations.map((c) => c.conversation),
      [data.id],
    );
    assert.ok(isCleanInterrupt(await interrupt(serve)));
    assert.equal(serve.stderr(), "");
  });

  it("resolves both exports with their types in a TypeScript project", async () => {
    writeFileSync(
      join(app, "check.ts"),
      `import { createReader, rootsFromSpecs, type Catalogue } from "${PACKAGE}";
import { Controller, ConversationClient } from "${PACKAGE}/control";
const reader = createReader({ roots: () => rootsFromSpecs([], []) });
const c: Catalogue = reader.catalogue();
const n: number = c.conversations.length;
// @ts-expect-error: the types are real, so a wrong use is an error
const wrong: string = reader.catalogue();
export { Controller, ConversationClient, n, wrong };
`,
    );
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "nodenext",
          moduleResolution: "nodenext",
          target: "es2024",
          strict: true,
          noEmit: true,
          types: ["node"],
          typeRoots: [join(ROOT, "node_modules", "@types")],
        },
        files: ["check.ts"],
      }),
    );
    await run(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", "."], {
      cwd: app,
      ms: 120_000,
    });
    const out = await run(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const r = await import("${PACKAGE}"); const c = await import("${PACKAGE}/control");
         console.log(typeof r.createReader, typeof c.Controller, typeof c.ConversationClient);`,
      ],
      { cwd: app },
    );
    assert.equal(out.trim(), "function function function");
  });

  it("runs control on the installed pinned Pi and the Attach: line it prints", async (t) => {
    const root = mkdtempSync("/tmp/pk-");
    t.after(() => rmSync(root, { recursive: true, force: true }));
    const model = await startFakeModel({ replies: [{ kind: "text", text: "hello" }] });
    t.after(() => model.close());
    const { args } = controlFixture(root);
    writeAgentFiles(join(root, "agent"), model.baseUrl);
    const line = `npx conversation control ${args} --model ${MODEL} --agent-dir ${join(root, "agent")}`;
    const ctl = startLine(t, line, { cwd: app });
    await ctl.waitFor("the Attach: line", (p) => /\nAttach: .*\n/.test(p.stdout()), 90_000);
    const attachLine = /\nAttach: (.*)\n/.exec(ctl.stdout())?.[1] ?? "";
    const id = /^Controlling (pi-[0-9a-f]+)$/m.exec(ctl.stdout())?.[1] ?? "";
    // By conversation id, found in the registry under the state dir the controller was given.
    assert.equal(
      attachLine,
      `npx conversation attach ${id} --state-dir ${join(root, "st")} --grant g-op`,
    );
    // The line as printed, typed into a shell in the project: a screen, then Ctrl-C quits.
    const attach = startLine(t, attachLine, { cwd: app, stdin: true });
    await attach.waitFor(
      "a screen with the history",
      (p) => p.stdout().includes("=== frame"),
      30_000,
    );
    attach.proc.stdin?.end("\x03");
    await attach.waitFor("attach to quit", (p) => p.proc.exitCode !== null, DEADLINE_MS);
    assert.equal(attach.proc.exitCode, 0, attach.stderr());
    assert.ok(isCleanInterrupt(await interrupt(ctl, DEADLINE_MS)), ctl.stderr());
    assert.match(ctl.stdout(), /\nStopped: /);
    assert.doesNotMatch(ctl.stderr(), /refused|warning|Error|\n\s+at /);
  });

  it("refuses engine-pin-mismatch in a project whose Pi has an altered file", async (t) => {
    const root = mkdtempSync("/tmp/pk-");
    t.after(() => rmSync(root, { recursive: true, force: true }));
    const cli = join(app, "node_modules", PI_PACKAGE, "dist", "bundle", "cli.js");
    const original = readFileSync(cli);
    t.after(() => writeFileSync(cli, original));
    appendFileSync(cli, "\n");
    const r = await runLine(t, `npx conversation control ${controlFixture(root).args}`, {
      cwd: app,
    });
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /^refused: engine-pin-mismatch: the files of \S+ at \S+ differ from the pinned 0\.85\.1 .*reinstall/,
    );
    assert.ok(r.stderr.includes(join(app, "node_modules", PI_PACKAGE)), r.stderr);
  });

  it("searches with npx conversation, and the installed index runs its shard worker", async (t) => {
    const p = project(join(base, "search-data"));
    for (let i = 0; i < 8; i++) {
      writeSession(p.sessionsDir, `s-${i}.jsonl`, [
        header(p.projectRoot, { id: `01a00000-0000-7000-8000-0000000000${20 + i}` }),
        user(`u${i}`, null, `packed quokkaite number ${i}`),
      ]);
    }
    const env = { ...userEnv(), XDG_CACHE_HOME: join(base, `cache-${Date.now()}`) };
    const line = `npx conversation search quokkaite --project ${q(p.projectRoot)} --json`;
    const r = await runLine(t, line, { cwd: app, env });
    assert.equal(r.code, 0, r.stderr);
    assert.equal((JSON.parse(r.stdout) as unknown[]).length, 8);
    // As text, each hit ends with the line that reads it, installed form and the search's
    // sources: run as printed, it reads that hit's conversation (issue 14's newcomer).
    const text = await runLine(t, line.replace(/ --json$/, " --limit 1"), { cwd: app, env });
    assert.equal(text.code, 0, text.stderr);
    const read = /\n {2}(npx conversation read \S+ --branch \S+ --project \S+)\n/.exec(
      text.stdout,
    )?.[1];
    assert.ok(read, text.stdout);
    const opened = await runLine(t, read, { cwd: app, env });
    assert.equal(opened.code, 0, opened.stderr);
    assert.match(opened.stdout, /packed quokkaite number \d/);
    // The worker thread is a file of its own in dist: started from the installed package, it
    // must be there and load (a large catch-up is forced with parallelMinBytes 0).
    const pkg = join(app, "node_modules", "@mosaic", "conversation", "dist");
    const out = await run(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const { createSearch } = await import(${JSON.stringify(join(pkg, "search/index.js"))});
         const { rootsFromSpecs } = await import(${JSON.stringify(join(pkg, "index.js"))});
         const specs = [{ kind: "repository", projectRoot: ${JSON.stringify(p.projectRoot)}, seat: "main" }];
         const o = createSearch({ roots: () => rootsFromSpecs(specs, []), cacheDir: ${JSON.stringify(join(base, "cache-worker"))}, shardTuning: { parallelMinBytes: 0 } });
         const s = o.search.refresh(); const h = o.search.search("quokkaite", 20);
         console.log(JSON.stringify([s.workers, s.indexed, h.hits.length])); o.search.close();`,
      ],
      { cwd: app },
    );
    assert.deepEqual(JSON.parse(out), [1, 8, 8]);
  });

  it("runs as conversation from a global prefix on PATH, with the Pi under the package", async (t) => {
    const env = userEnv([join(prefix, "bin")]);
    const help = await runLine(t, "conversation --help", { cwd: base, env });
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^Usage: conversation <command> \[options\]\n/);
    const cat = await runLine(t, `conversation catalogue ${src()}`, { cwd: base, env });
    assert.equal(cat.code, 0, cat.stderr);
    const pin = await run(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const { readPin } = await import(${JSON.stringify(join(globalPkg, "dist/control/engine/pi/pi-pin.js"))});
         const p = readPin(); console.log(JSON.stringify([p.layout, p.location, p.version]));`,
      ],
      { cwd: base },
    );
    assert.deepEqual(JSON.parse(pin), [
      "installed",
      join(globalPkg, "node_modules", PI_PACKAGE),
      "0.85.1",
    ]);
  });

  it("refuses engine-pin-mismatch in a global prefix whose Pi is another version", async (t) => {
    const root = mkdtempSync("/tmp/pk-");
    t.after(() => rmSync(root, { recursive: true, force: true }));
    const file = join(globalPkg, "node_modules", PI_PACKAGE, "package.json");
    const original = readFileSync(file, "utf8");
    t.after(() => writeFileSync(file, original));
    writeFileSync(file, original.replace('"version": "0.85.1"', '"version": "0.85.2"'));
    const env = userEnv([join(prefix, "bin")]);
    const r = await runLine(t, `conversation control ${controlFixture(root).args}`, {
      cwd: base,
      env,
    });
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /^refused: engine-pin-mismatch: installed .* is @earendil-works\/pi-coding-agent@0\.85\.2, not .*0\.85\.1; reinstall/,
    );
  });

  const old = olderNode();
  it("tells an older Node in one line that it needs Node 24, exit 2", {
    skip: old === null ? "no Node older than 24 on this machine" : false,
  }, async (t) => {
    const bin = join(app, "node_modules", ".bin", "conversation");
    const r = await runLine(t, `${q(old ?? "")} ${q(bin)} catalogue ${src()}`, { cwd: app });
    assert.equal(r.code, 2);
    assert.equal(r.stdout, "");
    assert.equal(r.stderr.split("\n").length, 2, r.stderr);
    assert.match(
      r.stderr,
      /^conversation: needs Node 24 or newer, and this is Node \d+\.[\d.]+; install Node 24 .+\n$/,
    );
  });
});

/**
 * A project with a session Pi appends nothing to, a grants file, and the control flags a user
 * types (--project, --seat, --session; the state dir under `root`), as shell words.
 */
function controlFixture(root: string): { args: string } {
  const projectRoot = join(root, "proj");
  const sessions = join(projectRoot, ".pi", "state", "main", "sessions");
  mkdirSync(sessions, { recursive: true });
  const session = join(sessions, "s.jsonl");
  writeLines(session, settledSession(projectRoot));
  const grants = join(root, "grants.json");
  writeFileSync(
    grants,
    JSON.stringify([
      { id: "g-op", actor: "local-operator", capabilities: ["observe", "takeover", "prompt"] },
    ]),
  );
  const args = [
    ...["--project", projectRoot, "--seat", "main", "--session", session],
    ...["--state-dir", join(root, "st"), "--grants", grants],
  ];
  return { args: args.map(q).join(" ") };
}
