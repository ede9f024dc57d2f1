// The login page (issue 22 items 1 and 6), opened by the link `serve` prints (or, behind the
// trusted proxy, opened as /login by a person the proxy authenticated: docs/remote.md). It trades the
// link's token for this tab's login key, once (api.js keeps the key in sessionStorage), then
// replaces itself with the Console. The token leaves the address bar before anything is sent,
// and the page's history entry is replaced, so the tab keeps no URL holding it; the board
// draws a fresh link for the next login and `serve` prints it.
import { logIn } from "./api.js";
import { el } from "./text.js";

const $ = (id) => document.getElementById(id);

async function run() {
  // A page the browser prerenders (from the address bar) waits until it is shown: the token
  // is used once, and only by the person who opened the link.
  if (document.prerendering) {
    await new Promise((resolve) =>
      document.addEventListener("prerenderingchange", resolve, { once: true }),
    );
  }
  const token = new URLSearchParams(location.search).get("token");
  history.replaceState(null, "", "/login");
  // No token: behind the trusted proxy a person logs in as who the proxy says they are; on
  // loopback the board answers that a link is needed (auth.ts says which).
  const answer = await logIn(token ?? "");
  if (answer.ok) {
    location.replace("/");
    return;
  }
  refuse(answer.refusal);
}

function refuse(refusal) {
  $("login-status").textContent = "Not logged in.";
  const box = $("login-refusal");
  box.hidden = false;
  box.replaceChildren(
    el("span", "code", refusal.code),
    document.createTextNode(": "),
    el("span", "message", refusal.message ?? ""),
  );
  $("login-next").hidden = false;
}

void run();
