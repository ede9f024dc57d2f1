// The Console's entry: each view in a module of its own (catalogue.js, conversation.js with
// its head, follow and live run, search.js), the keys, the theme and the URL's place
// (routing.js) wired together here. A new view (an inbox, usage) is one more module that this
// file creates and routes to. Every refusal is shown with its code; conversation text reaches
// the page only through text.js, markup.js and render.js, as text nodes.
import { createCatalogue } from "./catalogue.js";
import { createConversation } from "./conversation.js";
import { createInbox } from "./inbox.js";
import { bindKeys } from "./keys.js";
import { startPush } from "./push.js";
import { backToList, listenRoutes, readHash } from "./routing.js";
import { createSearch } from "./search.js";
import { startTheme } from "./theme.js";
import { createUsage } from "./usage.js";

const $ = (id) => document.getElementById(id);
/** Where the list and a conversation are two screens (styles/screens.css, the same width). */
const PHONE = window.matchMedia("(max-width: 760px)");

const catalogue = createCatalogue({
  selected: () => conversation.current(),
  onChange: () => {
    conversation.refreshHead();
    inbox.render();
  },
});
const conversation = createConversation({
  rowOf: (id) => catalogue.rowOf(id),
  onReread: () => void catalogue.load(),
});
const search = createSearch();
const usage = createUsage();
const inbox = createInbox({ titleOf: (id) => catalogue.rowOf(id)?.title ?? null });
startPush();
bindKeys({
  actions: conversation.keyActions,
  search: search.input,
  dialog: $("keys"),
  help: $("keys-help"),
  close: $("keys-close"),
});

/**
 * Where the list was when a conversation opened over it (a phone shows one or the other): the
 * page's scroll position, restored with focus on the row of the conversation closed.
 */
let listScroll = 0;

/**
 * Shows the place the URL names: a conversation (its branch, its entry), or the list. On a
 * phone (docs/console.md) the list and the conversation are two screens, `data-view` says
 * which; on a wide screen both show and the attribute changes nothing.
 */
async function route() {
  const { c, b, e, v } = readHash();
  const view = document.body.dataset;
  if (v === "usage") {
    usage.show();
    return;
  }
  usage.hide();
  if (!c) {
    const closed = conversation.current();
    conversation.close();
    catalogue.render();
    if (view.view === "detail") {
      view.view = "list";
      window.scrollTo(0, listScroll);
      if (closed !== null) catalogue.focusRow(closed);
    }
    view.view = "list";
    return;
  }
  if (view.view !== "detail") listScroll = window.scrollY;
  view.view = "detail";
  await conversation.go(c, b, e);
  catalogue.render();
}

// The list's place is the page's to keep (route above), not the browser's: its own restoring
// would scroll to where the conversation's screen was.
history.scrollRestoration = "manual";
listenRoutes(route);
$("back-to-list").addEventListener("click", backToList);
// Searching from a conversation's screen on a phone: the hits show in the list's screen.
$("search-form").addEventListener("submit", () => {
  if (document.body.dataset.view === "detail" && PHONE.matches) backToList();
});
startTheme($("theme-toggle"));
await catalogue.load();
await route();
