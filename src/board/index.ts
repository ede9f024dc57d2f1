// The board (SPEC §5): the two GET routes over a reader, the Console, and the refusal → HTTP
// status table. `startBoard` is the one entry point the `conversation` command calls.
export type { ControlCall, ControlRoute } from "./control-route.ts";
export {
  type Board,
  type BoardOptions,
  type BoardReading,
  loopbackAddress,
  type ReaderSources,
  startBoard,
} from "./server.ts";
export {
  BOARD_REFUSAL_STATUS,
  type BoardRefusalCode,
  CONTROL_REFUSAL_STATUS,
  REFUSAL_STATUS,
  statusOf,
} from "./status.ts";
