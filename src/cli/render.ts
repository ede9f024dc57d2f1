// Text for people: the catalogue, a conversation's header and its parts, laid out for a
// terminal of a given width (80 when not a terminal). Every string from a session passes
// through wrap.ts, which makes hostile characters visible (src/present/visible.ts); headers
// show LF as `^J`. Fragments are rejoined before they are shown, across parts and pages.
import type { Block, Catalogue, CatalogueRow, Fragment, Part, View } from "../index.ts";
import { branchTitle, harnessLabel } from "../present/labels.ts";
import { messagesLabel, previewOf } from "../present/row-facts.ts";
import { formatSize } from "../present/size.ts";
import { readRange, toolCallView } from "../present/tool-view.ts";
import { makeVisible } from "../present/visible.ts";
import { textWidth, wrapText } from "./wrap.ts";

const BODY = 2;
const NESTED = 4;

/** One line of a header: made visible, LF as `^J`, wrapped when it does not fit. */
function headerLines(text: string, width: number, indent = 0): string[] {
  return wrapText(text, { width, indent, oneLine: true });
}

/** `2026-01-01 10:00:01 UTC` for an ISO time in UTC; anything else as written. */
export function formatTime(ts: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(\.\d+)?Z$/.exec(ts);
  return m ? `${m[1]} ${m[2]} UTC` : ts;
}

/**
 * The catalogue grouped by project (a repository's name, or in Pi's store the session's cwd):
 * the group with the most recent activity first, and newest activity first in each group.
 */
export function renderCatalogue(c: Catalogue, width: number): string[] {
  const groups = groupByProject(c.conversations);
  const n = c.conversations.length;
  const count = n === 1 ? "1 conversation" : `${n} conversations`;
  const projects = groups.length === 1 ? "1 project" : `${groups.length} projects`;
  const out: string[] = [n === 0 ? count : `${count} in ${projects}`];
  for (const { project, rows } of groups) {
    out.push("", ...headerLines(`${project} (${rows.length})`, width));
    for (const row of rows) out.push("", ...renderRow(row, width));
  }
  for (const r of c.refusedRoots) {
    out.push(
      "",
      ...headerLines(`refused root ${r.project}/${r.seat}: ${r.code}: ${r.message}`, width),
    );
  }
  return out;
}

/** Rows by project, each group newest first, groups by their newest row. */
export function groupByProject(rows: CatalogueRow[]): { project: string; rows: CatalogueRow[] }[] {
  const newest = (r: CatalogueRow) => r.modifiedAt ?? "";
  const sorted = [...rows].sort((a, b) => newest(b).localeCompare(newest(a)));
  const groups = new Map<string, CatalogueRow[]>();
  for (const row of sorted) {
    const group = groups.get(row.project);
    if (group) group.push(row);
    else groups.set(row.project, [row]);
  }
  return [...groups].map(([project, list]) => ({ project, rows: list }));
}

function renderRow(row: CatalogueRow & { live?: boolean }, width: number): string[] {
  const facts: string[] = [];
  // Marked by the controller registry (live-catalogue.ts); `controllers` says how to attach.
  if (row.live === true) facts.push("live: a controller runs it now");
  // Pi is the default; a row another harness wrote says which (the Console's badge).
  if (row.harness !== null && row.harness !== "pi" && row.unsupportedReason === null) {
    facts.push(harnessLabel(row.harness));
  }
  if (row.modifiedAt !== null) facts.push(`last activity ${formatTime(row.modifiedAt)}`);
  const messages = messagesLabel(row);
  if (messages !== null) facts.push(messages);
  if (row.model !== null) facts.push(row.model);
  if (row.size !== null) facts.push(formatSize(row.size));
  const lines = headerLines(row.title ?? "(untitled)", width, BODY);
  // The first prompt, quoted, when it says more than the title (a session's name).
  const preview = previewOf(row);
  if (preview !== null) lines.push(...headerLines(`“${preview}”`, width, NESTED));
  lines.push(...headerLines(`${row.conversation}  seat ${row.seat}`, width, NESTED));
  if (facts.length > 0) lines.push(...factLines(facts, width, NESTED));
  if (row.unsupportedReason !== null) {
    const harness = row.unsupportedReason === "unsupported-harness" ? ` (${row.harness})` : "";
    lines.push(...headerLines(`cannot be read: ${row.unsupportedReason}${harness}`, width, NESTED));
  }
  return lines;
}

