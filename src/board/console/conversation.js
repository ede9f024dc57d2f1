// One open conversation: its branch read page by page ("Load more", a deep link's entry found
// within REVEAL_MAX_PAGES pages, "Jump to the end" reading every page), then followed; a refusal
// shown with its code and, when the reader says so, a way to read again. Moving through it by
// message and by branch (the keys' actions) and where focus goes after a read.
import { fetchPage } from "./api.js";
import { copyButton, refusalBox } from "./controls.js";
import { createConversationHead } from "./conversation-head.js";
import { createFollow } from "./follow.js";
import { createLiveRun } from "./live-run.js";
import { createHistory } from "./render.js";
import { navigate } from "./routing.js";

/** Pages read at most while looking for a deep-linked entry. */
const REVEAL_MAX_PAGES = 50;

const $ = (id) => document.getElementById(id);

/**
 * The conversation view. `rowOf(id)` is the catalogue's row for the head; `onReread()` hears
 * that a refused conversation is read again from the start (the catalogue is read again too).
 * Returns `{ go(c, b, e), close(), current(), refreshHead(), keyActions }`.
 */
export function createConversation({ rowOf, onReread }) {
  const ui = {
    empty: $("conv-empty"),
    conv: $("conv"),
    refusal: $("conv-refusal"),
    scroller: $("history"),
    parts: $("parts"),
    loadMore: $("load-more"),
    resume: $("resume"),
    jumpEnd: $("jump-end"),
  };
  let conv = null;
  let generation = 0;
  /** Set by [ and ]: the branch they open gets focus on its first own message once it shows. */
  let focusBranchOnOpen = false;

  const timeline = createHistory(
    ui.parts,
    (entry) => {
      if (conv) navigate({ c: conv.id, b: conv.branch, e: entry });
    },
    copyButton,
  );
  const head = createConversationHead({ rowOf, totals: () => timeline.totals() });
  const follow = createFollow({
    current: () => conv,
    generation: () => generation,
    takeResult,
    appendPage(result) {
      timeline.append(result.page.parts);
      head.showView(conv, result.view);
      // The usage total grows with each reply that arrives, not only with pages read by hand.
      head.showTotals();
    },
    liveRun: createLiveRun({ onSent: () => follow.stickToEnd() }),
  });

  function showRefusal(refusal) {
    ui.refusal.replaceChildren(refusalBox(refusal, () => reread(refusal)));
    ui.refusal.hidden = false;
  }

  function reread(refusal) {
    if (!conv) return;
    onReread();
    const branch = refusal.code === "unknown-branch" ? undefined : conv.branch;
    void open(conv.id, branch, undefined);
  }

  /** Takes a read result's page into the view; false when it was a refusal. */
  function takeResult(result) {
    if (!result.ok) {
      conv.next = null;
      conv.follow = null;
      conv.refused = result.refusal;
      showRefusal(result.refusal);
      head.showExports(conv);
      follow.updateFoot();
      return false;
    }
    conv.next = result.page.nextCursor;
    conv.follow = result.follow ? result.follow.id : null;
    timeline.append(result.page.parts);
    head.showView(conv, result.view);
    head.showTotals();
    head.showExports(conv);
    follow.updateFoot();
    return true;
  }

  async function open(id, branch, entry) {
    const gen = ++generation;
    // Taken now: a refused or superseded open must not leave it set for a later one.
    const focusStart = focusBranchOnOpen;
    focusBranchOnOpen = false;
    follow.stop(conv);
    conv = { id, branch: branch ?? null, next: null, follow: null, paused: false, refused: null };
    ui.empty.hidden = true;
    ui.conv.hidden = false;
    ui.refusal.hidden = true;
    ui.refusal.replaceChildren();
    head.clear();
    timeline.clear();
    follow.markScroll();
    head.show(conv);
    follow.say("Reading…");
    const result = await fetchPage(id, branch, undefined);
    if (gen !== generation) return;
    if (result.ok) conv.branch = result.page.branch;
    if (!takeResult(result)) return;
    if (entry) await revealEntry(entry, gen);
    else {
      // A conversation a controller runs opens at its end, where its run goes on: every page
      // is read (as Jump to the end reads them), so the follow, and the live run with it, start.
      if (rowOf(id)?.live === true) await readRest(gen);
      follow.scrollToBottom();
    }
    if (gen !== generation) return;
    if (focusStart) focusBranchStart(result.view);
    follow.schedule();
  }

  /** Reads the next page; one read at a time, so a cursor is never used twice. */
  async function loadMore(gen) {
    const c = conv;
    if (!c?.next || c.loading) return false;
    c.loading = true;
    follow.updateFoot();
    const result = await fetchPage(c.id, c.branch, c.next);
    c.loading = false;
    if (gen !== generation) return false;
    const ok = takeResult(result);
    follow.schedule();
    return ok;
  }

  /** Reads every page left, one after another; stops at a refusal or a newer open. */
  async function readRest(gen) {
    while (conv?.next && gen === generation) {
      if (!(await loadMore(gen))) break;
    }
  }

  async function revealEntry(entry, gen) {
    let target = timeline.elementOf(entry);
    for (let i = 0; !target && conv.next && i < REVEAL_MAX_PAGES; i++) {
      if (!(await loadMore(gen)) || gen !== generation) return;
      target = timeline.elementOf(entry);
    }
    for (const old of ui.parts.querySelectorAll(".target")) old.classList.remove("target");
    if (!target) {
      follow.say(`Entry ${entry} is not on this branch.`);
      return;
    }
    target.classList.add("target");
    target.scrollIntoView({ block: "start" });
    follow.markScroll();
    if (!follow.isNearBottom()) follow.pause();
  }

  /**
   * Reads every remaining page, then shows the end and follows it; the last message takes focus
   * (as g gives it the first), so j/k go on from the end, not from wherever focus was.
   */
  async function jumpToEnd() {
    if (!conv) return;
    const gen = generation;
    await readRest(gen);
    if (gen !== generation || !conv || conv.refused) return;
    if (conv.paused) follow.resume();
    else follow.scrollToBottom();
    follow.updateFoot();
    const articles = timeline.articles();
    if (articles.length > 0 && focusIsFree()) setCurrent(articles[articles.length - 1]);
  }

  /**
   * Whether focus may be moved after a read finishes: it is nowhere (its message was replaced,
   * or its button hid) or on a message or the floating buttons; not if the person went on to
   * the search box or another control while the pages were read.
   */
  function focusIsFree() {
    const a = document.activeElement;
    return !a || a === document.body || ui.parts.contains(a) || a === ui.jumpEnd || a === ui.resume;
  }

  /** Marks `article` as the current message and focuses it without moving the view. */
  function setCurrent(article) {
    for (const a of timeline.articles()) a.classList.remove("current");
    article.classList.add("current");
    article.focus({ preventScroll: true });
  }

  /**
   * After [ or ]: focus the branch's own first message, the one after the entry it forks at
   * (what differs from the branch before), shown in the view; a root branch, or one whose fork
   * is not on the pages read, gets its first message.
   */
  function focusBranchStart(view) {
    const articles = timeline.articles();
    if (articles.length === 0 || !focusIsFree()) return;
    const fork = view.branches.find((b) => b.name === conv?.branch)?.forksFrom?.entry;
    const at = fork ? articles.indexOf(timeline.elementOf(fork)) : -1;
    const target = at >= 0 && at + 1 < articles.length ? articles[at + 1] : articles[0];
    setCurrent(target);
    target.scrollIntoView({ block: "nearest" });
  }

  /** Moves the current part by `step` (j/k) and shows it; the first press picks the nearest. */
  function stepPart(step) {
    const articles = timeline.articles();
    if (articles.length === 0) return;
    let at = articles.findIndex((a) => a.classList.contains("current"));
    if (at < 0) {
      const top = ui.scroller.getBoundingClientRect().top;
      at = articles.findIndex((a) => a.getBoundingClientRect().bottom > top + 4);
      if (at < 0) at = articles.length - 1;
      at -= step;
    }
    const next = Math.min(articles.length - 1, Math.max(0, at + step));
    const target = articles[next];
    setCurrent(target);
    target.scrollIntoView({ block: "nearest" });
  }

  function stepBranch(step) {
    const order = head.branchOrder();
    if (!conv || order.length < 2) return;
    const at = order.indexOf(conv.branch);
    const next = order[(at + step + order.length) % order.length];
    focusBranchOnOpen = true;
    navigate({ c: conv.id, b: next });
  }

  function goToStart() {
    if (!conv) return;
    ui.scroller.scrollTop = 0;
    follow.onScroll();
    const first = timeline.articles()[0];
    if (first) setCurrent(first);
  }

  ui.loadMore.addEventListener("click", () => void loadMore(generation));
  ui.jumpEnd.addEventListener("click", () => void jumpToEnd());

  return {
    /** Shows conversation `c` (branch `b`, entry `e`): opens it unless it is open already. */
    async go(c, b, e) {
      if (!conv || conv.id !== c || (b !== undefined && conv.branch !== b)) {
        await open(c, b, e);
      } else if (e) {
        await revealEntry(e, generation);
      }
    },
    /** No conversation: the view closes, and whatever it was reading or following stops. */
    close() {
      generation++;
      follow.stop(conv);
      conv = null;
      ui.conv.hidden = true;
      ui.empty.hidden = false;
    },
    /** The open conversation's id, or null. */
    current: () => conv?.id ?? null,
    /** The catalogue changed: the head shows the open conversation's row again. */
    refreshHead() {
      if (conv) head.show(conv);
    },
    keyActions: {
      j: () => stepPart(1),
      k: () => stepPart(-1),
      "]": () => stepBranch(1),
      "[": () => stepBranch(-1),
      g: goToStart,
      G: () => void jumpToEnd(),
    },
  };
}
