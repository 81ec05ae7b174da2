/**
 * The proxy's cache-check hook (edge/proxy/cache-check.ts): the usage it takes out of an injected
 * stream reaches the tracker and, as the engine's output count, the settlement; a stream whose
 * client asked for usage itself keeps it, and its count is the router's counter's to read.
 */
import { describe, expect, test } from "bun:test";
import {
  checkedBody,
  watchAnswer,
  type CacheCheck,
} from "../../../../src/edge/proxy/cache-check.ts";
import type { RouteDecision } from "../../../../src/router/index.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const HEAD = 'data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[';
// Two events with output, but the engine counted 5 tokens (a detokenizer that held some back, say).
const EVENTS = [
  `${HEAD}{"index":0,"text":"Hel"}]}\n\n`,
  `${HEAD}{"index":0,"text":"lo!","finish_reason":"length"}]}\n\n`,
];
const USAGE = `${HEAD}],"usage":{"prompt_tokens":32,"completion_tokens":5,"total_tokens":37,"prompt_tokens_details":{"cached_tokens":16}}}\n\n`;
const DONE = "data: [DONE]\n\n";

function readerOf(chunks: string[]) {
  let i = 0;
  return {
    async read() {
      return i < chunks.length ? { done: false, value: enc.encode(chunks[i++]!) } : { done: true };
    },
    async cancel() {},
    get drained() {
      return i >= chunks.length;
    },
  };
}

function run(body: object) {
  const answers: unknown[] = [];
  const engine: number[] = [];
  const check: CacheCheck = {
    blockSize: 16,
    answer: (_w, _r, f) =>
      void answers.push({
        promptTokens: f.promptTokens,
        cachedTokens: f.cachedTokens,
        predictedBlocks: f.predictedBlocks,
      }),
    indexedBlocks: () => 0,
    removalsSeen: () => 0,
  };
  const decision = {
    worker: { workerId: 3n, dpRank: 0 },
    check: { indexBlocks: 1, inFlightBlocks: 0, routedBlocks: 2 },
  } as unknown as RouteDecision;
  const prepared = checkedBody(enc.encode(JSON.stringify(body)), true, false)!;
  const chunks = [...EVENTS, USAGE, DONE];
  const t = watchAnswer(
    check,
    decision,
    32,
    new BigUint64Array(2),
    prepared,
    true,
    enc.encode(chunks[0]!),
    readerOf(chunks.slice(1)),
    (n) => void engine.push(n),
  );
  return { t, answers, engine, prepared };
}

async function drain(
  first: Uint8Array | undefined,
  r: { read(): Promise<{ done: boolean; value?: Uint8Array }> },
): Promise<string> {
  let out = first !== undefined ? dec.decode(first) : "";
  for (let x = await r.read(); !x.done && x.value !== undefined; x = await r.read())
    out += dec.decode(x.value);
  return out;
}

describe("the cache check's tap on the proxy path", () => {
  test("usage the router asked for: out of the client's stream, to the tracker, and its completion_tokens to the settlement", async () => {
    const { t, answers, engine, prepared } = run({ prompt: [1, 2, 3], stream: true });
    expect(prepared.strip).toBe(true);
    expect(await drain(t.first, t.reader)).toBe(EVENTS.join("") + DONE);
    expect(answers).toEqual([{ promptTokens: 32, cachedTokens: 16, predictedBlocks: 1 }]);
    expect(engine).toEqual([5]);
  });

  test("usage the client asked for: left in its stream (the router's counter reads it there), checked all the same", async () => {
    const { t, answers, engine, prepared } = run({
      prompt: [1, 2, 3],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(prepared.strip).toBe(false);
    expect(await drain(t.first, t.reader)).toBe(EVENTS.join("") + USAGE + DONE);
    expect(answers).toEqual([{ promptTokens: 32, cachedTokens: 16, predictedBlocks: 1 }]);
    expect(engine).toEqual([]);
  });
});
