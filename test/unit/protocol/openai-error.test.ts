/**
 * The one OpenAI error body every program here answers: the router's and the transfer
 * agent's (OpenAI's: `code` a string or null) and the simulated engine's (vLLM's: `code` the
 * HTTP status), whole or as the SSE event that ends a started stream.
 */
import { describe, expect, test } from "bun:test";
import {
  errorResponse,
  openAiError,
  openAiErrorEvent,
  openAiErrorType,
  pythonJsonString,
  vllmStreamFailure,
} from "../../../src/protocol/openai-error.ts";

describe("OpenAI error body", () => {
  test("OpenAI's shape: message, type from the status, param and code null unless given", () => {
    expect(openAiError(404, "no such model")).toEqual({
      error: { message: "no such model", type: "not_found_error", param: null, code: null },
    });
    expect(
      openAiError(400, "prompt: is required", { code: "invalid_request", param: "prompt" }),
    ).toEqual({
      error: {
        message: "prompt: is required",
        type: "invalid_request_error",
        param: "prompt",
        code: "invalid_request",
      },
    });
  });

  test("vLLM's shape: code is the HTTP status as an int, type as the engine names it", () => {
    expect(
      openAiError(404, "The model `x` does not exist.", {
        type: "NotFoundError",
        codeIsStatus: true,
        code: "ignored",
      }),
    ).toEqual({
      error: {
        message: "The model `x` does not exist.",
        type: "NotFoundError",
        param: null,
        code: 404,
      },
    });
  });

  test("type follows the status class", () => {
    expect([401, 403, 404, 405, 413, 429, 500, 502, 503, 504].map(openAiErrorType)).toEqual([
      "authentication_error",
      "permission_error",
      "not_found_error",
      "invalid_request_error",
      "invalid_request_error",
      "rate_limit_error",
      "server_error",
      "server_error",
      "service_unavailable",
      "server_error",
    ]);
  });

  test("a response carries the status, JSON content type and the body", async () => {
    const r = errorResponse(503, "draining", "shutting down");
    expect(r.status).toBe(503);
    expect(r.headers.get("content-type")).toBe("application/json");
    expect(await r.json()).toEqual({
      error: {
        message: "shutting down",
        type: "service_unavailable",
        param: null,
        code: "draining",
      },
    });
  });

  test("an SSE error event is one `data:` line holding the same body", () => {
    const text = new TextDecoder().decode(
      openAiErrorEvent(504, "idle", { code: "stream_idle_timeout" }),
    );
    expect(text.startsWith("data: ")).toBe(true);
    expect(text.endsWith("\n\n")).toBe(true);
    expect(JSON.parse(text.slice(6))).toEqual({
      error: { message: "idle", type: "server_error", param: null, code: "stream_idle_timeout" },
    });
  });
});

describe("a relayed stream that fails mid-way ends as vLLM ends one", () => {
  test("vLLM's bytes: the error chunk as Python's json.dumps writes ErrorResponse, then [DONE]", () => {
    const text = new TextDecoder().decode(vllmStreamFailure("the engine failed"));
    // What vLLM @030ea52e yields from `create_streaming_error_response(e)` for an exception
    // that is not a validation error, then its `data: [DONE]`.
    expect(text).toBe(
      'data: {"error": {"message": "the engine failed", "type": "InternalServerError", "param": null, "code": 500}}\n\ndata: [DONE]\n\n',
    );
    const data = JSON.parse(text.split("\n\n")[0]!.slice("data: ".length));
    expect(Object.keys(data.error)).toEqual(["message", "type", "param", "code"]);
  });

  test("the message escaped as Python's json.dumps does (ensure_ascii): quotes, controls, DEL, non-ASCII, astral", () => {
    expect(pythonJsonString('a"b\\c\n\t\u0001')).toBe('"a\\"b\\\\c\\n\\t\\u0001"');
    expect(pythonJsonString("\u007fé€😀")).toBe('"\\u007f\\u00e9\\u20ac\\ud83d\\ude00"');
    expect(pythonJsonString("plain ~ text")).toBe('"plain ~ text"');
  });
});
