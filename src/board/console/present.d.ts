// Types for present.js (plain JS, served to the browser as is and imported by src/export).
import type { Usage } from "../../protocol/chat-01.js";

export type DiffLine = { op: " " | "-" | "+"; text: string };
export type ToolCallView =
  | { kind: "edit"; path: string; hunks: DiffLine[][] }
  | { kind: "write"; path: string; content: string; lang: string }
  | { kind: "bash"; command: string; timeout: number | null }
  | { kind: "read"; path: string; offset: number | null; limit: number | null }
  | { kind: "json"; text: string };
export type UsageTotal = Usage & { messages: number };

export const FOLD_LINES: number;
export function toolCallView(name: string, argsText: string): ToolCallView;
export function harnessLabel(harness: string | null | undefined): string;
export function readRange(offset: number | null, limit: number | null): string;
export function lineDiff(a: string, b: string): DiffLine[];
export function lineCount(text: string): number;
export function formatTokens(n: number): string;
export function formatCost(usd: number | null | undefined): string;
export function usageText(usage: Usage | undefined): string;
export function addUsage(total: UsageTotal | null, usage: Usage | undefined): UsageTotal;
export function modelText(meta: { model?: string; provider?: string } | undefined): string;
