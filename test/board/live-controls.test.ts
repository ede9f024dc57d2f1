// Which steering controls the Console's live panel shows, and the line under them
// (src/board/console/live-run.js controlsFor): a table, since the rule is pure.
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";

type Controls = {
  takeover: boolean;
  release: boolean;
  interrupt: boolean;
  forceStop: boolean;
  why: string;
};
type Input = { holder: string | null; mine: string | null; running: boolean; admission?: string };
// A plain JS module (no declarations): loaded through a string so tsc types it here.
const path = join(import.meta.dirname, "..", "..", "src", "board", "console", "live-run.js");
const { controlsFor } = (await import(path)) as { controlsFor: (i: Input) => Controls };

const shown = (c: Controls) =>
  (["takeover", "release", "interrupt", "forceStop"] as const).filter((k) => c[k]);

describe("the live panel's controls", () => {
  it("shows what applies now and says why, for each holder and run", () => {
    const rows: [Input, string[], RegExp][] = [
      [{ holder: null, mine: null, running: false }, ["takeover"], /^Take control to send/],
      [{ holder: null, mine: null, running: true }, ["takeover", "forceStop"], /nobody controls/],
      [{ holder: "c-2", mine: "c-1", running: true }, ["takeover"], /the other client then/],
      [{ holder: "c-1", mine: "c-1", running: false }, ["release"], /^Send a message to start/],
      [
        { holder: "c-1", mine: "c-1", running: true },
        ["release", "interrupt", "forceStop"],
        /^Interrupt stops the reply/,
      ],
    ];
    for (const [input, want, why] of rows) {
      const c = controlsFor(input);
      assert.deepEqual(shown(c), want, JSON.stringify(input));
      assert.match(c.why, why, JSON.stringify(input));
    }
  });

  it("says to wait while admission is closed after the run ended, and not to send", () => {
    const fenced = controlsFor({ holder: "c-1", mine: "c-1", running: false, admission: "fenced" });
    assert.deepEqual(shown(fenced), ["release"]);
    assert.match(fenced.why, /^The controller is not taking messages now/);
    assert.doesNotMatch(fenced.why, /^Send a message/);
    const open = controlsFor({ holder: "c-1", mine: "c-1", running: false, admission: "open" });
    assert.match(open.why, /^Send a message to start a run\./);
  });
});
