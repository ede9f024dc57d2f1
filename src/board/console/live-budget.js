// The budget dialog in the live panel (issue 28 item 4; docs/console.md, Budgets): the
// controller's budget is reached, the run was stopped at a safe point, and the controller asks
// whether to raise the budget or stop. It is the controller's own dialog (`method: "budget"`),
// pushed when it opens and again, same id, when it ends. The box says what was spent of which
// limit, and — while it is open and this login controls the run — has a box for the new limit
// (dollars or tokens, as the dialog limits), Raise and Stop. The amount is typed, never picked,
// and read by attach's one rule (present/budget-raise.ts parseRaise, in the present.js bundle):
// empty, unreadable or not above what was spent is said here and nothing is sent. Raise is the
// control route's `answer` with "allow" and the new limits (a raise needs the `budget`
// capability, an admin's: an operator's is refused by the board and the refusal shown); Stop is
// "deny". An ended dialog stays, saying who raised or stopped, and the figures then.
import { refusalNodes } from "./controls.js";
import { createDialogBoxes } from "./dialog-boxes.js";
import { budgetMeterText, formatCount, parseRaise, raiseHint, usdUpText } from "./present.js";
import { el, textEl } from "./text.js";

const STATES = new Set(["open", "allowed", "denied", "closed"]);
/** Ended budget dialogs kept on the panel (the controller's evidence keeps all). */
const KEPT_ENDED = 4;
/** Where the Console's amount is typed and what sends it, for parseRaise's words. */
const WORDS = { field: "the box", send: "Raise" };

const isCount = (v) => typeof v === "number" && Number.isFinite(v) && v >= 0;
const isLimit = (v) => v === null || (typeof v === "number" && Number.isFinite(v) && v > 0);

/** A dialog's figures, checked field by field; null when absent or not the protocol's shape. */
function figuresOf(b) {
  if (typeof b !== "object" || b === null) return null;
  const { spent, limit } = b;
  if (typeof spent !== "object" || spent === null || typeof limit !== "object" || limit === null)
    return null;
  if (!isCount(spent.usd) || !isCount(spent.tokens)) return null;
  if (!isLimit(limit.usd) || !isLimit(limit.tokens)) return null;
  return {
    spent: { usd: spent.usd, tokens: spent.tokens },
    limit: { usd: limit.usd, tokens: limit.tokens },
  };
}

/**
 * A pushed dialog as a budget dialog, checked field by field (the stream's data is not
 * trusted); null when it is not one or not the shape the protocol gives one.
 */
export function budgetDialogOf(m) {
  if (typeof m !== "object" || m === null || m.method !== "budget") return null;
  if (typeof m.id !== "string" || typeof m.title !== "string" || !STATES.has(m.state)) return null;
  const by = m.answeredBy;
  return {
    id: m.id,
    title: m.title,
    state: m.state,
    budget: figuresOf(m.budget),
    answeredBy:
      typeof by === "object" && by !== null && typeof by.actor === "string" ? by.actor : null,
    reason: typeof m.reason === "string" ? m.reason : null,
  };
}

/** The limits a dialog's figures name: "$5.00", "30 tokens", "$5.00 and 30 tokens". */
function limitWords(b) {
  const parts = [];
  if (b.limit.usd !== null) parts.push(usdUpText(b.limit.usd));
  if (b.limit.tokens !== null) parts.push(`${formatCount(b.limit.tokens)} tokens`);
  return parts.join(" and ");
}

/**
 * How an ended budget dialog ended, in words: "Raised to 30 tokens by alice", "Stopped by bob;
 * the next prompt asks again", "Closed: the controller went away". Null while it is open (the
 * figures line beside it says what was spent). Pure, for a test to table.
 */
export function budgetOutcome(d) {
  if (d.state === "open") return null;
  const by = d.answeredBy === null ? "" : ` by ${d.answeredBy}`;
  if (d.state === "allowed") {
    const to = d.budget === null ? "" : ` to ${limitWords(d.budget)}`;
    return `Raised${to}${by}; the next prompt runs`;
  }
  if (d.state === "denied") return `Stopped${by}; the next prompt asks again`;
  return `Closed${d.reason ? `: ${d.reason}` : ""}`;
}

/** The label of the new-limit box, by which limits the dialog has. */
function fieldLabel(b) {
  if (b !== null && b.limit.tokens !== null && b.limit.usd === null) return "New token limit";
  if (b !== null && b.limit.usd !== null && b.limit.tokens === null) return "New limit (USD)";
  return "New limits (USD and/or tokens)";
}

/**
 * The budget dialogs of one live panel, in `box`. `answer(body)` posts an `answer` body and
 * resolves to the board's answer. `setControlling(yes)` says whether this login controls the
 * run now (only then are the box and the buttons shown).
 */
