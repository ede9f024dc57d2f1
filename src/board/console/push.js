// Web Push for the Console (issue 27 item 3; docs/push.md): registers the service worker (so
// the Console is installable), and "Push to this device" subscribes this browser to the
// board's pushes, which reach it with no Console open. Permission is asked only by that click
// (never on load); the subscription is sent to the board with this tab's login key, so a
// person must be logged in; the same button turns it off. The inbox's two choices ("waiting
// for input too", "show details") are the subscription's too, and sent again when changed.
import { fetchJson, isLoggedIn, postLoggedIn } from "./api.js";
import { readPrefs } from "./inbox.js";
import { navigate } from "./routing.js";

const $ = (id) => document.getElementById(id);
const SW_URL = "/sw.js";
/** How long the browser's push service may take to subscribe (Chromium asks FCM, on the network). */
const SUBSCRIBE_MS = 30_000;

export function startPush() {
  const ui = { toggle: $("push-toggle"), note: $("push-note") };
  if (!("serviceWorker" in navigator)) return;
  // The page's CSP requires Trusted Types: this one policy lets exactly the worker's URL be
  // registered, and nothing else.
  const policy = globalThis.trustedTypes?.createPolicy("console-sw", {
    createScriptURL: (url) => {
      if (url !== SW_URL) throw new TypeError(`not the Console's service worker: ${url}`);
      return url;
    },
  });
  const registered = navigator.serviceWorker
    .register(policy ? policy.createScriptURL(SW_URL) : SW_URL, { scope: "/" })
    .catch((e) => {
      say(`The service worker did not start (${e.message}): pushes cannot reach this browser.`);
      return null;
    });
  // A notification's click in a Console already open: the worker asks it to move.
  navigator.serviceWorker.addEventListener("message", (e) => {
    const { type, conversation } = e.data ?? {};
    if (type !== "open-conversation") return;
    navigate(typeof conversation === "string" ? { c: conversation } : {});
  });
  if (ui.toggle === null || !("PushManager" in window) || typeof Notification === "undefined") {
    return;
  }
  let busy = false;
  const show = async () => {
    const reg = await registered;
    const sub = reg === null ? null : await reg.pushManager.getSubscription();
    ui.toggle.hidden = reg === null;
    ui.toggle.setAttribute("aria-pressed", String(sub !== null));
    ui.toggle.textContent = sub === null ? "Push to this device" : "Push is on: turn off";
    return sub;
  };
  void show();
  ui.toggle.addEventListener("click", async () => {
    if (busy) return;
    busy = true;
    try {
      const reg = await registered;
      if (reg === null) return;
      const current = await reg.pushManager.getSubscription();
      if (current !== null) await turnOff(current);
      else await turnOn(reg);
    } catch (e) {
      say(`Push could not be changed: ${e.message}`);
    } finally {
      busy = false;
      await show();
    }
  });
  for (const id of ["inbox-input-too", "inbox-details"]) {
    // The inbox saves the choice first (its listener was added before this one).
    $(id)?.addEventListener("change", async () => {
      const reg = await registered;
      const sub = await reg?.pushManager.getSubscription();
      if (sub) await send(sub);
    });
  }

  async function turnOn(reg) {
    if (!isLoggedIn()) {
      say("Log in first (open the board's login link): pushes are sent to logged-in people only.");
      return;
    }
    const key = await fetchJson("/api/push/key");
    if (!key.ok) return say(key.refusal.message);
    // Asked only here, on the click.
    if ((await Notification.requestPermission()) !== "granted") {
      return say("Notifications are not allowed for this board: allow them in the site settings.");
    }
    say("Asking this browser's push service for a subscription…");
    const sub = await withDeadline(
      reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key.publicKey }),
      SUBSCRIBE_MS,
    );
    if (sub === null) {
      return say(
        `This browser's push service did not answer within ${SUBSCRIBE_MS / 1000} s (is this device offline?): try again later. Notifications while the Console is open still work.`,
      );
    }
    if (await send(sub)) say("Pushes come to this device now, with no Console open.");
  }

  async function turnOff(sub) {
    const { endpoint } = sub;
    await sub.unsubscribe();
    const answer = await postLoggedIn("/api/push/unsubscribe", { endpoint });
    say(
      answer.ok
        ? "Push is off for this device."
        : `Push is off in this browser; the board said: ${answer.refusal.message}`,
    );
  }

  /** Sends the subscription and the choices; a refusal undoes it in the browser. */
  async function send(sub) {
    const prefs = readPrefs();
    const answer = await postLoggedIn("/api/push/subscribe", {
      subscription: sub.toJSON(),
      details: prefs.details,
      waitingInput: prefs.inputToo,
    });
    if (answer.ok) return true;
    await sub.unsubscribe();
    say(answer.refusal.message);
    return false;
  }

  function say(text) {
    if (ui.note) ui.note.textContent = text;
  }
}

/** `p`'s value, or null when it has not settled within `ms`. */
function withDeadline(p, ms) {
  let timer;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve(null), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
