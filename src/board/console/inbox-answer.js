// Allow and Deny in the "Needs you" inbox (issue 27 item 2): a waiting-approval row names its
// approval (`dialog`), and a logged-in page answers it there without opening the conversation.
// The answer is the control route's `answer`, on this login's own connection to that
// conversation's controller (the one its live panel uses). Only the controlling connection may
// answer, so when this login does not control the run the click takes control first, then
// answers: the click is the person's decision about that one approval, by its id, so nothing
// else is approved, and nothing is approved without it. Taking control makes whoever held it an
// observer, as Take control does; the row says so before the click. A connection that
// controlled when the approval opened and lost control since stays refused (`controller`), as
// the controller rules, and the refusal is shown in words.
import { hasLogin, postControl } from "./api.js";
import { refusalNodes } from "./controls.js";
import { navigate } from "./routing.js";
import { el } from "./text.js";

/**
 * Answers `dialog` of `conversation` with `decision`: `answer`, and when refused because this
 * connection does not control, `takeover` then `answer` once more. Resolves to the last answer
 * the board gave. `post` is postControl (a test passes its own).
 */
export async function answerFromInbox(conversation, dialog, decision, post = postControl) {
  const body = { op: "answer", dialog, decision };
  const first = await post(conversation, body);
  if (first.ok || first.refusal?.code !== "controller") return first;
  const took = await post(conversation, { op: "takeover" });
  if (!took.ok && took.refusal?.code !== "already-controller") return took;
  return post(conversation, body);
}

/**
 * The inline answer of inbox rows: `controlsFor(item)` is the row's Allow/Deny part (or null
 * when the row is not an answerable approval, or this page has no login). `redraw()` is called
 * when an answer settles, so the row shows its refusal, or waits for the inbox to drop it.
 */
export function createInboxAnswers({ redraw }) {
  /** dialog id → "sending" | "sent" | a refusal */
  const status = new Map();

  async function send(item, decision) {
    status.set(item.dialog, "sending");
    redraw();
    const reply = await answerFromInbox(item.conversation, item.dialog, decision);
    status.set(
      item.dialog,
      reply.ok ? "sent" : (reply.refusal ?? { code: "bad-response", message: "No refusal given." }),
    );
    redraw();
  }

  function controlsFor(item) {
    if (item.state !== "waiting-approval" || typeof item.dialog !== "string") return null;
    const box = el("div", "inbox-answer");
    if (item.budget === true) {
      // A raise needs a typed amount and the figures: the live panel has both (live-budget.js).
      const go = el("button", "inbox-budget", "Raise or stop in the live panel");
      go.type = "button";
      go.addEventListener("click", () => navigate({ c: item.conversation }));
      box.append(go);
      return box;
    }
    if (!hasLogin()) {
      box.append(el("span", "inbox-answer-note", "Log in with the board's link to answer here."));
      return box;
    }
    const now = status.get(item.dialog);
    if (now === "sent") {
      box.append(el("span", "inbox-answer-note", "Answered; waiting for the agent."));
      return box;
    }
    const allow = el("button", "inbox-allow", "Allow");
    allow.type = "button";
    const deny = el("button", "inbox-deny", "Deny");
    deny.type = "button";
    allow.disabled = deny.disabled = now === "sending";
    allow.setAttribute("aria-label", `Allow: ${item.reason}`.slice(0, 300));
    deny.setAttribute("aria-label", `Deny: ${item.reason}`.slice(0, 300));
    allow.addEventListener("click", () => void send(item, "allow"));
    deny.addEventListener("click", () => void send(item, "deny"));
    box.append(
      allow,
      deny,
      el("span", "inbox-answer-note", "Answering takes control of this run."),
    );
    if (typeof now === "object" && now !== null) {
      const refusal = el("div", "inbox-answer-refusal");
      refusal.setAttribute("role", "alert");
      refusal.append(...refusalNodes(now));
      box.append(refusal);
    }
    return box;
  }

  return { controlsFor };
}
