// The Console's static files: a fixed table from URL path to a file in ./console, read once
// when the board starts. No part of a request ever names a file; an unknown path is a 404.
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

/** A Console file as served, with its content's tag (a SHA-256 prefix) for revalidation. */
export type Asset = { contentType: string; body: Buffer; etag: string };

const CONSOLE_DIR = join(import.meta.dirname, "console");

/** URL path → file in ./console, and its content type. */
const ASSET_FILES: Readonly<Record<string, readonly [file: string, contentType: string]>> = {
  "/": ["index.html", "text/html; charset=utf-8"],
  // The page the login link opens; its token is read by login.js, never by the board here.
  "/login": ["login.html", "text/html; charset=utf-8"],
  "/login.js": ["login.js", "text/javascript; charset=utf-8"],
  "/styles/login.css": ["styles/login.css", "text/css; charset=utf-8"],
  // What index.html loads: the entry module and the stylesheet, each built by
  // `npm run build:console` (git-ignored) with everything it imports inlined, so a page loads
  // the Console in one script and one sheet (docs/console.md). The modules and sheets below
  // stay served for a page that imports one alone.
  "/console.css": ["console.bundle.css", "text/css; charset=utf-8"],
  "/styles/base.css": ["styles/base.css", "text/css; charset=utf-8"],
  "/styles/catalogue.css": ["styles/catalogue.css", "text/css; charset=utf-8"],
  "/styles/search.css": ["styles/search.css", "text/css; charset=utf-8"],
  "/styles/conversation.css": ["styles/conversation.css", "text/css; charset=utf-8"],
  "/styles/controls.css": ["styles/controls.css", "text/css; charset=utf-8"],
  "/styles/history.css": ["styles/history.css", "text/css; charset=utf-8"],
  "/styles/blocks.css": ["styles/blocks.css", "text/css; charset=utf-8"],
  "/styles/follow.css": ["styles/follow.css", "text/css; charset=utf-8"],
  "/styles/keys.css": ["styles/keys.css", "text/css; charset=utf-8"],
  "/styles/screens.css": ["styles/screens.css", "text/css; charset=utf-8"],
  "/styles/live-run.css": ["styles/live-run.css", "text/css; charset=utf-8"],
  "/styles/live-approval.css": ["styles/live-approval.css", "text/css; charset=utf-8"],
  "/styles/live-budget.css": ["styles/live-budget.css", "text/css; charset=utf-8"],
  "/styles/inbox.css": ["styles/inbox.css", "text/css; charset=utf-8"],
  "/console.js": ["console.bundle.js", "text/javascript; charset=utf-8"],
  "/api.js": ["api.js", "text/javascript; charset=utf-8"],
  "/routing.js": ["routing.js", "text/javascript; charset=utf-8"],
  "/theme.js": ["theme.js", "text/javascript; charset=utf-8"],
  "/keys.js": ["keys.js", "text/javascript; charset=utf-8"],
  "/controls.js": ["controls.js", "text/javascript; charset=utf-8"],
  "/catalogue.js": ["catalogue.js", "text/javascript; charset=utf-8"],
  "/search.js": ["search.js", "text/javascript; charset=utf-8"],
  "/conversation.js": ["conversation.js", "text/javascript; charset=utf-8"],
  "/conversation-head.js": ["conversation-head.js", "text/javascript; charset=utf-8"],
  "/follow.js": ["follow.js", "text/javascript; charset=utf-8"],
  "/live-run.js": ["live-run.js", "text/javascript; charset=utf-8"],
  "/live-approval.js": ["live-approval.js", "text/javascript; charset=utf-8"],
  "/live-budget.js": ["live-budget.js", "text/javascript; charset=utf-8"],
  "/dialog-boxes.js": ["dialog-boxes.js", "text/javascript; charset=utf-8"],
  "/inbox.js": ["inbox.js", "text/javascript; charset=utf-8"],
  "/inbox-answer.js": ["inbox-answer.js", "text/javascript; charset=utf-8"],
  "/budget-meter.js": ["budget-meter.js", "text/javascript; charset=utf-8"],
  // Web Push and installing (docs/push.md): the Console's side of it, its service worker at
  // the root (so its scope is the whole Console), the web app manifest (its icon is a data: URL in it, as
  // the page's CSP allows images only as data: URLs, and manifest icons are fetched under it).
  "/push.js": ["push.js", "text/javascript; charset=utf-8"],
  "/sw.js": ["sw.js", "text/javascript; charset=utf-8"],
  "/manifest.webmanifest": ["manifest.webmanifest", "application/manifest+json; charset=utf-8"],
  "/render.js": ["render.js", "text/javascript; charset=utf-8"],
  "/tools.js": ["tools.js", "text/javascript; charset=utf-8"],
  "/markup.js": ["markup.js", "text/javascript; charset=utf-8"],
  "/text.js": ["text.js", "text/javascript; charset=utf-8"],
  // Built by `npm run build:console` (git-ignored): the presentation rules of src/present/
  // (with markdown-it and highlight.js), and the terminal's transcript state machine.
  "/present.js": ["present.js", "text/javascript; charset=utf-8"],
  "/transcript.js": ["transcript.js", "text/javascript; charset=utf-8"],
  // The Usage view (usage.js) and its charts: uPlot's module and stylesheet, built from the
  // package by `npm run build:console` (git-ignored).
  "/usage.js": ["usage.js", "text/javascript; charset=utf-8"],
  "/usage-chart.js": ["usage-chart.js", "text/javascript; charset=utf-8"],
  "/styles/usage.css": ["styles/usage.css", "text/css; charset=utf-8"],
  "/uplot.js": ["uplot.js", "text/javascript; charset=utf-8"],
  "/styles/uplot.css": ["styles/uplot.css", "text/css; charset=utf-8"],
};
const BUILT = new Set([
  "console.bundle.js",
  "console.bundle.css",
  "present.js",
  "transcript.js",
  "uplot.js",
  "styles/uplot.css",
]);

