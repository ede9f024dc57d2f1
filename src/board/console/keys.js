// The keys (docs/console.md): `/` focuses the search box (Esc leaves it), `?` opens the keys
// dialog, and each other key runs the action a view gave it. Ignored while typing in a field,
// with Ctrl, Alt or Meta, and while the dialog is open.

/**
 * Listens for keys: `actions` maps a key (`e.key`) to what it does; `search` is the search
 * box, `dialog` the keys dialog, which `help` opens and `close` closes.
 */
export function bindKeys({ actions, search, dialog, help, close }) {
  const all = { ...actions, "/": () => search.focus(), "?": () => dialog.showModal() };
  help.addEventListener("click", () => dialog.showModal());
  close.addEventListener("click", () => dialog.close());
  document.addEventListener("keydown", (e) => {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    if (dialog.open) return;
    const t = e.target;
    if (t instanceof Element && t.closest("input, textarea, select, [contenteditable]")) {
      if (e.key === "Escape" && t === search) search.blur();
      return;
    }
    if (!Object.hasOwn(all, e.key)) return;
    e.preventDefault();
    all[e.key]();
  });
}
