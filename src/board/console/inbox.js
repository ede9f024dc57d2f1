// The Console's "Needs you" inbox (issue 27 items 2 and 3): the conversations whose agents wait
// for a person, oldest wait first, live over /api/inbox/live (the board's AttentionWatch). The
// count goes into the page's title and onto the tab's icon. While the page is open (a
// background tab too), a browser notification for each new waiting-approval, failed and
// stalled (waiting-input too if opted in); permission is asked only when the person clicks
// "Notify me". By default a notification names the state and the project/seat only, never
// conversation text (it shows on lock screens); "Show details" adds the reason (the tool and
// what it runs). A notification's click opens the conversation.
import { createInboxAnswers } from "./inbox-answer.js";
import { waited } from "./present.js";
import { navigate } from "./routing.js";
import { el, textEl } from "./text.js";

const $ = (id) => document.getElementById(id);

/** The states the inbox lists, in words (attention/states.ts NEEDS_YOU). */
const WORDS = {
  "waiting-approval": "Waiting for approval",
  "waiting-input": "Waiting for input",
  failed: "Failed",
  stalled: "Stalled",
};
/** Notified without opting in: each asks for a person now. */
const NOTIFIED = new Set(["waiting-approval", "failed", "stalled"]);
const PREFS = "inbox-notify";

/**
 * Starts the inbox; `titleOf(id)` names a conversation from the catalogue (or null).
 * Returns `{ count(), render() }`: render again once the catalogue has the titles.
 */
export function createInbox({ titleOf }) {
  const ui = {
    box: $("inbox"),
    title: $("inbox-title"),
    list: $("inbox-items"),
    note: $("inbox-note"),
    notify: $("inbox-notify"),
    inputToo: $("inbox-input-too"),
    details: $("inbox-details"),
  };
  const baseTitle = document.title;
  // A waiting approval's Allow and Deny, inline (inbox-answer.js).
  const answers = createInboxAnswers({ redraw: () => render() });
  let items = [];
  /** Board clock minus ours, so waiting times count from the board's `since`. */
  let skew = 0;
  /** `<conversation> <state> <since>` already notified (or present when the page opened). */
  const told = new Set();
  let first = true;
  const prefs = readPrefs();
  ui.inputToo.checked = prefs.inputToo;
  ui.details.checked = prefs.details;
  ui.inputToo.addEventListener("change", () =>
    savePrefs({ ...prefs, inputToo: ui.inputToo.checked }, prefs),
  );
  ui.details.addEventListener("change", () =>
    savePrefs({ ...prefs, details: ui.details.checked }, prefs),
  );
  showPermission();
  ui.notify.addEventListener("click", async () => {
    // Asked only here, on a click (browsers refuse prompts that no gesture started).
    if (typeof Notification === "undefined") return;
    await Notification.requestPermission();
    showPermission();
  });

  function showPermission() {
    const p = typeof Notification === "undefined" ? "unsupported" : Notification.permission;
    ui.notify.hidden = p !== "default";
    ui.note.textContent =
      p === "denied"
        ? "Notifications are blocked for this board in the browser's site settings."
        : p === "unsupported"
          ? "This browser shows no notifications."
          : "";
  }

  function render() {
    const now = Date.now() + skew;
    ui.box.hidden = false;
    ui.title.textContent =
      items.length === 0 ? "Needs you: nothing" : `Needs you (${items.length})`;
    ui.list.replaceChildren(...items.map((it) => row(it, now)));
    document.title = items.length === 0 ? baseTitle : `(${items.length}) ${baseTitle}`;
    setIcon(items.length);
  }

  function row(it, now) {
    const li = el("li", `inbox-item state-${it.state}`);
    const open = el("button", "inbox-open");
    open.type = "button";
    open.append(el("span", "inbox-state", WORDS[it.state] ?? it.state));
    open.append(el("span", "inbox-wait", waited(now - Date.parse(it.since))));
    open.append(textEl("span", "inbox-name", titleOf(it.conversation) ?? it.conversation, true));
    open.addEventListener("click", () => navigate({ c: it.conversation }));
    li.append(open);
    li.append(textEl("div", "inbox-where", `${lastPart(it.project)}/${it.seat}`, true));
    li.append(textEl("div", "inbox-reason", it.reason, true));
    const answer = answers.controlsFor(it);
    if (answer !== null) li.append(answer);
    return li;
  }

  function notifyNew() {
    const canTell = typeof Notification !== "undefined" && Notification.permission === "granted";
    for (const it of items) {
      const key = `${it.conversation} ${it.state} ${it.since}`;
      if (told.has(key)) continue;
      told.add(key);
      // What was waiting when the page opened is on the page; only what comes after notifies.
      if (first || !canTell) continue;
      if (!NOTIFIED.has(it.state) && !(it.state === "waiting-input" && prefs.inputToo)) continue;
      const where = `${lastPart(it.project)}/${it.seat}`;
      const n = new Notification(`${WORDS[it.state]}: ${where}`, {
        body: prefs.details ? it.reason : "Open the Console to see it.",
        tag: `${it.conversation} ${it.state}`,
      });
      n.addEventListener("click", () => {
        window.focus();
        navigate({ c: it.conversation });
        n.close();
      });
    }
    first = false;
  }

  function onInbox(data) {
    const body = parseBody(data);
    if (body === null) return;
    skew = Date.parse(body.at) - Date.now();
    items = body.inbox;
    render();
    notifyNew();
  }

  const source = new EventSource("/api/inbox/live");
  source.addEventListener("inbox", (e) => onInbox(e.data));
  // Waiting times move on with no event.
  setInterval(() => {
    if (items.length > 0) render();
  }, 15_000);

  return { count: () => items.length, render: () => items.length > 0 && render() };

  function savePrefs(next, into) {
    Object.assign(into, next);
    try {
      localStorage.setItem(PREFS, JSON.stringify(next));
    } catch {
      // No storage: the choice holds for this page only.
    }
  }
}

