// The budget meter of the live panel (issue 28 item 4): what the controller's engines spent of
// its budget, as its state says (present only once a budget is set), drawn as a <meter> with the
// figures beside it in the words `conversation attach` uses (src/present/budget-meter.ts).
import { budgetMeterText, budgetReached, budgetShare } from "./present.js";

/** Shows `budget` (a state's `budget`, or undefined) in `el`; hides `el` when there is none. */
export function renderBudgetMeter(el, budget) {
  if (!budget) {
    el.hidden = true;
    el.replaceChildren();
    return;
  }
  const meter = document.createElement("meter");
  meter.min = 0;
  meter.max = 1;
  // The browser colours the part past `high`: the last tenth of the budget, and a reached one.
  meter.high = 0.9;
  meter.optimum = 0;
  meter.value = budgetShare(budget);
  meter.setAttribute("aria-label", "Budget spent");
  const words = document.createElement("span");
  words.textContent = budgetMeterText(budget);
  el.classList.toggle("reached", budgetReached(budget));
  el.replaceChildren(meter, words);
  el.hidden = false;
}
