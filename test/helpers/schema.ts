// Validates records against schema/chat-01.schema.json (Ajv 2020, strict, compiled once), then
// checks what JSON Schema cannot say: lengths in UTF-16 code units, serialized byte limits,
// part ids against their entry, fragment runs, and a read result's cursors against its page.
import { AssertionError } from "node:assert";
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import schema from "../../schema/chat-01.schema.json" with { type: "json" };
import type { BootProof } from "../../src/control/claim/boot-proof.ts";
import type { ClaimHolder, ClaimRevision } from "../../src/control/claim/claim.ts";
import type { LaunchRecord } from "../../src/control/claim/launch-record.ts";
import type { CohortProof } from "../../src/control/claim/recovery.ts";
import type { StopProof } from "../../src/control/cohort/launcher.ts";
import type {
  BindingRecord,
  ConfirmationRecord,
  DialogEndRecord,
  DialogRecord,
  EligibilityRecord,
  ReceiptRecord,
  StopRecord,
} from "../../src/control/controller/records.ts";
import type {
  ClientMessage,
  ControllerMessage,
  ControllerState,
  Dialog,
  Hello,
  Receipt,
  Reply,
  Request,
  StateChange,
  StreamEvent,
  Target,
  Welcome,
} from "../../src/control/protocol.ts";
import type { ControlRefusalCode } from "../../src/control/refusal.ts";
import {
  type Block,
  type BranchInfo,
  type Catalogue,
  type CatalogueRow,
  type Cursor,
  type Fragment,
  LIMITS,
  type Page,
  type Part,
  type ReaderRefusalCode,
  type RefusalRecord,
  type RefusedRoot,
  type Snapshot,
  type View,
} from "../../src/protocol/chat-01.ts";

export type ReadResult =
  | { ok: true; page: Page; cursor: Cursor | null; follow: Cursor | null; view: View }
  | { ok: false; refusal: RefusalRecord & { code: ReaderRefusalCode } };

/** The $defs a test may validate against, and the type a passing value has. */
export type SchemaRecords = {
  id: string;
  entry: string;
  snapshot: Snapshot;
  fragment: Fragment;
  block: Block;
  part: Part;
  page: Page;
  cursor: Cursor;
  refusal: RefusalRecord;
  readerRefusal: RefusalRecord & { code: ReaderRefusalCode };
  branchInfo: BranchInfo;
  view: View;
  catalogueRow: CatalogueRow;
  refusedRoot: RefusedRoot;
  catalogue: Catalogue;
  readResult: ReadResult;
  claimHolder: ClaimHolder;
  claimRevision: ClaimRevision;
  stopProof: StopProof;
  controlBinding: BindingRecord;
  receipt: Receipt;
  receiptRecord: ReceiptRecord;
  stopRecord: StopRecord;
  confirmationRecord: ConfirmationRecord;
  eligibilityRecord: EligibilityRecord;
  dialogRecord: DialogRecord;
  dialogEndRecord: DialogEndRecord;
  bootProof: BootProof;
  cohortProof: CohortProof;
  launchRecord: LaunchRecord;
  controlRefusalCode: ControlRefusalCode;
  hello: Hello;
  requestTarget: Target;
  request: Request;
  clientMessage: ClientMessage;
  controllerState: ControllerState;
  welcome: Welcome;
  reply: Reply;
  streamEvent: StreamEvent;
  dialogMessage: Dialog;
  stateMessage: StateChange;
  controllerMessage: ControllerMessage;
};
export type SchemaDef = keyof SchemaRecords;

export const SCHEMA_ID = schema.$id;

const ajv = new Ajv2020({ strict: true, allErrors: true });
ajv.addSchema(schema);
const validators = new Map<SchemaDef, ValidateFunction>();

function validatorFor(def: SchemaDef): ValidateFunction {
  let validate = validators.get(def);
  if (!validate) {
    validate = ajv.getSchema(`${SCHEMA_ID}#/$defs/${def}`);
    if (!validate) throw new Error(`chat-01 schema has no $defs/${def}`);
    validators.set(def, validate);
  }
  return validate;
}

/** Compiles every $def now, so a broken schema fails here rather than in the first use. */
export function compileAll(): string[] {
  const names = Object.keys(schema.$defs);
  for (const name of names) {
    if (!ajv.getSchema(`${SCHEMA_ID}#/$defs/${name}`)) throw new Error(`cannot compile ${name}`);
  }
  return names;
}

function formatErrors(errors: ErrorObject[]): string[] {
  return errors.map((e) => {
    const where = e.instancePath === "" ? "(root)" : e.instancePath;
    return `${where} ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`;
  });
}