/** The person's two notification choices (push.js reads them for the push subscription too). */
export function readPrefs() {
  try {
    const v = JSON.parse(localStorage.getItem(PREFS) ?? "{}");
    return { inputToo: v?.inputToo === true, details: v?.details === true };
  } catch {
    return { inputToo: false, details: false };
  }
}

/** The board's inbox body, checked field by field; null when it is another shape. */
export function parseBody(data) {
  let v;
  try {
    v = JSON.parse(data);
  } catch {
    return null;
  }
  if (typeof v !== "object" || v === null || !Array.isArray(v.inbox)) return null;
  if (typeof v.at !== "string" || Number.isNaN(Date.parse(v.at))) return null;
  const inbox = [];
  for (const it of v.inbox) {
    if (typeof it !== "object" || it === null) return null;
    const { conversation, project, seat, state, since, reason } = it;
    const strings = [conversation, project, seat, state, since, reason];
    if (!strings.every((s) => typeof s === "string")) return null;
    if (!(state in WORDS) || Number.isNaN(Date.parse(since))) return null;
    // A waiting approval names its dialog, which the inline Allow and Deny answer.
    const dialog = typeof it.dialog === "string" && /^[A-Za-z0-9._-]{1,200}$/.test(it.dialog);
    inbox.push({
      conversation,
      project,
      seat,
      state,
      since,
      reason,
      ...(dialog ? { dialog: it.dialog } : {}),
      ...(dialog && it.dialogMethod === "budget" ? { budget: true } : {}),
    });
  }
  return { at: v.at, inbox };
}

function lastPart(path) {
  return path.split("/").filter(Boolean).at(-1) ?? path;
}

/** The tab's icon: a plain dot, or a red badge with the count (drawn, so no file is fetched). */
function setIcon(count) {
  const link = document.querySelector('link[rel="icon"]');
  if (link === null) return;
  const c = document.createElement("canvas");
  c.width = 32;
  c.height = 32;
  const g = c.getContext("2d");
  if (g === null) return;
  g.fillStyle = count > 0 ? "#c62828" : "#607d8b";
  g.beginPath();
  g.arc(16, 16, 15, 0, Math.PI * 2);
  g.fill();
  if (count > 0) {
    g.fillStyle = "#fff";
    g.font = "bold 20px sans-serif";
    g.textAlign = "center";
    g.textBaseline = "middle";
    g.fillText(count > 9 ? "9+" : String(count), 16, 17);
  }
  link.href = c.toDataURL("image/png");
}
