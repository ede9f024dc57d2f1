// Hostile link forms for the exports (issue 22 item 5), and what a rendered export must never
// hold: a link, a source or an action whose URL a browser would run (javascript:, vbscript:,
// data:, file:), an event handler, or an element that runs or embeds. Stated here on its own
// (not from the exports' code) so the tests check the exports rather than restate them.
import * as commonmark from "commonmark";
import MarkdownIt from "markdown-it";
import { marked } from "marked";
import { micromark } from "micromark";

/** One hostile text and words a person must still see when the export is rendered. */
export type HostileCase = { name: string; text: string; shows: string[] };

const JS = "alert(1)";

export const HOSTILE_LINKS: HostileCase[] = [
  // Entity-encoded schemes: CommonMark decodes entities in destinations.
  { name: "decimal entity", text: `[click](&#106;avascript:${JS})`, shows: ["click", JS] },
  { name: "hex entity", text: `[click](&#x6A;avascript:${JS})`, shows: ["click", JS] },
  { name: "padded entity", text: `[click](&#0000106;avascript:${JS})`, shows: ["click", JS] },
  { name: "entity colon", text: `[click](javascript&colon;${JS})`, shows: ["click", JS] },
  { name: "entity colon 58", text: `[click](javascript&#58;${JS})`, shows: ["click", JS] },
  { name: "entity tab in scheme", text: `[click](java&Tab;script:${JS})`, shows: ["click", JS] },
  { name: "entity newline", text: `[click](java&#10;script:${JS})`, shows: ["click", JS] },
  // Case and whitespace: browsers fold case and drop tabs and newlines inside a scheme.
  { name: "mixed case", text: `[click](JaVaScRiPt:${JS})`, shows: ["click", JS] },
  { name: "tab in scheme", text: `[click](java\tscript:${JS})`, shows: ["click", JS] },
  { name: "control before scheme", text: `[click](<\x01javascript:${JS}>)`, shows: ["click"] },
  { name: "space before scheme", text: `[click](< javascript:${JS}>)`, shows: ["click", JS] },
  { name: "vbscript", text: `[click](vbscript:msgbox(1))`, shows: ["click", "msgbox(1)"] },
  { name: "data html", text: `[click](data:text/html;base64,PHNjcmlwdD4=)`, shows: ["click"] },
  { name: "file", text: "[click](file:///etc/passwd)", shows: ["click", "/etc/passwd"] },
  // Where the target sits: the next line, angle brackets, titles.
  { name: "target on the next line", text: `[click](\njavascript:${JS})`, shows: ["click", JS] },
  { name: "angle target", text: `[click](<javascript:${JS}>)`, shows: ["click", JS] },
  { name: "title", text: `[click](javascript:${JS} "title")`, shows: ["click", JS, "title"] },
  { name: "paren title", text: `[click](javascript:${JS} (t))`, shows: ["click"] },
  { name: "escaped paren", text: "[click](javascript:alert\\(1\\))", shows: ["click"] },
  // Nested brackets and images.
  { name: "nested brackets", text: `[a [b] c](javascript:${JS})`, shows: ["a", "c", JS] },
  { name: "double brackets", text: `[[click]](javascript:${JS})`, shows: ["click", JS] },
  { name: "image in link", text: `[![i](https://e.test/i.png)](javascript:${JS})`, shows: [JS] },
  { name: "image", text: `![click](javascript:${JS})`, shows: ["click", JS] },
  { name: "data image svg", text: "![x](data:image/svg+xml,<svg onload=alert(1)>)", shows: ["x"] },
  { name: "link in link", text: `[a](https://ok.test/[b](javascript:${JS}))`, shows: ["a"] },
  // Reference definitions wherever CommonMark allows them.
  { name: "reference", text: `[r]: javascript:${JS}\n\n[r]`, shows: [JS] },
  { name: "reference with title", text: `[r]: javascript:${JS} "t"\n\n[r][]`, shows: [JS] },
  { name: "reference in a quote", text: `> [r]: javascript:${JS}\n>\n> [r]`, shows: [JS] },
  {
    name: "reference in a quote, used outside",
    text: `> [r]: javascript:${JS}\n\n[r]`,
    shows: [JS],
  },
  { name: "reference in a list item", text: `- [r]: javascript:${JS}\n\n  [r]`, shows: [JS] },
  {
    name: "reference in an ordered item",
    text: `1. [r]:\n   javascript:${JS}\n\n[x][r]`,
    shows: [JS],
  },
  { name: "reference target on the next line", text: `[r]:\njavascript:${JS}\n\n[r]`, shows: [JS] },
  {
    name: "reference label over two lines",
    text: `[a\nb]: javascript:${JS}\n\n[a b]`,
    shows: [JS],
  },
  { name: "reference indented 3", text: `   [r]: javascript:${JS}\n\n[r]`, shows: [JS] },
  { name: "reference entity", text: `[r]: &#106;avascript:${JS}\n\n[r]`, shows: [JS] },
  { name: "reference angle", text: `[r]: <javascript:${JS}>\n\n[click][r]`, shows: ["click"] },
  { name: "reference after a heading", text: `# h\n[r]: javascript:${JS}\n\n[r]`, shows: [JS] },
  { name: "setext heading link", text: `[click](javascript:${JS})\n===`, shows: ["click"] },
  { name: "lazy quote line", text: `> [click](\njavascript:${JS})`, shows: ["click", JS] },
  {
    name: "table cell link",
    text: `| a |\n| - |\n| [click](javascript:${JS}) |`,
    shows: ["click"],
  },
  {
    name: "table code pipe",
    text: `| a |\n| - |\n| \`x|[click](javascript:${JS})\` |`,
    // GFM drops cells past the header's: the Console does not show it either.
    shows: ["x"],
  },
  // Autolinks and raw HTML.
  { name: "autolink", text: `<javascript:${JS}>`, shows: [JS] },
  { name: "autolink upper", text: `<JAVASCRIPT:${JS}>`, shows: [JS] },
  { name: "autolink vbscript", text: "<vbscript:msgbox(1)>", shows: ["msgbox(1)"] },
  { name: "autolink data", text: "<data:text/html,hi>", shows: ["hi"] },
  { name: "html a", text: `<a href="javascript:${JS}">click</a>`, shows: ["click"] },
  { name: "html a unquoted", text: `<a href=javascript:${JS}>click</a>`, shows: ["click"] },
  { name: "html a entity", text: `<a href="&#106;avascript:${JS}">click</a>`, shows: ["click"] },
  { name: "html img onerror", text: `<img src=x onerror=${JS}>`, shows: ["onerror"] },
  { name: "html svg", text: `<svg onload=${JS}>`, shows: ["onload"] },
  { name: "html script", text: `<script>${JS}</script>`, shows: [JS] },
  { name: "html iframe", text: `<iframe src="javascript:${JS}"></iframe>`, shows: ["iframe"] },
  {
    name: "html form",
    text: `<form action=javascript:${JS}><button>go</button></form>`,
    shows: ["go"],
  },
  {
    name: "html block",
    text: `<div>\n<a href="javascript:${JS}">click</a>\n</div>`,
    shows: ["click"],
  },
  { name: "html details", text: `<details open ontoggle=${JS}>`, shows: ["ontoggle"] },
  { name: "html base", text: `<base href="javascript:${JS}//">`, shows: ["base"] },
  { name: "html comment", text: `<!-- --><a href="javascript:${JS}">click</a>`, shows: ["click"] },
  // Escapes and code: a backslash or a code span must not leave a live link beside it.
  { name: "escaped backslash", text: `\\\\[click](javascript:${JS})`, shows: ["click"] },
  { name: "escaped bracket", text: `\\[click](javascript:${JS})`, shows: ["click", JS] },
  { name: "code span", text: `\`[click](javascript:${JS})\``, shows: ["click", JS] },
  { name: "code span over lines", text: `\`a\n[click](javascript:${JS})\``, shows: ["click"] },
  { name: "fenced", text: `\`\`\`\n[click](javascript:${JS})\n\`\`\``, shows: ["click", JS] },
  { name: "tilde fence", text: `~~~\n<a href="javascript:${JS}">click</a>\n~~~`, shows: ["click"] },
  { name: "unclosed fence", text: `\`\`\`\n[click](javascript:${JS})`, shows: ["click", JS] },
  { name: "indented code", text: `    [click](javascript:${JS})`, shows: ["click", JS] },
  {
    name: "fence in a list item",
    text: `- a\n\n  \`\`\`\n  [click](javascript:${JS})\n  \`\`\``,
    shows: ["click"],
  },
  { name: "link after code span", text: `\`x\` [click](javascript:${JS})`, shows: ["click", JS] },
  { name: "backtick in link text", text: `[\`click](javascript:${JS})\``, shows: ["click"] },
  // Literals some renderers link by themselves.
  { name: "bare scheme", text: `javascript:${JS} www.example.test`, shows: [JS] },
  { name: "quote in url", text: `https://ok.test/"onmouseover="${JS}`, shows: ["onmouseover"] },
  { name: "www literal", text: `www.example.test/javascript:${JS}`, shows: [JS] },
];