/** Every problem with value as a `def`: schema errors first, else the semantic checks. */
export function findProblems(def: SchemaDef, value: unknown): string[] {
  const validate = validatorFor(def);
  if (!validate(value)) return formatErrors(validate.errors ?? []);
  const check = semanticChecks[def] as ((v: unknown) => string[]) | undefined;
  return check ? check(value) : [];
}

export function isValid<D extends SchemaDef>(def: D, value: unknown): value is SchemaRecords[D] {
  return findProblems(def, value).length === 0;
}

export function assertValid<D extends SchemaDef>(
  def: D,
  value: unknown,
): asserts value is SchemaRecords[D] {
  const problems = findProblems(def, value);
  if (problems.length === 0) return;
  const shown = problems.slice(0, 20);
  if (problems.length > shown.length) shown.push(`... and ${problems.length - shown.length} more`);
  throw new AssertionError({
    message: `not a valid chat-01 ${def}:\n  ${shown.join("\n  ")}`,
    operator: "assertValid",
  });
}

/** Validates what the reader's open or next returned: the record, its page and its cursors. */
export function assertReadResult(result: unknown): asserts result is ReadResult {
  assertValid("readResult", result);
}

const utf8 = new TextEncoder();
const jsonBytes = (value: unknown): number => utf8.encode(JSON.stringify(value)).length;
const isHigh = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;
const isLow = (code: number): boolean => code >= 0xdc00 && code <= 0xdfff;

function bodyOf(block: Block): string | null {
  if (block.type === "image") return block.data;
  if (block.type === "tool-result") return null;
  return block.text;
}

function checkBlock(block: Block, at = ""): string[] {
  const problems: string[] = [];
  const body = bodyOf(block);
  // JSON Schema's maxLength counts code points; the limit counts UTF-16 code units.
  if (body !== null && body.length > LIMITS.stringChars) {
    problems.push(`${at} body has ${body.length} UTF-16 units (limit ${LIMITS.stringChars})`);
  }
  // The reader cuts at 1 MiB of JSON; allow the two quotes whichever way it counts them.
  if (body !== null && jsonBytes(body) > LIMITS.fragmentJsonBytes + 2) {
    problems.push(`${at} body is ${jsonBytes(body)} bytes of JSON (limit 1 MiB)`);
  }
  if ("fragment" in block && block.fragment && block.fragment.index >= block.fragment.count) {
    problems.push(`${at}/fragment index ${block.fragment.index} >= count ${block.fragment.count}`);
  }
  return problems;
}

function checkPart(part: Part, at = ""): string[] {
  const problems: string[] = [];
  const n = part.id.startsWith(`${part.entry}.`) ? part.id.slice(part.entry.length + 1) : null;
  if (n === null || !/^(0|[1-9][0-9]*)$/.test(n)) {
    problems.push(`${at}/id ${part.id} is not <entry>.<n> for entry ${part.entry}`);
  } else if ((n !== "0") !== (part.continues === true)) {
    problems.push(`${at}/continues must be true exactly when the part index (${n}) is not 0`);
  }
  if (jsonBytes(part) > LIMITS.partBytes) problems.push(`${at} is over ${LIMITS.partBytes} bytes`);
  part.blocks.forEach((block, i) => {
    problems.push(...checkBlock(block, `${at}/blocks/${i}`));
  });
  return problems;
}

/** A fragment run is consecutive blocks of one type and count, index 0..count-1, pairs uncut. */
function checkFragmentRuns(parts: Part[], at: string): string[] {
  const problems: string[] = [];
  const flat = parts.flatMap((part, p) =>
    part.blocks.map((block, b) => ({ block, entry: part.entry, where: `${at}/${p}/blocks/${b}` })),
  );
  flat.forEach(({ block, entry, where }, i) => {
    const frag = "fragment" in block ? block.fragment : undefined;
    const prev = flat[i - 1];
    const prevFrag = prev && "fragment" in prev.block ? prev.block.fragment : undefined;
    const continuesRun =
      prev !== undefined &&
      prevFrag !== undefined &&
      prevFrag.index < prevFrag.count - 1 &&
      prev.entry === entry &&
      prev.block.type === block.type &&
      frag?.count === prevFrag.count &&
      frag.index === prevFrag.index + 1;
    if (prev && prevFrag && prevFrag.index < prevFrag.count - 1 && !continuesRun) {
      problems.push(`${where} must be fragment ${prevFrag.index + 1} of ${prevFrag.count}`);
    }
    if (frag && frag.index > 0 && prev && !continuesRun) {
      problems.push(`${where} fragment ${frag.index} does not follow fragment ${frag.index - 1}`);
    }
    if (continuesRun && prev) {
      const before = bodyOf(prev.block) ?? "";
      const after = bodyOf(block) ?? "";
      if (isHigh(before.charCodeAt(before.length - 1)) && isLow(after.charCodeAt(0))) {
        problems.push(`${where} cuts a surrogate pair`);
      }
    }
  });
  return problems;
}

