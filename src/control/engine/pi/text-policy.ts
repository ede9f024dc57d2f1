// Slash text (seed: Mediated control, Slash text). Pinned Pi interprets a prompt's leading `/`
// as an extension command, a skill or a prompt template; the controller refuses such text
// before it reaches the engine. `PREFIXES` is the table of what Pi interprets, each row with
// the pinned source lines that show it; test/control/text-policy.test.ts reads them back, and
// test/control/text-policy-1-6.test.ts finds each in Pi 1.6.0's files too (its lines moved; its
// prompt path tests no other prefix).
// Never rewrites admitted text: it is sent exactly as given.
import { LIMITS } from "../../../protocol/chat-01.ts";
import type { ControlRefusalCode } from "../../refusal.ts";
import type { TextCheck } from "../harness.ts";

/** A line of pinned Pi that a test reads back. `file` is relative to `node_modules/`. */
export type SourceLine = { file: string; line: number; snippet: string; shows: string };

/** A check a file on the RPC prompt path must not contain. `file` is relative to `node_modules/`. */
export type AbsentCheck = { file: string; snippet: string };

export type PrefixEntry = {
  prefix: string;
  feature: string;
  /** Whether pinned Pi acts on it when it arrives as the text of an RPC `prompt`. */
  interpretedOnRpcPrompt: boolean;
  where: string;
  /** A text starting with the prefix; S2 sends it. */
  example: string;
  sources: readonly SourceLine[];
  /** For an admitted prefix: files of the RPC prompt path that never test for it. */
  absentFrom: readonly AbsentCheck[];
  /**
   * Snippets of the minified bundle the engine actually runs (`dist/bundle/cli.js` imports
   * `BUNDLE_CHUNK`); minified lines are not stable, so these carry no line number.
   */
  bundle: readonly string[];
};

const PI = "@earendil-works/pi-coding-agent/dist";
const SESSION = `${PI}/core/agent-session.js`;
const RPC = `${PI}/modes/rpc/rpc-mode.js`;
const TEMPLATES = `${PI}/core/prompt-templates.js`;
const INTERACTIVE = `${PI}/modes/interactive/interactive-mode.js`;

/** The bundle chunk `dist/bundle/cli.js` loads, which holds AgentSession and the RPC mode. */
export const BUNDLE_CHUNK = `${PI}/bundle/chunks/chunk-JVUZSMYM.js`;

/**
 * How an RPC `prompt` reaches AgentSession.prompt: the message unchanged (no trim), with
 * `expandPromptTemplates` left to its default, true.
 */
export const RPC_PROMPT_PATH: readonly SourceLine[] = [
  { file: RPC, line: 298, snippet: 'case "prompt": {', shows: "the RPC prompt command" },
  {
    file: RPC,
    line: 303,
    snippet: ".prompt(command.message, {",
    shows: "the message is passed as is, with no expandPromptTemplates option",
  },
  {
    file: SESSION,
    line: 822,
    snippet: "const expandPromptTemplates = options?.expandPromptTemplates ?? true;",
    shows: "so commands, skills and templates are on for RPC prompts",
  },
];

const RPC_PATH_FILES = [RPC, SESSION, TEMPLATES];

function absentEverywhere(snippet: string): AbsentCheck[] {
  return RPC_PATH_FILES.map((file) => ({ file, snippet }));
}

