// What a read worker accepts from the board's thread: a request's fields by type, each checked
// by hand (read-messages.ts), so a malformed message is dropped, not read.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { isToWorker } from "../../src/board/read-messages.ts";

const request = (fields: Record<string, unknown>) => ({ type: "request", id: 1, request: fields });

describe("a request to a read worker", () => {
  it("is accepted with a method and a target, and a host and an If-None-Match each a string or absent", () => {
    assert.equal(isToWorker(request({ method: "GET", target: "/" })), true);
    assert.equal(isToWorker(request({ method: "GET", target: "/", host: "127.0.0.1:1" })), true);
    assert.equal(
      isToWorker(request({ method: "GET", target: "/console.js", ifNoneMatch: '"abc"' })),
      true,
    );
    assert.equal(isToWorker(request({ method: "GET", target: "/", ifNoneMatch: undefined })), true);
  });

  it("is refused when a field has another type", () => {
    assert.equal(isToWorker(request({ method: "GET" })), false);
    assert.equal(isToWorker(request({ method: 1, target: "/" })), false);
    assert.equal(isToWorker(request({ method: "GET", target: "/", host: 7 })), false);
    assert.equal(isToWorker(request({ method: "GET", target: "/", ifNoneMatch: ['"a"'] })), false);
    assert.equal(
      isToWorker({ type: "request", id: "1", request: { method: "GET", target: "/" } }),
      false,
    );
  });
});
