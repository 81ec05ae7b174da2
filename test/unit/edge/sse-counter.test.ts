import { describe, expect, test } from "bun:test";
import { SseDataCounter } from "../../../src/edge/proxy/sse-counter.ts";

const enc = (s: string) => new TextEncoder().encode(s);

describe("SseDataCounter", () => {
  test("counts data events and not [DONE]", () => {
    const c = new SseDataCounter();
    expect(c.push(enc('data: {"a":1}\n\ndata: {"a":2}\n\ndata: [DONE]\n\n'))).toBe(2);
    expect(c.events).toBe(2);
  });

  test("lines split across chunks at every byte are counted once", () => {
    const text =
      'data: {"text":"x"}\r\n\r\n: comment\n\ndata:[DONE]\n\nevent: x\ndata: {"text":"y"}\n\n';
    const bytes = enc(text);
    const c = new SseDataCounter();
    for (let i = 0; i < bytes.length; i++) c.push(bytes.subarray(i, i + 1));
    expect(c.events).toBe(2);
  });

  test("a final line without a newline counts at finish", () => {
    const c = new SseDataCounter();
    c.push(enc("data: {}"));
    expect(c.events).toBe(0);
    expect(c.finish()).toBe(1);
    expect(c.events).toBe(1);
  });

  test("non-data lines and a JSON body count nothing", () => {
    const c = new SseDataCounter();
    c.push(enc('{"choices":[{"text":"data: nope"}]}\n'));
    c.push(enc("id: 1\nretry: 10\n\n"));
    expect(c.finish()).toBe(0);
    expect(c.events).toBe(0);
  });

  test("a data line that merely starts with [DONE] is an event", () => {
    const c = new SseDataCounter();
    c.push(enc("data: [DONE] but more\n\n"));
    expect(c.events).toBe(1);
  });
});

/** vLLM-shaped events (vllm/entrypoints/openai/{completion,chat_completion}/serving.py). */
const cmpl = (t: string, extra = "") =>
  `data: {"id":"c","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":${JSON.stringify(t)},"logprobs":null,"finish_reason":null}]${extra}}\n\n`;
const chat = (t: string, extra = "") =>
  `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":${JSON.stringify(t)}},"logprobs":null,"finish_reason":null}]${extra}}\n\n`;
const ROLE =
  'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}\n\n';
const usageChunk = (n: number, object = "text_completion") =>
  `data: {"id":"c","object":"${object}","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":7,"total_tokens":${7 + n},"completion_tokens":${n},"prompt_tokens_details":{"cached_tokens":0}}}\n\n`;
const DONE_LINE = "data: [DONE]\n\n";

function count(text: string, split = 0): SseDataCounter {
  const c = new SseDataCounter();
  const bytes = enc(text);
  if (split === 0) c.push(bytes);
  else for (let i = 0; i < bytes.length; i += split) c.push(bytes.subarray(i, i + split));
  c.finish();
  return c;
}

describe("SseDataCounter: output tokens as the engine counts them", () => {
  const toks = Array.from({ length: 32 }, (_, i) => String.fromCharCode(97 + (i % 26)));

  test("completions, 32 tokens: 32 with or without the usage chunk (not 33)", () => {
    const body = toks.map((t) => cmpl(t)).join("");
    for (const text of [body + DONE_LINE, body + usageChunk(32) + DONE_LINE]) {
      const c = count(text);
      expect(c.tokens).toBe(32);
    }
    expect(count(body + usageChunk(32) + DONE_LINE).events).toBe(33); // the first-token signal still sees every event
  });

  test("chat, 32 tokens: the role chunk and the usage chunk are not tokens (not 34)", () => {
    const body = ROLE + toks.map((t) => chat(t)).join("");
    expect(count(body + DONE_LINE).tokens).toBe(32);
    expect(count(body + usageChunk(32, "chat.completion.chunk") + DONE_LINE).tokens).toBe(32);
  });

  test("the engine's usage wins when it says otherwise (one event may carry several tokens)", () => {
    const c = count(cmpl("abc") + cmpl("de") + usageChunk(5) + DONE_LINE);
    expect(c.contentEvents).toBe(2);
    expect(c.tokens).toBe(5);
  });

  test("continuous_usage_stats: the running usage of every chunk, the last one counting", () => {
    const u = (n: number) =>
      `,"usage":{"prompt_tokens":7,"completion_tokens":${n},"total_tokens":${7 + n}}`;
    const c = count(
      ROLE.replace("]}\n\n", `]${u(0)}}\n\n`) +
        chat("x", u(1)) +
        chat("y", u(2)) +
        usageChunk(2, "chat.completion.chunk") +
        DONE_LINE,
    );
    expect(c.tokens).toBe(2);
  });

  test("split at every byte and every 7 bytes: the same counts", () => {
    const text =
      ROLE +
      toks.map((t) => chat(t)).join("") +
      usageChunk(32, "chat.completion.chunk") +
      DONE_LINE;
    for (const split of [1, 7]) {
      const c = count(text, split);
      expect([c.events, c.contentEvents, c.tokens, c.done]).toEqual([34, 32, 32, true]);
    }
  });

  test("empty chunks, an empty finish chunk, null content and an error event carry no output", () => {
    const finish = 'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n';
    const nullContent = 'data: {"choices":[{"index":0,"delta":{"content":null}}]}\n\n';
    const error = 'data: {"error":{"message":"boom","type":"x","param":null,"code":500}}\n\n';
    const c = count(cmpl("") + chat("") + finish + nullContent + error + cmpl("a"));
    expect(c.events).toBe(6);
    expect(c.tokens).toBe(1);
  });

  test("reasoning and tool calls are output; spaces around the colon are read; an escaped key inside a string is not a key", () => {
    const reasoning = 'data: {"choices": [{"delta": {"reasoning_content" : "hmm"}}]}\n\n';
    const tool =
      'data: {"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]}\n\n';
    const tricky = 'data: {"choices":[{"delta":{"content":""}}],"note":"\\"text\\": \\"x\\""}\n\n';
    const c = count(reasoning + tool + tricky);
    expect(c.tokens).toBe(2);
  });

  test("SGLang's /generate stream: meta_info.completion_tokens is the count", () => {
    const line = (text: string, n: number) =>
      `data: {"text":${JSON.stringify(text)},"meta_info":{"prompt_tokens":4,"completion_tokens":${n}}}\n\n`;
    expect(count(line("a", 1) + line("ab", 2) + line("abc", 3) + DONE_LINE).tokens).toBe(3);
  });

  test("a line longer than the kept limit still counts as one event with output", () => {
    const huge = cmpl("x".repeat(100_000));
    const c = count(huge + cmpl("y"), 4096);
    expect([c.events, c.tokens]).toEqual([2, 2]);
  });
});