export const PREFIXES: readonly PrefixEntry[] = [
  {
    prefix: "/",
    feature: "extension command (/<name> [args])",
    interpretedOnRpcPrompt: true,
    where:
      "AgentSession.prompt, first, even while streaming; a registered command runs and no prompt is sent. Under the seal 0.85.1 still registers the inline /llama (1.6.0 registers none).",
    example: "/llama list",
    sources: [
      {
        file: SESSION,
        line: 828,
        snippet: 'if (expandPromptTemplates && text.startsWith("/")) {',
        shows: "checked at index 0 of the untrimmed text",
      },
      {
        file: SESSION,
        line: 829,
        snippet: "const handled = await this._tryExecuteExtensionCommand(text);",
        shows: "the command runs",
      },
      {
        file: SESSION,
        line: 957,
        snippet:
          "const commandName = spaceIndex === -1 ? text.slice(1) : text.slice(1, spaceIndex);",
        shows: "the name is everything after the / up to the first space",
      },
    ],
    absentFrom: [],
    bundle: [
      'if(expandPromptTemplates&&text.startsWith("/")&&await this._tryExecuteExtensionCommand(text))',
    ],
  },
  {
    prefix: "/skill:",
    feature: "skill (/skill:<name> [args])",
    interpretedOnRpcPrompt: true,
    where:
      "AgentSession.prompt after the input event: the skill file's body replaces the text. The seal has no --no-skills, so skills load.",
    example: "/skill:review the diff",
    sources: [
      {
        file: SESSION,
        line: 856,
        snippet: "expandedText = this._expandSkillCommand(expandedText);",
        shows: "called on every RPC prompt",
      },
      {
        file: SESSION,
        line: 984,
        snippet: 'if (!text.startsWith("/skill:"))',
        shows: "checked at index 0",
      },
    ],
    absentFrom: [],
    bundle: ['_expandSkillCommand(text){if(!text.startsWith("/skill:"))return text;'],
  },
  {
    prefix: "/",
    feature: "prompt template (/<template> [args])",
    interpretedOnRpcPrompt: true,
    where:
      "AgentSession.prompt after skills: a template's content, with arguments substituted, replaces the text. --no-prompt-templates empties the list; the check still runs.",
    example: "/review check this",
    sources: [
      {
        file: SESSION,
        line: 857,
        snippet: "expandedText = expandPromptTemplate(expandedText, [...this.promptTemplates]);",
        shows: "called on every RPC prompt",
      },
      {
        file: TEMPLATES,
        line: 222,
        snippet: 'if (!text.startsWith("/"))',
        shows: "checked at index 0",
      },
      {
        file: TEMPLATES,
        line: 224,
        snippet: "const match = text.match(/^\\/([^\\s]+)(?:\\s+([\\s\\S]*))?$/);",
        shows: "the name runs from index 1 to the first whitespace",
      },
    ],
    absentFrom: [],
    bundle: ['function expandPromptTemplate(text,templates){if(!text.startsWith("/"))return text;'],
  },
  {
    prefix: "!",
    feature: "bash command",
    interpretedOnRpcPrompt: false,
    where:
      "Interactive mode's editor submit handler only. RPC runs bash through its own `bash` command, never from prompt text.",
    example: "!ls -la",
    sources: [
      {
        file: INTERACTIVE,
        line: 2362,
        snippet: "this.defaultEditor.onSubmit = async (text) => {",
        shows: "the interactive editor's submit handler",
      },
      {
        file: INTERACTIVE,
        line: 2502,
        snippet: 'if (text.startsWith("!")) {',
        shows: "the only place ! is read",
      },
      { file: RPC, line: 441, snippet: 'case "bash": {', shows: "RPC's separate bash command" },
    ],
    absentFrom: absentEverywhere('startsWith("!")'),
    bundle: [],
  },
  {
    prefix: "!!",
    feature: "bash command excluded from context",
    interpretedOnRpcPrompt: false,
    where: "Interactive mode's editor submit handler only.",
    example: "!!ls -la",
    sources: [
      {
        file: INTERACTIVE,
        line: 2503,
        snippet: 'const isExcluded = text.startsWith("!!");',
        shows: "read only inside the ! branch of the interactive handler",
      },
    ],
    absentFrom: absentEverywhere('"!!"'),
    bundle: [],
  },
  {
    prefix: "@",
    feature: "file reference",
    interpretedOnRpcPrompt: false,
    where:
      "CLI arguments (refused outright in RPC mode) and the interactive editor's autocomplete; prompt text is never scanned for it.",
    example: "@src/index.ts explain this",
    sources: [
      {
        file: `${PI}/cli/args.js`,
        line: 214,
        snippet: 'else if (arg.startsWith("@")) {',
        shows: "an argv word, not prompt text",
      },
      {
        file: `${PI}/main.js`,
        line: 506,
        snippet: 'if (parsed.mode === "rpc" && parsed.fileArgs.length > 0) {',
        shows: "RPC mode refuses @file arguments",
      },
      {
        file: "@earendil-works/pi-tui/dist/autocomplete.js",
        line: 288,
        snippet: 'if (prefix.startsWith("@")) {',
        shows: "the interactive editor's file completion",
      },
    ],
    absentFrom: absentEverywhere('startsWith("@")'),
    bundle: [],
  },
];