/**
 * Facts joined by ` · `, a line broken only between two facts, so "554 B" or a time never
 * splits across lines; a fact wider than a line on its own is wrapped as any header.
 */
export function factLines(facts: readonly string[], width: number, indent: number): string[] {
  const room = width - indent;
  const out: string[] = [];
  let line = "";
  for (const fact of facts.map((f) => makeVisible(f, { showNewlines: true }))) {
    const joined = line === "" ? fact : `${line} · ${fact}`;
    if (textWidth(joined) <= room) {
      line = joined;
      continue;
    }
    if (line !== "") out.push(line);
    line = fact;
    if (textWidth(fact) > room) {
      out.push(...headerLines(fact, width, indent).map((l) => l.slice(indent)));
      line = "";
    }
  }
  if (line !== "") out.push(line);
  return out.map((l) => " ".repeat(indent) + l);
}

/** Above a conversation's parts: title, id, root, the branch read and every other branch. */
export function renderHeader(
  args: { conversation: string; branch: string; view: View; row: CatalogueRow | undefined },
  width: number,
): string[] {
  const { conversation, branch, view, row } = args;
  const out: string[] = [];
  if (row) out.push(...headerLines(row.title ?? "(untitled)", width));
  const where = row ? `  ${row.project} · seat ${row.seat}` : "";
  out.push(...headerLines(`${conversation}${where}`, width));
  const isDefault = branch === view.defaultBranch ? " (default)" : "";
  const shown = view.branches.find((b) => b.name === branch) ?? { name: branch };
  if (view.branches.length <= 1) {
    out.push(...headerLines(`branch ${branchTitle(shown)}${isDefault}`, width));
  } else {
    const listed =
      view.branchCount > view.branches.length ? `, ${view.branches.length} listed` : "";
    out.push(`${view.branchCount} branches (* the one shown${listed}):`);
    for (const b of view.branches) {
      const facts = [b.name === view.defaultBranch ? "default" : ""];
      if (b.forksFrom) facts.push(`forks from ${b.forksFrom.entry} on ${b.forksFrom.branch}`);
      else if (b.name !== "main") facts.push("a new root");
      facts.push(b.depth === 1 ? "1 entry" : `${b.depth} entries`);
      const mark = b.name === branch ? "* " : "  ";
      const line = `${mark}${branchTitle(b)}  ${facts.filter(Boolean).join(" · ")}`;
      out.push(...headerLines(line, width));
    }
  }
  const notes: string[] = [];
  if (view.unreadableLines > 0) {
    notes.push(`${view.unreadableLines} unreadable line${view.unreadableLines > 1 ? "s" : ""}`);
  }
  if (view.forkedFromEarlierSession) notes.push("forked from an earlier session");
  if (view.incomplete) notes.push("the last line is still being written and is left out");
  if (notes.length > 0) out.push(...headerLines(`notes: ${notes.join("; ")}`, width));
  return out;
}

/** `── label ───── right`, or the same wrapped when it does not fit the width. */
function rule(label: string, right: string, width: number): string[] {
  const left = `── ${makeVisible(label, { showNewlines: true })} `;
  const end = right === "" ? "" : ` ${makeVisible(right, { showNewlines: true })}`;
  const fill = width - textWidth(left) - textWidth(end);
  if (fill >= 2) return [left + "─".repeat(fill) + end];
  return headerLines(`${left}${end}`, width);
}

