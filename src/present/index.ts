// How a conversation reads to a person, below every face that shows one: the terminal
// (src/cli), the Console (src/board/console) and the exports (src/export) all take these rules
// from here, and `npm run build:console` bundles this file into the Console's present.js. Node
// code imports the one file it needs (markdown.ts loads the Markdown and highlighting bundle).
export { type ActWords, actLine } from "./acts.ts";
export { ATTENTION_WORDS, type NeedsYouState, notificationLabel } from "./attention-words.ts";
export {
  type BudgetFigures,
  budgetMeterText,
  budgetReached,
  budgetShare,
  usdUpText,
} from "./budget-meter.ts";
export {
  MAX_BUDGET_TOKENS,
  MAX_BUDGET_USD,
  parseRaise,
  parseTokensText,
  parseUsdText,
  type RaiseWords,
  raiseHint,
} from "./budget-raise.ts";
export { imageRefusal, isShownImageType } from "./image.ts";
export {
  harnessLabel,
  kindLabel,
  metaPhrases,
  NOTICE_LABELS,
  noticeLabel,
  roleLabel,
  whoOf,
} from "./labels.ts";
export { languageOfPath } from "./language.ts";
export {
  codeNode,
  highlightTree,
  markdownTree,
  safeHref,
  TASK_DONE,
  TASK_OPEN,
  TREE_TAGS,
  type TreeNode,
} from "./markdown.ts";
export {
  type RefusalWords,
  refusalLine,
  refusalWords,
  WORDED_CODES,
} from "./refusal-words.ts";
export { forkedFromLabel, messagesLabel, previewOf } from "./row-facts.ts";
export { formatSize } from "./size.ts";
export {
  type DiffLine,
  FOLD_LINES,
  lineCount,
  lineDiff,
  readRange,
  type ToolCallView,
  toolCallView,
} from "./tool-view.ts";
export {
  addUsage,
  formatCost,
  formatTokens,
  modelText,
  type UsageTotal,
  usageText,
} from "./usage.ts";
export { formatCount, formatUsd, GROUP_HEADS, USAGE_COLUMNS } from "./usage-report.ts";
export {
  codePointMarker,
  type Marked,
  makeVisible,
  markerFor,
  nextMarked,
  type VisibleOptions,
} from "./visible.ts";
export { waited } from "./waiting.ts";