/** Safe links the export keeps as links, with the URL each renderer must link to. */
export const SAFE_LINKS: { text: string; href: string }[] = [
  { text: "[docs](https://example.test/docs?a=1&b=2)", href: "https://example.test/docs?a=1&b=2" },
  { text: "[mail](mailto:someone@example.test)", href: "mailto:someone@example.test" },
  { text: "[r]: https://example.test/ref\n\n[see][r]", href: "https://example.test/ref" },
];

/** The renderers a viewer might use, each at its most permissive where it has a switch. */
export const RENDERERS: Record<string, (markdown: string) => string> = {
  "markdown-it (html, linkify)": (s) => new MarkdownIt({ html: true, linkify: true }).render(s),
  "marked (defaults)": (s) => marked.parse(s, { async: false }),
  "commonmark (defaults)": (s) =>
    new commonmark.HtmlRenderer().render(new commonmark.Parser().parse(s)),
  "micromark (dangerous html and protocols)": (s) =>
    micromark(s, { allowDangerousHtml: true, allowDangerousProtocol: true }),
};

const URL_ATTRS = new Set([
  "href",
  "src",
  "action",
  "formaction",
  "xlink:href",
  "data",
  "poster",
  "background",
  "srcset",
  "cite",
  "codebase",
]);
const ACTIVE_TAGS =
  /^(script|iframe|object|embed|form|base|meta|link|style|svg|math|frame|applet)$/i;

