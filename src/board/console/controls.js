// Controls every view of the Console uses: a copy button, a refusal shown with its code (and,
// when the reader says so, a button that reads again), and focus kept across a redraw.
import { refusalWords } from "./present.js";
import { el, textEl } from "./text.js";

/** A button that copies `getText()` to the clipboard and says whether it worked. */
export function copyButton(getText, label) {
  const button = el("button", "copy", "Copy");
  button.type = "button";
  button.title = label;
  button.setAttribute("aria-label", label);
  let timer = 0;
  button.addEventListener("click", async () => {
    clearTimeout(timer);
    try {
      await navigator.clipboard.writeText(getText());
      button.textContent = "Copied";
    } catch {
      // The browser refused (no permission, not a secure context): say so, nothing else to do.
      button.textContent = "Copy failed";
    }
    timer = setTimeout(() => {
      button.textContent = "Copy";
    }, 1500);
  });
  return button;
}

/**
 * A refusal in plain words (what happened, what to do), then its code and the layer's own
 * message in parentheses (src/present/refusal-words.ts): the nodes, for any box to hold.
 */
export function refusalNodes(refusal) {
  const w = refusalWords(String(refusal.code), String(refusal.message ?? ""));
  // Spaces between the pieces: they read as one sentence (and a flex box drops them).
  // The layer's words come from the wire: one-line fields, marked as the history marks them.
  const nodes = [textEl("span", "said", w.said, true), " "];
  if (w.todo !== null) nodes.push(el("span", "todo", w.todo), " ");
  const why = el("span", "why", "(");
  why.append(textEl("code", "code", w.code, true));
  if (w.detail !== null) why.append(": ", textEl("span", "detail", w.detail, true));
  why.append(")");
  nodes.push(why);
  return nodes;
}

/** A refusal's words and code; with `reconcile` and `onReconcile`, a "Read again" button. */
export function refusalBox(refusal, onReconcile) {
  const box = el("div", "refusal");
  box.setAttribute("role", "alert");
  box.append(...refusalNodes(refusal));
  if (refusal.reconcile && onReconcile) {
    const again = el("button", "reconcile", "Read again from the start");
    again.type = "button";
    again.addEventListener("click", onReconcile);
    box.append(again);
  }
  return box;
}

/** The focus key (data-focus-key) of the control inside `container` that has focus, if any. */
export function focusKeyIn(container) {
  const a = document.activeElement;
  return a instanceof HTMLElement && container.contains(a) ? (a.dataset.focusKey ?? null) : null;
}

/** Gives focus back to the redrawn control with `key`: a redraw does not drop the person's place. */
export function refocus(container, key) {
  if (key === null) return;
  for (const e of container.querySelectorAll("[data-focus-key]")) {
    if (e instanceof HTMLElement && e.dataset.focusKey === key) {
      e.focus({ preventScroll: true });
      return;
    }
  }
}