function partLabel(p: Part): string {
  const m = p.meta ?? {};
  const bits: string[] = [];
  switch (p.kind) {
    case "message":
      if (p.role === "toolResult") bits.push("tool result");
      else bits.push(p.role ?? "message");
      if (m.stopReason !== undefined && m.stopReason !== "stop") bits.push(m.stopReason);
      break;
    case "notice":
      bits.push("notice");
      if (m.line !== undefined) bits.push(`line ${m.line}`);
      break;
    case "compaction":
      bits.push("compaction");
      break;
    case "branch-summary":
      bits.push("branch summary");
      break;
    case "custom-message":
      bits.push("custom message");
      if (m.customType !== undefined) bits.push(m.customType);
      break;
    case "bash-execution":
      bits.push("bash");
      if (m.exitCode !== undefined) bits.push(`exit ${m.exitCode ?? "unknown"}`);
      if (m.cancelled) bits.push("cancelled");
      if (m.truncated) bits.push("truncated");
      break;
    default:
      return unreachable(p.kind);
  }
  if (p.timestamp !== undefined) bits.push(formatTime(p.timestamp));
  return bits.join(" · ");
}

/** Facts a compaction or branch summary carries, shown under its header. */
function partFacts(p: Part): string | null {
  const m = p.meta ?? {};
  const facts: string[] = [];
  if (m.tokensBefore !== undefined) facts.push(`${m.tokensBefore} tokens before`);
  if (m.firstKeptEntry !== undefined) facts.push(`the model kept from ${m.firstKeptEntry}`);
  if (m.fromEntry !== undefined) facts.push(`summarises the path to ${m.fromEntry}`);
  return facts.length > 0 ? `[${facts.join("; ")}]` : null;
}

function unreachable(x: never): never {
  throw new Error(`unhandled kind ${JSON.stringify(x)}`);
}

type Run = { first: Block; bodies: string[]; count: number };

/** The block a fragment run stands for: the first fragment's fields, the whole body. */
function joinRun(run: Run): Block {
  const body = run.bodies.join("");
  // Every fragmentable block has `text` or (image) `data` as its body (docs/contracts.md).
  const { fragment: _, ...rest } = run.first as Block & { fragment?: Fragment };
  return (rest.type === "image" ? { ...rest, data: body } : { ...rest, text: body }) as Block;
}

export type PartPrinter = {
  /** Prints a part; a fragment run is held until its last fragment arrives. */
  print(part: Part): void;
  /** Prints a fragment run that never finished, marked as such. */
  finish(): void;
};

/** Prints parts as text lines through `write` (one call per part, LF-terminated). */
export function createPartPrinter(write: (text: string) => void, width: number): PartPrinter {
  let run: Run | null = null;
  /** Text waiting for the end of the part: one chunk of lines per header or block. */
  let chunks: string[] = [];

  const emit = () => {
    if (chunks.length > 0) write(`${chunks.join("\n")}\n`);
    chunks = [];
  };
  const closeRun = (complete: boolean) => {
    if (!run) return;
    chunks.push(renderBlock(joinRun(run), width).join("\n"));
    if (!complete) {
      chunks.push(
        ...wrapText(`[only ${run.bodies.length} of ${run.count} fragments]`, {
          width,
          indent: BODY,
        }),
      );
    }
    run = null;
  };
  const take = (b: Block) => {
    const fragment = "fragment" in b ? b.fragment : undefined;
    if (fragment === undefined) {
      closeRun(false);
      chunks.push(renderBlock(b, width).join("\n"));
      return;
    }
    const body = b.type === "image" ? b.data : "text" in b ? b.text : "";
    const fits =
      run !== null &&
      run.first.type === b.type &&
      run.count === fragment.count &&
      run.bodies.length === fragment.index;
    if (!fits) {
      closeRun(false);
      run = { first: b, bodies: [], count: fragment.count };
    }
    run?.bodies.push(body);
    if (run && run.bodies.length === run.count) closeRun(true);
  };

  return {
    print(part) {
      if (!part.continues) {
        closeRun(false);
        chunks.push("", ...rule(partLabel(part), part.entry, width));
        const facts = partFacts(part);
        if (facts !== null) chunks.push(...headerLines(facts, width, BODY));
      }
      for (const b of part.blocks) take(b);
      emit();
    },
    finish() {
      closeRun(false);
      emit();
    },
  };
}

