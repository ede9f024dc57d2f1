// The boxes of the live panel's answerable dialogs (live-approval.js, live-budget.js): each
// dialog the controller pushes is one box, kept by id, redrawn when it is pushed again; an ended
// one stays ended (a late copy of the open one changes nothing), the oldest ended leave past
// `kept`; when the controller goes, open ones read closed until it pushes them open again.

/**
 * `of(message)` reads a pushed dialog (null: not this kind); `make(dialog)` builds its entry
 * ({ node, ... }); `draw(entry, controlling)` draws its state and buttons.
 */
export function createDialogBoxes({ box, of, make, draw, kept }) {
  /** id → entry, with `dialog` (as last pushed) and `provisional` (closed by a going away). */
  const shown = new Map();
  let controlling = false;

  function trim() {
    const ended = [...shown.values()].filter((e) => e.dialog.state !== "open");
    for (const e of ended.slice(0, Math.max(0, ended.length - kept))) {
      e.node.remove();
      shown.delete(e.dialog.id);
    }
  }

  return {
    /** A pushed dialog: true when it was this kind (shown), false for any other. */
    onDialog(m) {
      const d = of(m);
      if (d === null) return false;
      let entry = shown.get(d.id);
      if (entry === undefined) {
        entry = make(d);
        entry.dialog = d;
        entry.provisional = false;
        shown.set(d.id, entry);
        box.append(entry.node);
      } else {
        if (entry.dialog.state !== "open" && d.state === "open" && !entry.provisional) return true;
        entry.dialog = d;
        entry.provisional = false;
      }
      draw(entry, controlling);
      trim();
      box.hidden = shown.size === 0;
      return true;
    },
    setControlling(yes) {
      if (yes === controlling) return;
      controlling = yes;
      for (const e of shown.values()) if (e.dialog.state === "open") draw(e, controlling);
    },
    /** The controller went: what was open can no longer be answered here. */
    gone() {
      for (const e of shown.values()) {
        if (e.dialog.state !== "open") continue;
        // Provisional: a controller that comes back and pushes it open again reopens it.
        e.provisional = true;
        e.dialog = {
          ...e.dialog,
          state: "closed",
          answeredBy: null,
          reason: "the controller went away",
        };
        draw(e, controlling);
      }
    },
    /** A new stream: nothing of the last conversation stays. */
    reset() {
      shown.clear();
      box.replaceChildren();
      box.hidden = true;
    },
    /** The dialogs open now (their ids), for a test or a count. */
    open: () =>
      [...shown.values()].filter((e) => e.dialog.state === "open").map((e) => e.dialog.id),
  };
}
