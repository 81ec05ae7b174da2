import { describe, expect, test } from "bun:test";
import { RouterError } from "../../../src/core/errors.ts";
import { completionResponse, SseWriter } from "../../../src/mocker/openai.ts";
import { DEFAULT_MAX_TOKENS, parseCompletionRequest } from "../../../src/mocker/requests.ts";
import { tokenizeChat, tokenizeText } from "../../../src/tokens/tokenize.ts";

const meta = { id: "cmpl-1", created: 1700000000, model: 'm"odel' };
const usage = { promptTokens: 10, completionTokens: 2, cachedTokens: 8 };
const dec = new TextDecoder();
const dataOf = (b: Uint8Array) => {
  const s = dec.decode(b);
  expect(s.startsWith("data: ")).toBe(true);
  expect(s.endsWith("\n\n")).toBe(true);
  return JSON.parse(s.slice(6));
};

describe("OpenAI bodies", () => {
  test("completion chunks carry choices[0].text and the last one finish_reason", () => {
    const w = new SseWriter("completions", meta);
    const c = dataOf(w.token('a"\n', 0, false));
    expect(c).toMatchObject({
      id: "cmpl-1",
      object: "text_completion",
      model: 'm"odel',
      choices: [{ index: 0, text: 'a"\n', finish_reason: null }],
    });
    expect(dataOf(w.token("b", 1, true)).choices[0].finish_reason).toBe("length");
  });
  test("chat chunks carry choices[0].delta.content, after a role chunk", () => {
    const w = new SseWriter("chat", meta);
    expect(dataOf(w.role()).choices[0].delta).toEqual({ role: "assistant", content: "" });
    expect(dataOf(w.token("x", 0, false))).toMatchObject({
      object: "chat.completion.chunk",
      choices: [{ delta: { content: "x" } }],
    });
  });
  test("the usage chunk reports cached tokens; the stream ends with [DONE]", () => {
    const w = new SseWriter("completions", meta);
    expect(dataOf(w.usage(usage))).toMatchObject({
      choices: [],
      usage: {
        prompt_tokens: 10,
        completion_tokens: 2,
        total_tokens: 12,
        prompt_tokens_details: { cached_tokens: 8 },
      },
    });
    expect(dec.decode(w.done())).toBe("data: [DONE]\n\n");
  });
  test("an error mid-stream is vLLM's error body: param null, code the status (500) as an int", () => {
    const w = new SseWriter("completions", meta);
    expect(dataOf(w.error("boom", "internal_error"))).toEqual({
      error: { message: "boom", type: "internal_error", param: null, code: 500 },
    });
  });
  test("whole responses have the text or message and usage", () => {
    expect(JSON.parse(completionResponse("completions", meta, "hi", usage))).toMatchObject({
      object: "text_completion",
      choices: [{ text: "hi", finish_reason: "length" }],
      usage: { prompt_tokens_details: { cached_tokens: 8 } },
    });
    expect(JSON.parse(completionResponse("chat", meta, "hi", usage)).choices[0].message).toEqual({
      role: "assistant",
      content: "hi",
    });
  });
});

describe("parseCompletionRequest", () => {
  test("reads prompt, model, stream, max_tokens and the session id", () => {
    const r = parseCompletionRequest("completions", {
      prompt: [1, 2, 3],
      model: "a",
      stream: true,
      max_tokens: 5,
      nvext: { session_control: { session_id: "s" } },
    });
    expect([...r.tokens]).toEqual([1, 2, 3]);
    expect(r).toMatchObject({ model: "a", stream: true, maxTokens: 5, sessionId: "s" });
    const d = parseCompletionRequest("completions", { prompt: "hi" });
    expect(d).toMatchObject({ stream: false, maxTokens: DEFAULT_MAX_TOKENS, model: undefined });
    expect(d.tokens).toEqual(tokenizeText("hi"));
  });
  test("chat uses messages and max_completion_tokens", () => {
    const msgs = [{ role: "user", content: "x" }];
    const r = parseCompletionRequest("chat", { messages: msgs, max_completion_tokens: 3 });
    expect(r.tokens).toEqual(tokenizeChat(msgs));
    expect(r.maxTokens).toBe(3);
  });
  test("bad fields are invalid_request errors naming the field", () => {
    const field = (kind: "chat" | "completions", body: unknown) => {
      try {
        parseCompletionRequest(kind, body);
      } catch (e) {
        if (e instanceof RouterError) return e.field;
        throw e;
      }
      return "no error";
    };
    expect(field("completions", { prompt: "x", max_tokens: 0 })).toBe("max_tokens");
    expect(field("completions", { prompt: "x", stream: "yes" })).toBe("stream");
    expect(field("completions", { prompt: "x", n: 2 })).toBe("n");
    expect(field("completions", { prompt: "x", model: 3 })).toBe("model");
    expect(field("completions", { messages: [] })).toBe("prompt");
    expect(field("chat", { prompt: "x" })).toBe("messages");
    expect(field("completions", { prompt: "x", logprobs: 21 })).toBe("logprobs");
    expect(field("completions", { prompt: "x", logprobs: true })).toBe("logprobs");
    const m = [{ role: "user", content: "x" }];
    expect(field("chat", { messages: m, logprobs: 1 })).toBe("logprobs");
    expect(field("chat", { messages: m, top_logprobs: 2 })).toBe("top_logprobs");
  });
  test("logprobs: completions `logprobs: N`, chat `logprobs: true` with `top_logprobs`", () => {
    expect(parseCompletionRequest("completions", { prompt: "x", logprobs: 0 }).logprobs).toEqual({
      top: 0,
    });
    expect(parseCompletionRequest("completions", { prompt: "x" }).logprobs).toBeUndefined();
    const msgs = [{ role: "user", content: "x" }];
    expect(
      parseCompletionRequest("chat", { messages: msgs, logprobs: true, top_logprobs: 3 }).logprobs,
    ).toEqual({ top: 3 });
    expect(parseCompletionRequest("chat", { messages: msgs, logprobs: false }).logprobs).toBe(
      undefined,
    );
  });
});