/** The bundles index.html loads, each built from the modules or sheets the table also serves. */
const BUNDLES = ["console.bundle.js", "console.bundle.css"];

/**
 * Reads every Console file now, after `checkAssets`.
 */
export function loadAssets(): ReadonlyMap<string, Asset> {
  checkAssets();
  const assets = new Map<string, Asset>();
  for (const [path, [file, contentType]] of Object.entries(ASSET_FILES)) {
    const body = readFileSync(join(CONSOLE_DIR, file));
    const etag = `"${createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`;
    assets.set(path, { contentType, body, etag });
  }
  return assets;
}

/**
 * Throws if a built Console file is missing (a broken checkout, not a "no"; a missing
 * present.js or transcript.js means `npm run build:console` has not run), or, in a checkout,
 * if a module or sheet was changed after the bundles were built: the page would run the old
 * code without a word (a `git pull`, an edit), where a person expects what they see. An
 * installed package holds only what its build made, so it is not checked for that. Reads no
 * file's content: the board runs it once before its read workers load their own copies.
 */
export function checkAssets(): void {
  for (const [file] of Object.values(ASSET_FILES)) {
    const full = join(CONSOLE_DIR, file);
    if (BUILT.has(file) && !existsSync(full)) {
      throw new Error(`${full} is missing: run "npm run build:console" (npm install runs it).`);
    }
  }
  if (!import.meta.filename.endsWith(".ts")) return;
  const sources = Object.values(ASSET_FILES)
    .map(([file]) => file)
    .filter((file) => !BUILT.has(file) && /\.(js|css)$/.test(file));
  const stale = changedAfter(CONSOLE_DIR, sources, BUNDLES);
  if (stale !== null) {
    throw new Error(
      `${join(CONSOLE_DIR, stale)} changed after the Console's bundles were built: run "npm run build:console".`,
    );
  }
}

/** The first of `sources` (files in `dir`) changed after the oldest of `built`, or null. */
export function changedAfter(
  dir: string,
  sources: readonly string[],
  built: readonly string[],
): string | null {
  const oldest = Math.min(...built.map((f) => statSync(join(dir, f)).mtimeMs));
  return sources.find((f) => statSync(join(dir, f)).mtimeMs > oldest) ?? null;
}
