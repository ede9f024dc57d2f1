// The live run of a controlled conversation (issue 15): who controls, the text streaming in,
// tool calls running, receipts that settled other than `completed`, dialogs; and the steering
// controls (composer, Take control, Release, Interrupt, Force stop with a confirming dialog).
// Messages arrive on the live SSE stream (console.js passes them here); actions are POSTs to
// the control route, answered by the session's own controller connection. Every refusal is
// shown in plain words, its code after them (controls.js). Text from the wire is inserted as
// text only, with controls made visible by the history's own rule (text.js). The streaming
// reply shows at the end of the history, where the finished message will land; the panel under
// the history shows only the controls that apply now, and says why the others are not there.
import { postControl as steer } from "./api.js";
import { renderBudgetMeter } from "./budget-meter.js";
import { refusalNodes } from "./controls.js";
import { createApprovals } from "./live-approval.js";
import { createBudgetDialogs } from "./live-budget.js";
import { actLine } from "./present.js";
import { appendText, textEl } from "./text.js";
import { TranscriptState } from "./transcript.js";

/**
 * The line one state-machine item shows in the live view, or null when it shows none: a
 * finished message (`part`) reaches the history through the follow, so it is not repeated.
 * `multiLine` lines keep their line breaks; the others are one-line fields. Pure, so a test
 * can fold the same events in Node and compare with the page.
 */
export function itemLine(item) {
  switch (item.kind) {
    case "streaming":
      return { className: "streaming", text: item.text, multiLine: true };
    case "tool":
      return item.state === "running"
        ? { className: "tool running", text: `Running ${item.toolName || "tool"}` }
        : {
            className: "tool ended",
            text: `${item.toolName || "tool"} ${item.isError ? "failed" : "ended"}`,
          };
    case "receipt":
      return {
        className: "receipt",
        text: `Prompt settled: ${item.reason}${item.detail === null ? "" : ` (${item.detail})`}`,
      };
    case "notice":
      return { className: "notice", text: `${item.method}: ${item.text}` };
    case "act":
      return { className: "act", text: actLine(item) };
    case "event":
      return { className: "event", text: `[event ${item.eventKind}]` };
    case "seam":
      return { className: "seam", text: `Events were missed: ${item.detail}` };
    default:
      return null;
  }
}

/** A live line as the page shows it: its text made visible, a one-line field unless multiLine. */
function lineEl(line) {
  return textEl("div", line.className, line.text, line.multiLine !== true);
}

const $ = (id) => document.getElementById(id);

/**
 * Which steering controls apply now, and what the panel says about those that do not: `holder`
 * is the connection that controls (null: nobody), `mine` this login's connection (null until
 * an answer names it), `running` whether a run is in progress, `admission` the controller's
 * ("open", or "fenced" while a stop runs or the engine's state is uncertain). Pure, for a test
 * to table.
 */
export function controlsFor({ holder, mine, running, admission = "open" }) {
  const controlling = holder !== null && holder === mine;
  // Force stop: the controller's, or anyone's while nobody controls (an orphaned run).
  const mayStop = controlling || holder === null;
  const shown = {
    takeover: !controlling,
    release: controlling,
    interrupt: controlling && running,
    forceStop: mayStop && running,
  };
  let why;
  if (!controlling) {
    why =
      holder === null
        ? "Take control to send messages, interrupt or stop the run."
        : "Take control to send from this page; the other client then only watches.";
    if (shown.forceStop) why += " Force stop kills the engine of this run, which nobody controls.";
  } else if (running) {
    why = "Interrupt stops the reply; Force stop kills the engine if it does not stop.";
  } else if (admission !== "open") {
    // The run's end can arrive before its stop has finished (Pi answers the abort after the
    // run settles): a message sent now is refused `fenced`, so the line says to wait.
    why =
      "The controller is not taking messages now: a stop is finishing, or the engine's state " +
      "is uncertain. This line changes when it takes them again.";
  } else {
    why = "Send a message to start a run. Interrupt and Force stop show while one runs.";
  }
  return { ...shown, why };
}

/**
 * The live run's view. `onSent()` hears that a message this page sent was admitted: the view
 * goes to the end and follows it, so the message and its reply come into view.
 */
