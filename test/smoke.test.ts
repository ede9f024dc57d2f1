import assert from "node:assert/strict";
import { describe, it } from "node:test";

describe("runtime", () => {
  it("runs the suites on Node 24 or newer", () => {
    const major = Number(process.versions.node.split(".")[0]);
    assert.ok(major >= 24, `node ${process.versions.node}`);
  });
});
