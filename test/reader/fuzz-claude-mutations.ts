// Mutations of Claude Code session files for the fuzz suite: the generic ones (bytes, lines,
// UTF-8, depth, size: fuzz-mutations.ts) and Claude's own fields — uuid and parentUuid (cycles,
// odd ids, a parent that is a later record), the message's shape, a reply's id and stop reason,
// sidechain and agent flags, a compact boundary's metadata, the cwd, tool results' links.
import { mutate, ODD_IDS, ODD_NUMBERS, onObject, type Rng } from "./fuzz-mutations.ts";

type Obj = Record<string, unknown>;

const ODD_VALUES = [null, 1, "", "x".repeat(300), [], {}, true, -1, "user", "assistant"];

const CLAUDE: { name: string; apply: (file: Buffer, rng: Rng) => Buffer }[] = [
  {
    name: "claude uuid",
    apply: (file, rng) =>
      onObject(file, rng, (obj, all) => {
        const other = all[rng.int(all.length)];
        const which = rng.int(4);
        if (which === 0) obj.uuid = rng.pick(ODD_IDS);
        else if (which === 1) obj.parentUuid = rng.pick([...ODD_IDS, null, 7]);
        // A parent that is itself, or any other record: cycles and forward links.
        else if (which === 2) obj.parentUuid = obj.uuid;
        else if (other) {
          obj.parentUuid = other.uuid;
          other.parentUuid = obj.uuid;
        }
      }),
  },
  {
    name: "claude message",
    apply: (file, rng) =>
      onObject(file, rng, (obj) => {
        const m = (
          typeof obj.message === "object" && obj.message !== null ? obj.message : {}
        ) as Obj;
        const key = rng.pick(["content", "role", "id", "model", "usage", "stop_reason"]);
        if (key === "content" && rng.next() < 0.5) {
          m.content = [
            rng.pick([
              {
                type: "tool_use",
                id: rng.pick(ODD_IDS),
                name: rng.pick(ODD_VALUES),
                input: rng.pick(ODD_VALUES),
              },
              {
                type: "tool_result",
                tool_use_id: rng.pick(ODD_IDS),
                content: rng.pick(ODD_VALUES),
              },
              { type: "thinking", thinking: rng.pick(ODD_VALUES) },
              { type: "redacted_thinking", data: rng.pick(ODD_VALUES) },
              {
                type: "image",
                source: { type: "base64", media_type: "image/png", data: rng.pick(ODD_VALUES) },
              },
              { type: "server_tool_use" },
            ]),
          ];
        } else if (key === "usage") {
          m.usage = { input_tokens: rng.pick(ODD_NUMBERS), output_tokens: rng.pick(ODD_NUMBERS) };
        } else m[key] = rng.pick(ODD_VALUES);
        obj.message = rng.next() < 0.1 ? rng.pick(ODD_VALUES) : m;
      }),
  },
  {
    name: "claude record field",
    apply: (file, rng) =>
      onObject(file, rng, (obj) => {
        const key = rng.pick([
          "type",
          "isSidechain",
          "agentId",
          "isCompactSummary",
          "isMeta",
          "isApiErrorMessage",
          "sourceToolAssistantUUID",
          "logicalParentUuid",
          "compactMetadata",
          "toolUseResult",
          "subtype",
          "cwd",
          "sessionId",
          "customTitle",
          "aiTitle",
          "summary",
          "leafUuid",
        ]);
        obj[key] = rng.pick([
          ...ODD_VALUES,
          "compact_boundary",
          "attachment",
          "system",
          "/elsewhere",
          "../..",
          { preservedSegment: { headUuid: "x", tailUuid: "y" } },
          { agentId: "../../x" },
        ]);
      }),
  },
  {
    // The text of a line as the line scanner (harness/claude-code/scan-line.ts) sees it, not
    // as JSON.stringify writes it: keys and ids spelled with escapes, duplicate keys (the last
    // wins, with what is inside it), key-like text inside strings and nested objects.
    name: "claude line text",
    apply: (file, rng) => {
      const text = file.toString("utf8");
      const lines = text.split("\n");
      const i = rng.int(lines.length);
      const line = lines[i] ?? "";
      const key = rng.pick(["uuid", "parentUuid", "type", "message", "isSidechain", "subtype"]);
      const edits: (() => string)[] = [
        // A key spelled with an escape: the same key to JSON.parse.
        () =>
          line.replace(
            `"${key}":`,
            `"${key.slice(0, 1)}\\u00${key.charCodeAt(1).toString(16)}${key.slice(2)}":`,
          ),
        // An id's letters as escapes: the same id.
        () =>
          line.replace(
            /"(uuid|parentUuid)":"([0-9a-f])/,
            (_m, k: string, c: string) => `"${k}":"\\u00${c.charCodeAt(0).toString(16)}`,
          ),
        // A duplicate key, first or last in the record or in its message.
        () => line.replace(/^\{/, `{"${key}":${rng.pick(DUP_VALUES)},`),
        () => line.replace(/\}$/, `,"${key}":${rng.pick(DUP_VALUES)}}`),
        () =>
          line.replace(
            '"message":{',
            `"message":{"${rng.pick(["id", "content"])}":${rng.pick(DUP_VALUES)},`,
          ),
        // Key-like text inside a string and inside another object.
        () => line.replace(/^\{/, `{"note":"\\"${key}\\":\\"x\\"","extra":{"${key}":"y"},`),
      ];
      lines[i] = rng.pick(edits)();
      return Buffer.from(lines.join("\n"));
    },
  },
];

const DUP_VALUES = [
  '"x"',
  "null",
  "true",
  "1",
  "{}",
  "[]",
  '"compact_boundary"',
  '{"id":"msg_dup","content":[{"type":"tool_result","tool_use_id":"t"}]}',
  '[{"type":"tool_result"}]',
  '"a\\"b"',
];

/** One to four mutations, each a generic one or one of Claude's own. */
export function mutateClaude(file: Buffer, rng: Rng): { file: Buffer; applied: string[] } {
  const applied: string[] = [];
  let out = file;
  const n = 1 + rng.int(4);
  for (let k = 0; k < n; k++) {
    if (rng.next() < 0.5) {
      const m = rng.pick(CLAUDE);
      out = m.apply(out, rng);
      applied.push(m.name);
    } else {
      // One generic step (mutate applies one to four; take its first name's worth).
      const g = mutate(out, rng);
      out = g.file;
      applied.push(...g.applied);
    }
  }
  return { file: out, applied };
}