export function createLiveRun({ onSent = () => {} } = {}) {
  const ui = {
    root: $("live-run"),
    who: $("live-who"),
    why: $("live-why"),
    activity: $("live-activity"),
    refusal: $("live-refusal"),
    takeover: $("live-takeover"),
    release: $("live-release"),
    interrupt: $("live-interrupt"),
    forceStop: $("live-force-stop"),
    composer: $("live-composer"),
    message: $("live-message"),
    confirm: $("live-confirm-stop"),
    confirmYes: $("live-confirm-yes"),
    confirmNo: $("live-confirm-no"),
    approvals: $("live-approvals"),
    budgetDialogs: $("live-budget-dialogs"),
    budget: $("live-budget"),
  };
  let conversation = null;
  /** This login's controller connection, learned from the first answer; null before. */
  let mine = null;
  let state = null;
  /** Connection → the person its acts named (act events): who controls, in words. */
  const actors = new Map();
  /** The stream said the controller went (or could not be reached). */
  let gone = false;

  function showRefusal(refusal) {
    ui.refusal.hidden = false;
    ui.refusal.replaceChildren(...refusalNodes(refusal));
  }

  function clearRefusal() {
    ui.refusal.hidden = true;
    ui.refusal.replaceChildren();
  }

  /**
   * A run is in progress: the stream said it started and has not settled, or (a page opened
   * mid-run, before any run-started) a reply streams or a tool runs now.
   */
  function isRunning() {
    if (transcript.running) return true;
    return transcript
      .items()
      .some((i) => i.kind === "streaming" || (i.kind === "tool" && i.state === "running"));
  }

  function renderWho() {
    if (gone) return;
    const holder = state?.controllerConnection ?? null;
    const running = isRunning();
    let who;
    if (holder === null) who = "Nobody controls this run.";
    else if (holder === mine) who = "You control this run.";
    else if (actors.has(holder)) who = `${actors.get(holder)} controls this run.`;
    // A page opened after the takeover saw no act: the state names the person.
    else if (typeof state?.controllerActor === "string") {
      who = `${state.controllerActor} controls this run.`;
    } else who = "Another client controls this run.";
    // A person's name comes from the wire: made visible by the history's own rule.
    const said = `${who}${running ? " A run is in progress." : ""}`;
    if (ui.who.dataset.said !== said) {
      ui.who.dataset.said = said;
      ui.who.replaceChildren();
      appendText(ui.who, said, true);
    }
    const c = controlsFor({ holder, mine, running, admission: state?.admission ?? "open" });
    approvals.setControlling(holder !== null && holder === mine);
    budgetDialogs.setControlling(holder !== null && holder === mine);
    // A control that does not apply now is not shown; the line under them says why.
    const had = document.activeElement;
    ui.takeover.hidden = !c.takeover;
    ui.release.hidden = !c.release;
    ui.interrupt.hidden = !c.interrupt;
    ui.forceStop.hidden = !c.forceStop;
    if (ui.why.textContent !== c.why) ui.why.textContent = c.why;
    // The button just pressed may have gone (Take control, once in control): focus moves on to
    // the message box, not to the page's start.
    if (had instanceof HTMLButtonElement && had.hidden && ui.root.contains(had)) {
      ui.message.focus({ preventScroll: true });
    }
  }

  async function act(body) {
    if (conversation === null) return null;
    const answer = await steer(conversation, body);
    if (typeof answer.connection === "string") mine = answer.connection;
    if (answer.ok) clearRefusal();
    else showRefusal(answer.refusal ?? { code: "bad-response", message: "No refusal given." });
    renderWho();
    return answer;
  }

  async function send() {
    const text = ui.message.value;
    if (text.trim() === "") return;
    const answer = await act({ op: "prompt", text });
    // The text stays when refused, so nothing typed is lost.
    if (answer?.ok) {
      ui.message.value = "";
      onSent();
    }
  }

  // Approvals: Allow and Deny answer through the same route, on this login's connection.
  const approvals = createApprovals({
    box: ui.approvals,
    // Its refusal shows in the approval's own box, not the panel's.
    answer: async (dialog, decision, message) => {
      if (conversation === null) return null;
      const body = { op: "answer", dialog, decision };
      const answer = await steer(conversation, message === undefined ? body : { ...body, message });
      if (typeof answer.connection === "string") mine = answer.connection;
      renderWho();
      return answer;
    },
  });

  // The budget dialog: Raise (to a typed amount) and Stop, through the same route.
  const budgetDialogs = createBudgetDialogs({
    box: ui.budgetDialogs,
    answer: async (body) => {
      if (conversation === null) return null;
      const answer = await steer(conversation, body);
      if (typeof answer.connection === "string") mine = answer.connection;
      renderWho();
      return answer;
    },
  });

  ui.composer.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void send();
  });
  ui.message.addEventListener("keydown", (ev) => {
    // Enter sends; Shift+Enter is a newline (the textarea's own behaviour).
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      void send();
    }
  });
  ui.takeover.addEventListener("click", () => void act({ op: "takeover" }));
  ui.release.addEventListener("click", () => void act({ op: "release" }));
  ui.interrupt.addEventListener("click", () => void act({ op: "interrupt" }));
  ui.forceStop.addEventListener("click", () => ui.confirm.showModal());
  ui.confirmNo.addEventListener("click", () => ui.confirm.close());
  ui.confirmYes.addEventListener("click", async () => {
    ui.confirm.close();
    // The controller's two steps: a confirmation, then the stop that uses it.
    const made = await act({ op: "confirm", operation: "force-stop" });
    if (made?.ok && typeof made.confirmation === "string") {
      await act({ op: "force-stop", confirmation: made.confirmation });
    }
  });

  /** The terminal's state machine (transcript-state.ts, bundled): it folds the events. */
  let transcript = new TranscriptState();
  /** The state machine has a seat (an empty page at the stream's first event); none yet. */
  let seated = false;
  let shownVersion = -1;
  /** Markers and dialogs from before the current seat, and dialogs since; shown around it. */
  let before = [];
  let after = [];

  function render() {
    shownVersion = transcript.version;
    const nodes = [];
    for (const item of transcript.items()) {
      const line = itemLine(item);
      if (line !== null) nodes.push(lineEl(line));
    }
    ui.activity.replaceChildren(...before, ...nodes, ...after);
  }

  /**
   * Seats the state machine at `event`: the history reaches the page through the follow, so
   * the live view's page is empty and its seam starts at this event (quiet: no reconcile
   * marker, since the follow, not a page read, covers the cut).
   */
  function seat(event) {
    transcript.beginRead();
    transcript.applyPage(
      { parts: [] },
      {
        replay: "available",
        streamEpoch: event.streamEpoch,
        fromSequence: event.sequence,
        reconcile: true,
        quiet: true,
      },
    );
    seated = true;
  }

  /** Starts over at the next event; this seat's hole markers and dialogs stay, before it. */
  function reseat(marker) {
    for (const item of transcript.items()) {
      if (item.kind === "seam") before.push(lineEl(itemLine(item)));
    }
    before.push(...after);
    after = [];
    if (marker) before.push(marker);
    transcript = new TranscriptState();
    seated = false;
  }

  function onEvent(message) {
    if (
      typeof message?.streamEpoch !== "string" ||
      typeof message.sequence !== "number" ||
      typeof message.event?.kind !== "string"
    ) {
      return;
    }
    if (!seated) seat(message);
    const e = message.event;
    if (e.kind === "act" && typeof e.connection === "string" && typeof e.actor === "string") {
      actors.set(e.connection, e.actor);
    }
    const actions = transcript.applyEvent(message);
    // The terminal answers a hole with a page read; here the follow carries the history, so
    // the live view starts again at this event (the hole's marker stays, before it).
    if (actions.some((a) => a.reason !== "run-settled")) {
      reseat(null);
      seat(message);
      transcript.applyEvent(message);
    }
    if (transcript.version !== shownVersion) render();
    renderWho();
  }

  return {
    /** A stream began for `id`: the panel shows once a controller is reported running. */
    attach(id) {
      conversation = id;
      state = null;
      gone = false;
      transcript = new TranscriptState();
      seated = false;
      before = [];
      after = [];
      approvals.reset();
      budgetDialogs.reset();
      render();
      clearRefusal();
      renderWho();
      ui.root.hidden = true;
    },
    detach() {
      conversation = null;
      ui.root.hidden = true;
    },
    onController(info) {
      gone = !info.running;
      if (!gone) {
        ui.root.hidden = false;
        renderWho();
        return;
      }
      // The controller went (or cannot be reached): the panel stays to say so, in its words,
      // with nothing to press; a draft in the box stays too.
      ui.root.hidden = false;
      ui.who.replaceChildren();
      delete ui.who.dataset.said;
      appendText(ui.who, String(info.message ?? ""), true);
      for (const b of [ui.takeover, ui.release, ui.interrupt, ui.forceStop]) b.hidden = true;
      approvals.gone();
      budgetDialogs.gone();
      ui.why.textContent = "Nothing can be sent until a controller runs this conversation again.";
    },
    onState(message) {
      state = message.state ?? null;
      renderBudgetMeter(ui.budget, state?.budget);
      renderWho();
    },
    onEvent,
    /**
     * A reconnect the controller could not replay: what streamed in the gap is gone from this
     * view (the history still arrives through the follow), so the preview ends at a marker.
     */
    onSeam(message) {
      reseat(
        textEl(
          "div",
          "seam",
          `Reconnected; events in the gap are not shown: ${String(message.message)}`,
          true,
        ),
      );
      render();
    },
    onDialog(message) {
      // An approval has its own box, with Allow and Deny; Pi's disabled dialogs are one line.
      if (approvals.onDialog(message)) return;
      // A budget dialog has its own box too, with the new limit, Raise and Stop.
      if (budgetDialogs.onDialog(message)) return;
      after.push(
        textEl(
          "div",
          "dialog",
          `The engine asks (${String(message.method)}): ${String(message.title)}`,
          true,
        ),
      );
      render();
    },
  };
}
