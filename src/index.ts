// @mosaic/conversation: the reader (CHAT-02). Read-only histories of Pi conversations.
export * from "./protocol/chat-01.ts";
export {
  defaultClaudeProjectsDir,
  encodeClaudeCwd,
} from "./reader/harness/claude-code/store.ts";
export { defaultPiSessionsDir, encodeCwd } from "./reader/harness/pi/pi-store.ts";
export {
  ACTOR,
  createReader,
  type NextRequest,
  type OpenRequest,
  PURPOSE,
  type Reader,
  type ReaderOptions,
  type ReadResult,
} from "./reader/reader.ts";
export { RECONCILE, Refusal } from "./reader/refusal.ts";
export {
  type BoardSpec,
  type ClaudeRoot,
  type ClaudeSeatRoot,
  type ClaudeStoreRoot,
  claudeConfigDirOf,
  claudeProjectsDirOf,
  conversationId,
  conversationIdOf,
  type FileRoot,
  isFileRoot,
  type PiRoot,
  type PiStoreRoot,
  type Root,
  rootsFromSpecs,
  type SeatRegistration,
  STORE_SEAT,
  type StoreOrigin,
  samePath,
  sessionsDirOf,
  type UnsupportedRoot,
} from "./reader/sources.ts";