/**
 * Pi tests only index 0, with `startsWith`; its template pattern is anchored with `^` and no `m`
 * flag. A `/` after a newline is sent as text.
 */
export const LATER_LINE_SLASH_INTERPRETED = false;
export const LATER_LINE_SOURCES: readonly SourceLine[] = [
  {
    file: SESSION,
    line: 828,
    snippet: 'text.startsWith("/")',
    shows: "extension commands: index 0 only",
  },
  {
    file: SESSION,
    line: 984,
    snippet: 'text.startsWith("/skill:")',
    shows: "skills: index 0 only",
  },
  {
    file: TEMPLATES,
    line: 224,
    snippet: "text.match(/^\\/",
    shows: "templates: ^ without the m flag matches the start of the text only",
  },
];

/**
 * Leading whitespace is what `String.prototype.trimStart` removes (ECMAScript WhiteSpace and
 * LineTerminator: tab, VT, FF, space, NBSP, U+FEFF, Zs, LF, CR, U+2028, U+2029). The RPC path
 * does not trim, so " /x" reaches Pi as text; interactive mode trims before its checks, so the
 * same text typed there runs. The policy refuses both: text a client or a later relay trims is
 * a command.
 */
export const WHITESPACE_SOURCES: readonly SourceLine[] = [
  {
    file: RPC,
    line: 303,
    snippet: ".prompt(command.message, {",
    shows: "RPC: the message is not trimmed",
  },
  {
    file: INTERACTIVE,
    line: 2363,
    snippet: "text = text.trim();",
    shows: "interactive: trimmed before every prefix check",
  },
];

/** The longest prompt text admitted, in UTF-16 code units (CHAT-01's string limit). */
export const MAX_PROMPT_CHARS = LIMITS.stringChars;

export type TextPolicyCode = Extract<ControlRefusalCode, "text-policy" | "draft">;
export type { TextCheck };

/**
 * Admits prompt text, unchanged, or refuses it: `draft` when it is not a string, is empty or
 * whitespace only, or is longer than MAX_PROMPT_CHARS code units (so any record holding it
 * stays within CHAT-01's maxLength, which counts code points); `text-policy` when, after
 * leading whitespace, it starts with `/`. `!`, `!!`, `@` and a `/` on a later line pass.
 */
export function checkPromptText(text: unknown): TextCheck {
  if (typeof text !== "string") {
    return { ok: false, code: "draft", message: "prompt text is missing or not a string" };
  }
  if (text.length > MAX_PROMPT_CHARS) {
    return {
      ok: false,
      code: "draft",
      message: `prompt text is ${text.length} characters; the limit is ${MAX_PROMPT_CHARS}`,
    };
  }
  const start = text.trimStart();
  if (start === "") {
    return { ok: false, code: "draft", message: "prompt text is empty" };
  }
  if (start.startsWith("/")) {
    return {
      ok: false,
      code: "text-policy",
      message:
        "prompt text starts with '/', which Pi runs as a command, skill or prompt template; rephrase it",
    };
  }
  return { ok: true, text };
}
