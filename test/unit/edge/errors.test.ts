import { describe, expect, test } from "bun:test";
import {
  classify,
  describeError,
  STATUS_BY_CODE,
  toErrorResponse,
} from "../../../src/edge/errors.ts";
import { RouterError } from "../../../src/core/errors.ts";

describe("errors", () => {
  test("router error codes map to the statuses the API promises", () => {
    expect(STATUS_BY_CODE.invalid_request).toBe(400);
    expect(STATUS_BY_CODE.payload_too_large).toBe(413);
    expect(STATUS_BY_CODE.unauthorized).toBe(401);
    expect(STATUS_BY_CODE.no_endpoints).toBe(503);
    expect(STATUS_BY_CODE.upstream_failed).toBe(502);
    expect(STATUS_BY_CODE.duplicate_request).toBe(409);
    expect(STATUS_BY_CODE.worker_not_found).toBe(404);
  });

  test("the body has OpenAI's shape and names the field", async () => {
    const r = toErrorResponse(
      new RouterError("invalid_request", "prompt: must not be empty", "prompt"),
    );
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({
      error: {
        message: "prompt: must not be empty",
        type: "invalid_request_error",
        code: "invalid_request",
        param: "prompt",
      },
    });
  });

  test("anything else is a 500 whose message stays in the log (it may name an engine's URL)", () => {
    const c = classify(new Error("connect ECONNREFUSED http://10.0.0.5:8000\nstack line"));
    expect(c).toEqual({
      status: 500,
      code: "internal",
      message: "internal error (the router's log has the details)",
    });
  });

  test("describeError never gives an empty line (Bun's DOMException has an empty stack)", () => {
    const e = new DOMException("The connection was closed.", "AbortError");
    Object.defineProperty(e, "stack", { value: "" });
    expect(describeError(e)).toBe("AbortError: The connection was closed.");
    expect(describeError("plain")).toBe("plain");
  });
});
