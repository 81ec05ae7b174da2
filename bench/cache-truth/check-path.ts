/**
 * The cache check's own work per answer, in process (no sockets, no other load): what
 * bench:proxy's router − nocheck difference is made of, stage by stage, so a change to one stage
 * can be judged on a loaded machine where the end-to-end difference drowns in noise. Per answer:
 * the body spliced (prepareBody), a streamed answer read through the usage tap (its usage event
 * taken out) against the same reader without it, and the verdict into the tracker (an agreeing
 * answer, the common case). The answer is the simulated engine's: 16 tokens, then the usage
 * event and [DONE], in one chunk (a zero-time engine) or one event a chunk (a real stream).
 *
 * bun bench/cache-truth/check-path.ts [--answers 200000]
 */
import {
  prepareBody,
  tappedReader,
  UsageTap,
  type TapReader,
} from "../../src/edge/proxy/usage-injection.ts";
import { CacheTruth } from "../../src/fleet/cache-truth/tracker.ts";
import type { WorkerId } from "../../src/core/ids.ts";

const arg = (name: string, d: string) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1]! : d;
};
const ANSWERS = Number(arg("--answers", "200000"));

const enc = new TextEncoder();
const body = enc.encode(
  JSON.stringify({
    prompt: Array.from({ length: 1024 }, (_, i) => 1000 + i),
    max_tokens: 16,
    stream: true,
  }),
);
const head = (i: number) =>
  `data: {"id":"cmpl-8f2c","object":"text_completion","created":1765000000,"model":"switchyard-sim","choices":[{"index":0,"text":" tok${i}","logprobs":null,"finish_reason":${i === 15 ? '"length"' : "null"},"stop_reason":null}]}\n\n`;
const events = Array.from({ length: 16 }, (_, i) => head(i));
const usage =
  'data: {"id":"cmpl-8f2c","object":"text_completion","created":1765000000,"model":"switchyard-sim","choices":[],"usage":{"prompt_tokens":1024,"total_tokens":1040,"completion_tokens":16,"prompt_tokens_details":{"cached_tokens":1008}}}\n\n';
const done = "data: [DONE]\n\n";
const whole = [enc.encode(events.join("") + usage + done)];
const perEvent = [...events, usage, done].map((e) => enc.encode(e));
const plain = [enc.encode(events.join("") + done)];
const plainPerEvent = [...events, done].map((e) => enc.encode(e));

/** A reader over copies of the chunks (a socket's are fresh each time, and the tap may write in them). */
function readerOf(chunks: readonly Uint8Array[]): TapReader {
  let i = 1;
  return {
    read: async () =>
      i < chunks.length ? { done: false, value: chunks[i++]!.slice() } : { done: true },
    cancel: async () => {},
    get drained() {
      return i >= chunks.length;
    },
  };
}

async function drain(first: Uint8Array | undefined, r: TapReader): Promise<number> {
  let n = first?.length ?? 0;
  for (;;) {
    const x = await r.read();
    if (x.done || x.value === undefined) return n;
    n += x.value.length;
  }
}

const truth = new CacheTruth({
  now: () => 0,
  log: { debug() {}, info() {}, warn() {}, error() {} } as never,
});
const W = 42n as WorkerId;
const facts = {
  routerTokens: 1024,
  predictedBlocks: 64,
  inFlightBlocks: 0,
  routedBlocks: 64,
  blockSize: 16,
  promptTokens: 1024,
  cachedTokens: 1008,
};

async function time(name: string, fn: () => unknown | Promise<unknown>): Promise<number> {
  for (let i = 0; i < ANSWERS / 10; i++) await fn();
  const t0 = Bun.nanoseconds();
  for (let i = 0; i < ANSWERS; i++) await fn();
  const ns = (Bun.nanoseconds() - t0) / ANSWERS;
  console.log(`${name.padEnd(58)} ${(ns / 1000).toFixed(2).padStart(6)} µs/answer`);
  return ns;
}

const results: Record<string, number> = {};
for (const [label, chunks, bare] of [
  ["one chunk", whole, plain],
  ["one event a chunk", perEvent, plainPerEvent],
] as const) {
  const off = await time(`read, no check (${label})`, () =>
    drain(bare[0]!.slice(), readerOf(bare)),
  );
  const on = await time(`read through the tap, usage taken out (${label})`, () => {
    const t = tappedReader(chunks[0]!.slice(), readerOf(chunks), new UsageTap(true), () => {});
    return drain(t.first, t.reader);
  });
  results[label] = on - off;
}
const splice = await time("prepareBody (include_usage spliced in)", () => prepareBody(body, true));
const verdict = await time("tracker.answer (an agreeing answer)", () => truth.answer(W, 0, facts));
for (const [label, tap] of Object.entries(results))
  console.log(
    `the check's own work per answer, ${label}: ${((tap + splice + verdict) / 1000).toFixed(2)} µs (tap ${(tap / 1000).toFixed(2)}, splice ${(splice / 1000).toFixed(2)}, verdict ${(verdict / 1000).toFixed(2)})`,
  );
