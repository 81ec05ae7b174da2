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
    const text = 'data: {"text":"x"}\r\n\r\n: comment\n\ndata:[DONE]\n\nevent: x\ndata: {"text":"y"}\n\n';
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
