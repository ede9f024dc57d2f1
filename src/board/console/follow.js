// Following an open conversation's end: once the last page is read, the board pushes appends on
// its live stream (GET /api/conversations/:id/live, Server-Sent Events), which also carries the
// controlled run the live area shows; a board that cannot watch is polled instead. Scrolling up
// pauses following, coming back to the end resumes it; the foot under the history says which.
// While following, the view stays at the end whatever changes its height: a page appended, the
// streaming reply growing, the live panel showing or growing under the history (issue 24).
import { fetchPage } from "./api.js";

const FOLLOW_INTERVAL_MS = 1000;
const NEAR_BOTTOM_PX = 48;

const $ = (id) => document.getElementById(id);

/**
 * Following for the conversation view. `current()` is the open conversation (its `follow`
 * cursor, `paused`, `next`, ...) and `generation()` the count of opens, so an answer for an
 * older open is dropped; `takeResult(result)` takes a read result in (false for a refusal),
 * `appendPage(result)` a pushed page; `liveRun` hears the stream's controller events.
 */
export function createFollow({ current, generation, takeResult, appendPage, liveRun }) {
  const ui = {
    scroller: $("history"),
    loadMore: $("load-more"),
    status: $("follow-status"),
    resume: $("resume"),
    jumpEnd: $("jump-end"),
    /** What grows at the end of the history: its parts and the live run's streaming reply. */
    grows: [$("parts"), $("live-activity")],
  };
  let pollTimer = 0;
  let lastScrollTop = 0;

  function schedule() {
    clearTimeout(pollTimer);
    const conv = current();
    if (!conv?.follow || conv.paused || conv.refused) return;
    const gen = generation();
    // The board pushes appends on its live route; a poll is only the fallback for a board that
    // cannot watch (one given a reader without roots answers the route 404).
    if (!conv.noLive) {
      listen(gen);
      return;
    }
    pollTimer = setTimeout(() => void poll(gen), FOLLOW_INTERVAL_MS);
  }

  /** Follows the end over Server-Sent Events: each `page` event is a follow read's result. */
  function listen(gen) {
    const c = current();
    if (c.stream) return;
    const q = new URLSearchParams({ branch: c.branch, cursor: c.follow });
    const stream = new EventSource(`/api/conversations/${encodeURIComponent(c.id)}/live?${q}`);
    c.stream = stream;
    liveRun.attach(c.id);
    const relay = (name, fn) =>
      stream.addEventListener(name, (ev) => {
        if (gen === generation() && c.stream === stream) fn(JSON.parse(ev.data));
      });
    relay("controller", (m) => liveRun.onController(m));
    relay("state", (m) => liveRun.onState(m));
    relay("event", (m) => liveRun.onEvent(m));
    relay("dialog", (m) => liveRun.onDialog(m));
    relay("seam", (m) => liveRun.onSeam(m));
    stream.addEventListener("page", (ev) => {
      if (gen !== generation() || c.stream !== stream) return;
      const result = JSON.parse(ev.data);
      const stick = isNearBottom();
      // The board reads on to the end itself; the event's id is the cursor it will use next.
      c.next = null;
      c.follow = ev.lastEventId;
      appendPage(result);
      updateFoot();
      if (stick && !c.paused) scrollToBottom();
    });
    stream.addEventListener("refusal", (ev) => {
      if (gen !== generation() || c.stream !== stream) return;
      stop(c);
      takeResult(JSON.parse(ev.data));
    });
    stream.addEventListener("error", () => {
      if (gen !== generation() || c.stream !== stream) return;
      // CLOSED: the route answered with a refusal, not a stream. CONNECTING: EventSource
      // reconnects by itself, resuming from the last id.
      if (stream.readyState !== EventSource.CLOSED) return;
      stop(c);
      c.noLive = true;
      schedule();
    });
  }

  /** Closes `c`'s stream, if it has one, and stops any poll. */
  function stop(c) {
    clearTimeout(pollTimer);
    c?.stream?.close();
    if (c) c.stream = null;
  }

  async function poll(gen) {
    const c = current();
    if (gen !== generation() || !c.follow || c.paused || c.loading) return;
    c.loading = true;
    const stick = isNearBottom();
    let ok = true;
    // A follow page can be one of several when much was appended: read on to the new end.
    for (let cursor = c.follow; ok && cursor; cursor = c.next) {
      const result = await fetchPage(c.id, c.branch, cursor);
      if (gen !== generation()) return;
      ok = takeResult(result);
    }
    c.loading = false;
    updateFoot();
    if (!ok) return;
    if (stick && !c.paused) scrollToBottom();
    schedule();
  }

  /** Pauses following; before the last page is read there is nothing to follow yet. */
  function pause() {
    const conv = current();
    if (!conv?.follow || conv.paused) return;
    conv.paused = true;
    stop(conv);
    updateFoot();
  }

  function resume() {
    const conv = current();
    if (!conv) return;
    conv.paused = false;
    scrollToBottom();
    updateFoot();
    if (!conv.follow) return;
    // On a board that pushes, the stream is opened again from the cursor it last handed on:
    // the board may have read from that cursor for the stream that pausing closed (a cursor
    // reads once), and it keeps such a page for the stream that resumes there — a read of the
    // page route with it would be refused cursor-unknown (steer-follow, red under load).
    if (conv.noLive) void poll(generation());
    else schedule();
  }

  function updateFoot() {
    const conv = current();
    ui.loadMore.hidden = !conv?.next;
    ui.loadMore.disabled = Boolean(conv?.loading);
    ui.resume.hidden = !conv?.paused || Boolean(conv?.refused);
    ui.jumpEnd.hidden = !conv || Boolean(conv.refused) || (!conv.next && isNearBottom());
    let status;
    if (!conv) status = "";
    else if (conv.refused)
      status = `Reading stopped (${conv.refused.code}): see the message above.`;
    else if (conv.next) status = "More history: load it to reach the end and follow.";
    else if (conv.paused) status = "Following paused.";
    else if (conv.follow) status = "Following: new parts appear as they are written.";
    else status = "";
    ui.status.textContent = status;
    ui.status.className = conv?.follow && !conv.paused ? "live" : "";
  }

  /** Following and not paused: the person is at the end, and the view keeps them there. */
  function isFollowingEnd() {
    const conv = current();
    return Boolean(conv?.follow && !conv.paused && !conv.refused);
  }

  /**
   * The person sent a message: show the end and follow it (resuming a paused follow), so what
   * they sent and the reply to it are in view.
   */
  function stickToEnd() {
    const conv = current();
    if (!conv || conv.refused) return;
    if (conv.paused) resume();
    else scrollToBottom();
  }

  /** How far the history's end lies below the view, in px (0 at the end). */
  function gapBelow() {
    const s = ui.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight;
  }

  function isNearBottom() {
    return gapBelow() <= NEAR_BOTTOM_PX;
  }

  function scrollToBottom() {
    ui.scroller.scrollTop = ui.scroller.scrollHeight;
    lastScrollTop = ui.scroller.scrollTop;
  }

  /** Scrolling up away from the end pauses following; coming back to the end resumes it. */
  function onScroll() {
    const top = ui.scroller.scrollTop;
    const wentUp = top < lastScrollTop - 2;
    lastScrollTop = top;
    const conv = current();
    if (!conv || conv.refused) return;
    if (wentUp && !isNearBottom()) pause();
    else if (conv.paused && isNearBottom() && !conv.next) resume();
    ui.jumpEnd.hidden = Boolean(conv.refused) || (!conv.next && isNearBottom());
  }

  ui.resume.addEventListener("click", resume);
  ui.scroller.addEventListener("scroll", onScroll, { passive: true });
  // A change of height scrolls nothing by itself (no scroll event): the end slides out of view
  // when the history grows under it or the scroller shrinks (the live panel showing below it).
  // Following, the view goes back to the end; a person who scrolled away has paused, so stays.
  // At the end exactly: within NEAR_BOTTOM_PX (the rule for a person's scroll) a part that grew
  // a line after it was appended stayed 12 px short of the end (steer-follow, red at load).
  const keepAtEnd = new ResizeObserver(() => {
    if (isFollowingEnd() && gapBelow() > 1) scrollToBottom();
  });
  for (const e of [ui.scroller, ...ui.grows]) keepAtEnd.observe(e);

  return {
    schedule,
    stop,
    pause,
    resume,
    updateFoot,
    isNearBottom,
    scrollToBottom,
    stickToEnd,
    onScroll,
    /** The foot's status line, for what the view says while it reads. */
    say: (text) => {
      ui.status.textContent = text;
    },
    /** Takes the history's scroll position as where the person is now (no pause, no resume). */
    markScroll: () => {
      lastScrollTop = ui.scroller.scrollTop;
    },
  };
}
