// Engine dialogs: the controller never answers them (lead decision 30). Each one is recorded
// and pushed to every client as disabled, with the reason, so a person sees what Pi asked.
import { randomUUID } from "node:crypto";
import { BLOCKING_UI_METHODS } from "../engine/pi/rpc.ts";
import type { Dialog } from "../protocol.ts";
import type { DialogRecord } from "./records.ts";

const DIALOG_REASON = "the controller never answers engine dialogs (lead decision 30)";

/** The record and the pushed message of a blocking dialog `native` the engine raised. */
export function disabledDialog(
  execution: string,
  native: string,
  method: string,
  title: string | undefined,
): { record: DialogRecord; message: Dialog } {
  const m = (BLOCKING_UI_METHODS as readonly string[]).includes(method)
    ? (method as Dialog["method"])
    : "input";
  const record: DialogRecord = {
    version: 2,
    kind: "dialog",
    id: `dl-${randomUUID()}`,
    native,
    execution,
    method: m,
    title: (title ?? "").slice(0, 2000),
    disabled: true,
    reason: DIALOG_REASON,
    at: new Date().toISOString(),
  };
  const message: Dialog = {
    type: "dialog",
    id: record.id,
    method: m,
    title: record.title,
    disabled: true,
    reason: DIALOG_REASON,
  };
  return { record, message };
}
