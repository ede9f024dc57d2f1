// Types for markdown.js (plain JS, served to the browser as is and imported by src/export).
export type TreeNode =
  | string
  | {
      tag: string;
      href?: string;
      cls?: string;
      start?: number;
      lang?: string;
      children: TreeNode[];
    };
export const TREE_TAGS: ReadonlySet<string>;
export function safeHref(raw: unknown): string | null;
export function markdownTree(text: string): TreeNode[];
export function codeNode(code: string, lang: string): TreeNode;
export function highlightTree(code: string, lang: string): TreeNode[];
export function languageOfPath(path: string): string;