function checkPage(page: Page, at = ""): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  page.parts.forEach((part, i) => {
    if (seen.has(part.id)) problems.push(`${at}/parts/${i} repeats part id ${part.id}`);
    seen.add(part.id);
    problems.push(...checkPart(part, `${at}/parts/${i}`));
  });
  problems.push(...checkFragmentRuns(page.parts, `${at}/parts`));
  if (jsonBytes(page) > LIMITS.pageBytes) problems.push(`${at} is over ${LIMITS.pageBytes} bytes`);
  return problems;
}

function checkView(view: View, at = ""): string[] {
  const names = view.branches.map((b) => b.name);
  const problems: string[] = [];
  if (new Set(names).size !== names.length) problems.push(`${at}/branches repeat a name`);
  // The list is bounded, and full up to its bound: the reader never lists fewer than it could.
  const listed = Math.min(view.branchCount, LIMITS.branchesPerView);
  if (names.length !== listed) {
    problems.push(
      `${at}/branches lists ${names.length} of ${view.branchCount} (expected ${listed})`,
    );
  }
  if (!names.includes(view.defaultBranch)) {
    problems.push(`${at}/defaultBranch ${view.defaultBranch} is not in branches`);
  }
  return problems;
}

function checkCursorBinding(cursor: Cursor, page: Page, at: string): string[] {
  const problems: string[] = [];
  for (const key of ["conversation", "branch", "sourceEpoch"] as const) {
    if (cursor[key] !== page[key]) problems.push(`${at}/${key} differs from the page's`);
  }
  const { bytes, digest } = cursor.snapshot;
  if (bytes !== page.snapshot.bytes || digest !== page.snapshot.digest) {
    problems.push(`${at}/snapshot differs from the page's`);
  }
  return problems;
}

function checkReadResult(result: ReadResult): string[] {
  if (!result.ok) return [];
  const { page, cursor, follow, view } = result;
  const problems = [...checkPage(page, "/page"), ...checkView(view, "/view")];
  if (cursor) {
    if (page.nextCursor !== cursor.id) problems.push("/page/nextCursor must be cursor.id");
    problems.push(...checkCursorBinding(cursor, page, "/cursor"));
  }
  if (follow) {
    if (page.nextCursor !== null) problems.push("/page/nextCursor must be null with a follow");
    problems.push(...checkCursorBinding(follow, page, "/follow"));
  }
  if (!view.branches.some((b) => b.name === page.branch)) {
    problems.push(`/page/branch ${page.branch} is not in view.branches`);
  }
  return problems;
}

// JSON Schema's maxLength counts code points; the wire guards count UTF-16 units.
function checkUnits(value: unknown, max: number, at: string): string[] {
  return typeof value === "string" && value.length > max
    ? [`${at} has ${value.length} UTF-16 units (limit ${max})`]
    : [];
}

function checkHello(hello: Hello): string[] {
  return checkUnits(hello.client, 200, "/client");
}

function checkRequest(r: Request): string[] {
  const problems = Object.entries(r.target ?? {}).flatMap(([k, v]) =>
    checkUnits(v, 200, `/target/${k}`),
  );
  if (r.op === "observe") problems.push(...checkUnits(r.cursor, 512, "/cursor"));
  return problems;
}

function checkReply(reply: Reply): string[] {
  const code = reply.outcome.startsWith("refused:") ? reply.outcome.slice(8) : undefined;
  return reply.refusal === code ? [] : [`/refusal ${reply.refusal} differs from /outcome`];
}

function checkStreamEvent(e: StreamEvent): string[] {
  const id = `${e.streamEpoch}.${e.sequence}`;
  return e.id === id ? [] : [`/id ${e.id} is not <streamEpoch>.<sequence> (${id})`];
}

const semanticChecks: { [D in SchemaDef]?: (value: SchemaRecords[D]) => string[] } = {
  block: (block) => checkBlock(block),
  part: (part) => checkPart(part),
  page: (page) => checkPage(page),
  view: (view) => checkView(view),
  fragment: (f) => (f.index < f.count ? [] : [`index ${f.index} >= count ${f.count}`]),
  readResult: checkReadResult,
  hello: checkHello,
  request: checkRequest,
  clientMessage: (m) => (m.type === "hello" ? checkHello(m) : checkRequest(m)),
  reply: checkReply,
  streamEvent: checkStreamEvent,
  controllerMessage: (m) =>
    m.type === "reply" ? checkReply(m) : m.type === "event" ? checkStreamEvent(m) : [],
  bootProof: (p) => {
    const problems: string[] = [];
    if (p.holder.host !== p.machine.host) problems.push("/machine/host must be the holder's host");
    if (p.holder.bootId === p.machine.bootId) problems.push("/machine/bootId must be another boot");
    return problems;
  },
};
