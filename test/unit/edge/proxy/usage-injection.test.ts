import { describe, expect, test } from "bun:test";
import {
  prepareBody,
  tappedReader,
  UsageTap,
  usageOfTail,
} from "../../../../src/edge/proxy/usage-injection.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const json = (b: Uint8Array) => JSON.parse(dec.decode(b)) as Record<string, unknown>;

const HEAD =
  'data: {"id":"cmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[';
const EVENTS = [
  `${HEAD}{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}\n\n`,
  `${HEAD}{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":"length"}]}\n\n`,
];
const USAGE = `${HEAD}],"usage":{"prompt_tokens":40,"completion_tokens":1,"total_tokens":41,"prompt_tokens_details":{"cached_tokens":32}}}\n\n`;
const DONE = "data: [DONE]\n\n";
const withUsage = EVENTS.join("") + USAGE + DONE;
const without = EVENTS.join("") + DONE;

/** A reader over fixed chunks. */
function readerOf(chunks: Uint8Array[]) {
  let i = 0;
  return {
    async read() {
      return i < chunks.length ? { done: false, value: chunks[i++] } : { done: true };
    },
    async cancel() {},
    get drained() {
      return i >= chunks.length;
    },
  };
}

async function drain(
  first: Uint8Array | undefined,
  r: { read(): Promise<{ done: boolean; value?: Uint8Array }> },
): Promise<string> {
  let out = first !== undefined ? dec.decode(first, { stream: true }) : "";
  for (;;) {
    const x = await r.read();
    if (x.done || x.value === undefined) break;
    out += dec.decode(x.value, { stream: true });
  }
  return out;
}

describe("prepareBody", () => {
  test("a stream without stream_options gets include_usage spliced in, the rest byte for byte", () => {
    const body = enc.encode(
      '{"model":"m","stream":true,"messages":[{"role":"user","content":"\\"stream_options\\""}]}',
    );
    const p = prepareBody(body, true);
    expect(p.strip).toBe(true);
    expect(dec.decode(p.body)).toBe(
      '{"stream_options":{"include_usage":true},"model":"m","stream":true,"messages":[{"role":"user","content":"\\"stream_options\\""}]}',
    );
  });
  test("a client that asked keeps its body and its usage chunk", () => {
    const body = enc.encode('{"stream":true,"stream_options":{"include_usage":true}}');
    const p = prepareBody(body, true);
    expect(p).toEqual({ body, strip: false, checked: true });
  });
  test("other stream_options are kept and include_usage added", () => {
    const p = prepareBody(
      enc.encode('{"stream":true,"stream_options":{"include_usage":false}}'),
      true,
    );
    expect(p.strip).toBe(true);
    expect(json(p.body).stream_options).toEqual({ include_usage: true });
  });
  test("continuous_usage_stats without include_usage is left alone (not checked)", () => {
    const body = enc.encode('{"stream":true,"stream_options":{"continuous_usage_stats":true}}');
    expect(prepareBody(body, true)).toEqual({ body, strip: false, checked: false });
  });
  test("a non-streamed body is not touched", () => {
    const body = enc.encode('{"prompt":"x"}');
    expect(prepareBody(body, false)).toEqual({ body, strip: false, checked: true });
  });
});

describe("the usage tap", () => {
  for (const size of [1, 7, 50, 4096]) {
    test(`strip mode: the client's stream is the stream without the usage event, byte for byte (chunks of ${size})`, async () => {
      const bytes = enc.encode(withUsage);
      const chunks: Uint8Array[] = [];
      for (let i = 0; i < bytes.length; i += size) chunks.push(bytes.slice(i, i + size));
      const r = readerOf(chunks.slice(1));
      let usage: unknown;
      const t = tappedReader(chunks[0], r, new UsageTap(true), (u) => (usage = u));
      expect(await drain(t.first, t.reader)).toBe(without);
      expect(usage).toEqual({ promptTokens: 40, cachedTokens: 32, completionTokens: 1 });
    });
  }
  test("observe mode passes everything and reads the usage from the tail", async () => {
    const bytes = enc.encode(withUsage);
    let usage: unknown;
    const t = tappedReader(
      bytes.slice(0, 100),
      readerOf([bytes.slice(100)]),
      new UsageTap(false),
      (u) => (usage = u),
    );
    expect(await drain(t.first, t.reader)).toBe(withUsage);
    expect(usage).toEqual({ promptTokens: 40, cachedTokens: 32, completionTokens: 1 });
  });
  test("a whole answer in the first chunk (drained) ends at once", async () => {
    let usage: unknown;
    const body = enc.encode(
      '{"id":"x","usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}',
    );
    const t = tappedReader(body, readerOf([]), new UsageTap(false), (u) => (usage = u));
    expect(t.reader.drained).toBe(true);
    expect(dec.decode(t.first)).toBe(dec.decode(body));
    expect(usage).toEqual({ promptTokens: 9, cachedTokens: undefined, completionTokens: 2 });
  });
  test("strip mode: one event a chunk, the usage event and [DONE] apart or together, CRLF-free SSE of a chat stream", async () => {
    for (const chunks of [
      [...EVENTS, USAGE, DONE],
      [...EVENTS, USAGE + DONE],
      [EVENTS.join(""), USAGE, DONE],
      [EVENTS.join("") + USAGE.slice(0, 30), USAGE.slice(30) + DONE],
    ]) {
      const bytes = chunks.map((c) => enc.encode(c));
      let usage: unknown;
      const t = tappedReader(
        bytes[0],
        readerOf(bytes.slice(1)),
        new UsageTap(true),
        (u) => (usage = u),
      );
      expect(await drain(t.first, t.reader)).toBe(without);
      expect(usage).toEqual({ promptTokens: 40, cachedTokens: 32, completionTokens: 1 });
    }
  });
  test("strip mode: a stream without a usage event passes unchanged (a content chunk that mentions choices or usage is no usage event)", async () => {
    const tricky = `${HEAD}{"index":0,"delta":{"content":"\\"usage\\": \\"choices\\":[]"},"finish_reason":null}]}\n\n`;
    const bytes = enc.encode(EVENTS.join("") + tricky + DONE);
    let usage: unknown = "unset";
    const t = tappedReader(
      bytes.slice(0, 5),
      readerOf([bytes.slice(5)]),
      new UsageTap(true),
      (u) => (usage = u),
    );
    expect(await drain(t.first, t.reader)).toBe(EVENTS.join("") + tricky + DONE);
    expect(usage).toBeUndefined();
  });
  test("usageOfTail reads the last usage", () => {
    expect(usageOfTail(enc.encode(USAGE + DONE))).toEqual({
      promptTokens: 40,
      cachedTokens: 32,
      completionTokens: 1,
    });
    expect(usageOfTail(enc.encode(DONE))).toBeUndefined();
  });
});
