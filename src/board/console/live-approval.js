// Approvals in the live panel (issue 26 item 4): Claude Code asks before a tool runs, the
// controller pushes the question as a `dialog` with `method: "approval"` (the tool's name and
// input), and pushes it again, same id, when it ends. Each one is a box in the panel: the tool
// and its input drawn as the history draws a tool call (tools.js: hostile text made visible,
// text nodes only), then — while it is open and this login controls the run — Allow, and Deny
// with an optional message for the model. The answer is the control route's `answer` op (a
// POST with the login key, as every other action). An ended approval stays, saying who
// answered and how, or that an interrupt denied it, or why it closed. Nothing here answers on
// its own: only a click sends a decision.
import { refusalNodes } from "./controls.js";
import { createDialogBoxes } from "./dialog-boxes.js";
import { el, textEl } from "./text.js";
import { toolCallBody } from "./tools.js";

const STATES = new Set(["open", "allowed", "denied", "closed"]);
/** Ended approvals kept on the panel; older ones leave (the controller's evidence keeps all). */
const KEPT_ENDED = 8;

/**
 * A pushed dialog as an approval, checked field by field (the stream's data is not trusted);
 * null when it is not an approval or not the shape the protocol gives one.
 */
export function approvalOf(m) {
  if (typeof m !== "object" || m === null || m.method !== "approval") return null;
  if (typeof m.id !== "string" || typeof m.title !== "string") return null;
  if (!STATES.has(m.state)) return null;
  const tool = m.tool;
  if (typeof tool !== "object" || tool === null || typeof tool.name !== "string") return null;
  const by = m.answeredBy;
  const actor = typeof by === "object" && by !== null && typeof by.actor === "string";
  return {
    id: m.id,
    title: m.title,
    state: m.state,
    tool: { name: tool.name, input: tool.input },
    answeredBy: actor ? by.actor : null,
    reason: typeof m.reason === "string" ? m.reason : null,
    message: typeof m.message === "string" ? m.message : null,
  };
}

/**
 * How an ended approval ended, in words: "Allowed by alice", "Denied by bob", "Denied by an
 * interrupt", "Closed: the engine exited". Null while it is open. Pure, for a test to table.
 */
export function approvalOutcome(a) {
  if (a.state === "open") return null;
  const word = a.state === "allowed" ? "Allowed" : a.state === "denied" ? "Denied" : "Closed";
  if (a.answeredBy !== null && a.state !== "closed") return `${word} by ${a.answeredBy}`;
  const reason = a.reason ?? "";
  // The controller's reasons read "denied by an interrupt", "closed: the engine exited".
  if (reason.toLowerCase().startsWith(a.state)) return word + reason.slice(a.state.length);
  return reason === "" ? word : `${word}: ${reason}`;
}

/** The tool's input as the JSON text a tool call records (what tools.js draws). */
function inputText(input) {
  try {
    return JSON.stringify(input ?? null) ?? "null";
  } catch {
    return String(input);
  }
}

/**
 * The approvals of one live panel, in `box`. `answer(dialog, decision, message?)` posts the
 * answer and resolves to the board's answer. `setControlling(yes)` says whether this login
 * controls the run now (only then are the buttons shown).
 */
export function createApprovals({ box, answer }) {
  function drawActions(entry, controlling) {
    const a = entry.dialog;
    const outcome = approvalOutcome(a);
    entry.node.classList.toggle("open", a.state === "open");
    entry.node.dataset.state = a.state;
    if (outcome !== null) {
      const line = textEl("p", "approval-outcome", outcome, true);
      if (a.message !== null) line.append(" — ", textEl("q", "approval-message", a.message, true));
      entry.actions.replaceChildren(line);
      return;
    }
    if (!controlling) {
      entry.actions.replaceChildren(
        el("p", "approval-why", "Take control to allow or deny this; the controller answers it."),
      );
      return;
    }
    const allow = el("button", "approval-allow", "Allow");
    allow.type = "button";
    const deny = el("button", "approval-deny", "Deny");
    deny.type = "button";
    const buttons = el("div", "approval-buttons");
    buttons.append(allow, deny);
    allow.addEventListener("click", () => void send(entry, "allow"));
    deny.addEventListener("click", () => void send(entry, "deny"));
    entry.actions.replaceChildren(entry.messageLabel, buttons);
  }

  async function send(entry, decision) {
    const text = entry.message.value.trim();
    for (const b of entry.actions.querySelectorAll("button")) b.disabled = true;
    const reply = await answer(
      entry.dialog.id,
      decision,
      decision === "deny" && text ? text : undefined,
    );
    if (reply?.ok) {
      entry.refusal.hidden = true;
      entry.refusal.replaceChildren();
      // The reply holds the ended dialog, as pushed: shown now, before the stream's copy.
      const ended = approvalOf(reply.result?.dialog);
      if (ended !== null && ended.id === entry.dialog.id) boxes.onDialog(reply.result.dialog);
      return;
    }
    entry.refusal.hidden = false;
    entry.refusal.replaceChildren(
      ...refusalNodes(reply?.refusal ?? { code: "bad-response", message: "No refusal given." }),
    );
    for (const b of entry.actions.querySelectorAll("button")) b.disabled = false;
  }

  function make(a) {
    const node = el("section", "approval");
    node.setAttribute("aria-label", `Approval: ${a.tool.name}`);
    const head = el("h3", "approval-head");
    head.append("The agent asks to run ", textEl("code", "approval-tool", a.tool.name, true));
    node.append(head);
    // The title is the tool's name and the engine's description of the call.
    const describe = a.title.startsWith(`${a.tool.name}: `)
      ? a.title.slice(a.tool.name.length + 2)
      : a.title === a.tool.name
        ? ""
        : a.title;
    if (describe !== "") node.append(textEl("p", "approval-title", describe, true));
    node.append(toolCallBody(a.tool.name, inputText(a.tool.input)).node);
    const refusal = el("div", "approval-refusal");
    refusal.setAttribute("role", "alert");
    refusal.hidden = true;
    const actions = el("div", "approval-actions");
    const messageLabel = el("label", "approval-message-label", "Message with a deny (optional) ");
    const message = el("input", "approval-message-input");
    message.type = "text";
    message.maxLength = 4000;
    messageLabel.append(message);
    node.append(refusal, actions);
    return { node, actions, refusal, message, messageLabel };
  }

  const boxes = createDialogBoxes({
    box,
    of: approvalOf,
    make,
    draw: drawActions,
    kept: KEPT_ENDED,
  });
  return boxes;
}