/**
 * What in `html` could run or load something a person did not choose: each finding as text,
 * none when the HTML is inert. Attribute values are read as a browser reads them: entities
 * decoded, then a URL's leading controls and spaces and every tab and newline dropped, so
 * `java&#9;script:` and ` JAVASCRIPT:` count. `allowImage` admits one exact data: image form.
 */
export function activeContent(html: string, allowImage?: RegExp): string[] {
  const found: string[] = [];
  for (const tag of html.matchAll(/<([A-Za-z][^\s/>]*)((?:[^>"']|"[^"]*"|'[^']*')*)>/g)) {
    const name = tag[1] ?? "";
    if (ACTIVE_TAGS.test(name)) found.push(`element <${name}>`);
    for (const attr of (tag[2] ?? "").matchAll(
      /([^\s="'/>]+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s>]+))?/g,
    )) {
      const key = (attr[1] ?? "").toLowerCase();
      const raw = (attr[2] ?? "").replace(/^["']|["']$/g, "");
      if (key.startsWith("on")) found.push(`handler ${key} on <${name}>`);
      if (key === "style" && /url\s*\(|expression\s*\(/i.test(decodeEntities(raw))) {
        found.push(`style URL on <${name}>`);
      }
      if (!URL_ATTRS.has(key)) continue;
      const url = decodeEntities(raw)
        .replace(/^[^!-\uffff]+|[^!-\uffff]+$/g, "")
        .replace(/[\t\n\r]/g, "");
      if (allowImage?.test(tag[0])) continue;
      if (/^(javascript|vbscript|data|file|livescript):/i.test(url)) {
        found.push(`${key}=${url.slice(0, 60)} on <${name}>`);
      }
    }
  }
  return found;
}

/** The text a person sees in `html`: tags dropped, entities decoded, white space as one space. */
export function visibleText(html: string): string {
  return decodeEntities(html.replace(/<[^>]*>/g, " "))
    .replace(/\s+/g, " ")
    .trim();
}

const NAMED: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  colon: ":",
  tab: "\t",
  newline: "\n",
  nbsp: "\u00a0",
};

function decodeEntities(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);?/gi, (m, body: string) => {
    if (body[0] === "#") {
      const cp =
        body[1] === "x" || body[1] === "X" ? parseInt(body.slice(2), 16) : Number(body.slice(1));
      return Number.isFinite(cp) && cp <= 0x10ffff ? String.fromCodePoint(cp) : m;
    }
    return NAMED[body.toLowerCase()] ?? m;
  });
}
