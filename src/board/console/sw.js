// The Console's service worker (issue 27 item 3; docs/push.md): it makes the Console
// installable and shows the board's Web Push notifications when no Console is open. It
// handles no fetch (every request goes to the board as without it) and loads nothing: its
// CSP (default-src 'none') lets it fetch or import nothing at all. A push's payload is checked
// field by field; a notification holds the label the board made (state and place, no
// conversation text) unless the subscription opted in to details. Its click focuses an open
// Console and opens the conversation there, or opens a new one at it.

/** The board's conversation id shape (api.js ID). */
const ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
const STATES = new Set(["waiting-approval", "waiting-input", "failed", "stalled"]);

self.addEventListener("install", () => {
  // A new version takes over at once: it holds no cache to migrate.
  self.skipWaiting();
});

self.addEventListener("activate", (event) => {
  event.waitUntil(self.clients.claim());
});

self.addEventListener("push", (event) => {
  const p = payloadOf(event.data);
  // A push must show a notification (userVisibleOnly); one we cannot read says so plainly.
  const title = p === null ? "The board needs you" : p.label;
  const body =
    p?.detail === undefined
      ? "Open the Console to see it."
      : p.detail.tool === null
        ? p.detail.input
        : `${p.detail.tool}: ${p.detail.input}`;
  event.waitUntil(
    self.registration.showNotification(title, {
      body,
      tag: p === null ? "board" : `${p.conversation} ${p.state}`,
      data: { conversation: p?.conversation ?? null },
    }),
  );
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const id = event.notification.data?.conversation;
  const conversation = typeof id === "string" && ID.test(id) ? id : null;
  const opening = openConsole(conversation);
  // The browser's own click keeps the worker alive until the window is open; a synthetic
  // event (isTrusted false) cannot be extended, and the work goes on without it.
  if (event.isTrusted) event.waitUntil(opening);
});

async function openConsole(conversation) {
  const at = conversation === null ? "/" : `/#c=${encodeURIComponent(conversation)}`;
  const url = new URL(at, self.location.origin).href;
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  const open = windows.find((w) => new URL(w.url).origin === self.location.origin);
  if (open === undefined) return self.clients.openWindow(url);
  // The page moves itself (push.js): its history and state stay as they are.
  open.postMessage({ type: "open-conversation", conversation });
  // Allowed only during the click's own handling; the page has moved either way.
  await open.focus().catch(() => {});
  return undefined;
}

/** The board's payload (push/payload.ts), or null when it is not one. */
function payloadOf(data) {
  let v;
  try {
    v = data?.json();
  } catch {
    return null;
  }
  if (typeof v !== "object" || v === null || v.v !== 1) return null;
  const { state, conversation, label, detail } = v;
  if (!STATES.has(state) || typeof conversation !== "string" || !ID.test(conversation)) {
    return null;
  }
  if (typeof label !== "string" || label.length > 300) return null;
  if (detail === undefined) return { state, conversation, label };
  if (typeof detail !== "object" || detail === null) return null;
  const { tool, input } = detail;
  if ((tool !== null && typeof tool !== "string") || typeof input !== "string") return null;
  return { state, conversation, label, detail: { tool, input: input.slice(0, 1000) } };
}
