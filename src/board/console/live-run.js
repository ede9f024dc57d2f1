// The live run of a controlled conversation (issue 15): who controls, the text streaming in,
// tool calls running, receipts that settled other than `completed`, dialogs; and the steering
// controls (composer, Take control, Release, Interrupt, Force stop with a confirming dialog).
// Messages arrive on the live SSE stream (console.js passes them here); actions are POSTs to
// the control route, answered by the session's own controller connection. Every refusal is
// shown in words with its code. Text from the wire is inserted as text only (text.js).
import { el } from "./text.js";

const $ = (id) => document.getElementById(id);

/** Sends one steering call; the answer is the board's JSON, or a local refusal. */
async function steer(conversation, body) {
  let res;
  try {
    res = await fetch(`/api/conversations/${encodeURIComponent(conversation)}/control`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(body),
      cache: "no-store",
    });
  } catch (e) {
    return { ok: false, refusal: { code: "board-unreachable", message: String(e.message) } };
  }
  try {
    const json = await res.json();
    if (typeof json === "object" && json !== null && typeof json.ok === "boolean") return json;
  } catch {
    // Not JSON: said below.
  }
  return {
    ok: false,
    refusal: { code: "bad-response", message: `The board answered ${res.status}.` },
  };
}

export function createLiveRun() {
  const ui = {
    root: $("live-run"),
    who: $("live-who"),
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
  };
  let conversation = null;
  /** This login's controller connection, learned from the first answer; null before. */
  let mine = null;
  let state = null;
  let running = false;
  /** The message streaming now, and tool calls by id. */
  let streaming = null;
  const tools = new Map();

  function showRefusal(refusal) {
    ui.refusal.hidden = false;
    ui.refusal.replaceChildren(
      el("span", "code", refusal.code),
      document.createTextNode(": "),
      el("span", "message", refusal.message ?? ""),
    );
  }

  function clearRefusal() {
    ui.refusal.hidden = true;
    ui.refusal.replaceChildren();
  }

  function renderWho() {
    const holder = state?.controllerConnection ?? null;
    let who;
    if (holder === null) who = "Nobody controls this run.";
    else if (holder === mine) who = "You control this run.";
    else who = "Another client controls this run.";
    ui.who.textContent = `${who}${running ? " A run is in progress." : ""}`;
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
    if (answer?.ok) ui.message.value = "";
  }

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

  function onEvent(message) {
    const e = message.event ?? {};
    switch (e.kind) {
      case "run-started":
        running = true;
        break;
      case "run-ended":
      case "run-settled":
        running = false;
        streaming?.remove();
        streaming = null;
        break;
      case "message-started":
        if (e.role === "assistant") {
          streaming?.remove();
          streaming = el("div", "streaming", "");
          ui.activity.append(streaming);
        }
        break;
      case "text-delta":
        if (streaming && typeof e.delta === "string") streaming.textContent += e.delta;
        break;
      case "message-ended":
        // The finished message reaches the history through the follow; the preview goes.
        streaming?.remove();
        streaming = null;
        break;
      case "tool-started": {
        const row = el("div", "tool running", `Running ${String(e.toolName ?? "tool")}`);
        tools.set(e.toolCallId, row);
        ui.activity.append(row);
        break;
      }
      case "tool-ended":
        tools.get(e.toolCallId)?.remove();
        tools.delete(e.toolCallId);
        break;
      case "receipt": {
        const r = e.receipt ?? {};
        if (r.state === "settled" && typeof r.reason === "string" && r.reason !== "completed") {
          ui.activity.append(el("div", "receipt", `Prompt settled: ${r.reason}`));
        }
        break;
      }
      default:
        break;
    }
    renderWho();
  }

  return {
    /** A stream began for `id`: the panel shows once a controller is reported running. */
    attach(id) {
      conversation = id;
      state = null;
      running = false;
      streaming = null;
      tools.clear();
      ui.activity.replaceChildren();
      clearRefusal();
      ui.root.hidden = true;
    },
    detach() {
      conversation = null;
      ui.root.hidden = true;
    },
    onController(info) {
      ui.root.hidden = !info.running;
      if (!info.running) ui.who.textContent = info.message ?? "";
    },
    onState(message) {
      state = message.state ?? null;
      renderWho();
    },
    onEvent,
    /**
     * A reconnect the controller could not replay: what streamed in the gap is gone from this
     * view (the history still arrives through the follow), so the preview ends at a marker.
     */
    onSeam(message) {
      streaming?.remove();
      streaming = null;
      ui.activity.append(
        el(
          "div",
          "seam",
          `Reconnected; events in the gap are not shown: ${String(message.message)}`,
        ),
      );
    },
    onDialog(message) {
      ui.activity.append(
        el(
          "div",
          "dialog",
          `The engine asks (${String(message.method)}): ${String(message.title)}`,
        ),
      );
    },
  };
}