/** Drops the LFs that end a body: they show as nothing but an empty line. */
function trimBody(s: string): string {
  return s.replace(/\n+$/, "");
}

/** The lines of one whole block (fragments already rejoined), indented under its part. */
export function renderBlock(b: Block, width: number): string[] {
  const body = (s: string, indent = BODY) => wrapText(trimBody(s), { width, indent });
  const label = (s: string, indent = BODY) => headerLines(`[${s}]`, width, indent);
  switch (b.type) {
    case "text":
      return body(b.text);
    case "thinking":
      return [...label("thinking"), ...body(b.text, NESTED)];
    case "unavailable":
      return label("thinking unavailable: redacted by the provider");
    case "tool-call":
      return [...label(`tool call: ${b.name} · ${b.id}`), ...renderToolCall(b.name, b.text, width)];
    case "tool-result":
      return label(`${b.isError ? "error from" : "result of"} ${b.toolName} · ${b.toolCallId}`);
    case "image":
      return label(`image: ${b.mimeType}, ${formatSize(base64Bytes(b.data))}`);
    case "bash-command":
      return wrapText(`$ ${trimBody(b.text)}`, { width, indent: BODY });
    case "bash-output":
      return body(b.text);
    case "notice":
      return headerLines(`! ${b.code}: ${b.text}`, width, BODY);
    default:
      return unreachable(b);
  }
}

/**
 * A tool call as the Console and the exports show it (src/present/tool-view.ts): an edit as a
 * line diff, a write as its file, bash as its command line, read as path and range; any other
 * call's arguments as `key: value` lines.
 */
export function renderToolCall(name: string, text: string, width: number): string[] {
  const view = toolCallView(name, text);
  const line = (s: string, indent = NESTED) => headerLines(s, width, indent);
  const code = (s: string, indent = NESTED + 2) => wrapText(trimBody(s), { width, indent });
  switch (view.kind) {
    case "edit":
      return [
        ...line(`edit ${view.path}`),
        ...view.hunks.flatMap((hunk, i) => [
          ...(i > 0 ? [""] : []),
          ...hunk.flatMap((l) => wrapText(`${l.op} ${l.text}`, { width, indent: NESTED })),
        ]),
      ];
    case "write":
      return [...line(`write ${view.path}`), ...code(view.content)];
    case "bash": {
      const timeout = view.timeout === null ? [] : line(`(timeout ${view.timeout} s)`);
      return [...wrapText(`$ ${trimBody(view.command)}`, { width, indent: NESTED }), ...timeout];
    }
    case "read": {
      const range = readRange(view.offset, view.limit);
      return line(`read ${view.path}${range === "" ? "" : ` ${range}`}`);
    }
    case "json":
      return renderArguments(text, width);
    default:
      return unreachable(view);
  }
}

/** Tool arguments: an object as `key: value` lines (multi-line strings below their key). */
function renderArguments(text: string, width: number): string[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // Not JSON after all: shown as recorded.
    return wrapText(text, { width, indent: NESTED });
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return wrapText(JSON.stringify(value, null, 2), { width, indent: NESTED });
  }
  let out: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    if (typeof v === "string" && v.includes("\n")) {
      // concat, not push(...): a long value has more lines than a call may take arguments.
      out = out.concat(headerLines(`${key}:`, width, NESTED));
      out = out.concat(wrapText(trimBody(v), { width, indent: NESTED + 2 }));
    } else {
      const shown = typeof v === "string" ? v : JSON.stringify(v);
      out = out.concat(wrapText(`${key}: ${shown}`, { width, indent: NESTED }));
    }
  }
  return out;
}

function base64Bytes(data: string): number {
  const pad = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor((data.length * 3) / 4) - pad);
}
