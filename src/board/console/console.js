// The Console's entry: each view in a module of its own (catalogue.js, conversation.js with
// its head, follow and live run, search.js), the keys, the theme and the URL's place
// (routing.js) wired together here. A new view (an inbox, usage) is one more module that this
// file creates and routes to. Every refusal is shown with its code; conversation text reaches
// the page only through text.js, markup.js and render.js, as text nodes.
import { createCatalogue } from "./catalogue.js";
import { createConversation } from "./conversation.js";
import { bindKeys } from "./keys.js";
import { listenRoutes, readHash } from "./routing.js";
import { createSearch } from "./search.js";
import { startTheme } from "./theme.js";
import { createUsage } from "./usage.js";

const $ = (id) => document.getElementById(id);

const catalogue = createCatalogue({
  selected: () => conversation.current(),
  onChange: () => conversation.refreshHead(),
});
const conversation = createConversation({
  rowOf: (id) => catalogue.rowOf(id),
  onReread: () => void catalogue.load(),
});
const search = createSearch();
const usage = createUsage();
bindKeys({
  actions: conversation.keyActions,
  search: search.input,
  dialog: $("keys"),
  help: $("keys-help"),
  close: $("keys-close"),
});

/** Shows the place the URL names: a conversation (its branch, its entry), or none. */
async function route() {
  const { c, b, e, v } = readHash();
  if (v === "usage") {
    usage.show();
    return;
  }
  usage.hide();
  if (!c) {
    conversation.close();
    return;
  }
  await conversation.go(c, b, e);
  catalogue.render();
}

listenRoutes(route);
startTheme($("theme-toggle"));
await catalogue.load();
await route();