export function createBudgetDialogs({ box, answer }) {
  function showRefusal(entry, refusal) {
    entry.refusal.hidden = false;
    entry.refusal.replaceChildren(...refusalNodes(refusal));
  }

  function clearRefusal(entry) {
    entry.refusal.hidden = true;
    entry.refusal.replaceChildren();
  }

  function drawActions(entry, controlling) {
    const d = entry.dialog;
    entry.node.classList.toggle("open", d.state === "open");
    entry.node.dataset.state = d.state;
    entry.figures.textContent = d.budget === null ? "" : budgetMeterText(d.budget);
    entry.figures.hidden = d.budget === null;
    const outcome = budgetOutcome(d);
    if (outcome !== null) {
      clearRefusal(entry);
      entry.actions.replaceChildren(textEl("p", "budget-outcome", outcome, true));
      return;
    }
    if (!controlling) {
      entry.actions.replaceChildren(
        el("p", "budget-why", "Take control to raise the budget or stop here."),
      );
      return;
    }
    // The form is made once per dialog, so a redraw keeps what was typed and where focus is.
    entry.actions.replaceChildren(entry.form);
  }

  function makeForm(entry) {
    const form = el("form", "budget-form");
    const label = el("label", "budget-limit-label", `${fieldLabel(entry.dialog.budget)} `);
    const input = el("input", "budget-limit-input");
    input.type = "text";
    input.name = "limit";
    input.autocomplete = "off";
    input.spellcheck = false;
    input.maxLength = 100;
    const onlyTokens = entry.dialog.budget?.limit.usd === null;
    input.inputMode = onlyTokens ? "numeric" : "decimal";
    input.placeholder = onlyTokens
      ? "e.g. 50000"
      : entry.dialog.budget?.limit.tokens === null
        ? "e.g. 5 or 2.50"
        : "e.g. $2.50, 50000 tokens";
    const hintId = `budget-hint-${entry.dialog.id}`;
    input.setAttribute("aria-describedby", hintId);
    label.append(input);
    const hint = el("p", "budget-hint", `To raise: ${raiseHint(entry.dialog.budget, WORDS)}.`);
    hint.id = hintId;
    const raise = el("button", "budget-raise", "Raise");
    raise.type = "submit";
    const stop = el("button", "budget-stop", "Stop");
    stop.type = "button";
    const buttons = el("div", "budget-buttons");
    buttons.append(raise, stop);
    form.append(label, buttons, hint);
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const read = parseRaise(input.value, entry.dialog.budget, WORDS);
      if (!read.ok) {
        // Said here, nothing sent: the controller could only refuse it.
        showRefusal(entry, { code: "budget", message: `${read.message}.` });
        input.focus();
        return;
      }
      void send(entry, { decision: "allow", budget: read.limits });
    });
    stop.addEventListener("click", () => void send(entry, { decision: "deny" }));
    entry.input = input;
    return form;
  }

  async function send(entry, what) {
    const buttons = entry.form.querySelectorAll("button");
    for (const b of buttons) b.disabled = true;
    const reply = await answer({ op: "answer", dialog: entry.dialog.id, ...what });
    for (const b of buttons) b.disabled = false;
    if (reply?.ok) {
      clearRefusal(entry);
      entry.input.value = "";
      // The reply holds the ended dialog, as pushed: shown now, before the stream's copy.
      const ended = budgetDialogOf(reply.result?.dialog);
      if (ended !== null && ended.id === entry.dialog.id) boxes.onDialog(reply.result.dialog);
      return;
    }
    showRefusal(entry, reply?.refusal ?? { code: "bad-response", message: "No refusal given." });
  }

  function make(d) {
    const node = el("section", "budget-dialog");
    node.setAttribute("aria-label", "Budget reached");
    node.append(el("h3", "budget-head", "Budget reached: raise it, or stop here"));
    // The controller's title says the figures in words; the figures line says them for any
    // state, so the title shows only for a dialog that came without them.
    const title = textEl("p", "budget-title", d.title, true);
    title.hidden = d.budget !== null;
    const figures = el("p", "budget-figures");
    const refusal = el("div", "budget-refusal");
    refusal.setAttribute("role", "alert");
    refusal.hidden = true;
    const actions = el("div", "budget-actions");
    node.append(title, figures, actions, refusal);
    const entry = { dialog: d, node, figures, actions, refusal };
    entry.form = makeForm(entry);
    return entry;
  }

  const boxes = createDialogBoxes({
    box,
    of: budgetDialogOf,
    make,
    draw: drawActions,
    kept: KEPT_ENDED,
  });
  return {
    ...boxes,
    /** A pushed dialog: true when it was a budget dialog (shown, or dropped as malformed). */
    onDialog: (m) => boxes.onDialog(m) || m?.method === "budget",
  };
}
