/**
 * CPU cost of the router's per-request work outside the HTTP stack, in-process
 * (`bun bench/proxy/routing-cpu.ts [--iters N] [--prompt-tokens 1024] [--block-size 16]`):
 * the same request the proxy bench sends (a text prompt of N byte tokens), step by step —
 * JSON parse, tokenize, block hashes, sequence hashes, index match, the whole route()
 * (match + schedule + booking) and its release. Each step is timed over many iterations
 * and reported in µs per request, so a change to one step shows up without the noise of
 * wrk and sockets. Native hashing is used when the C library is built.
 */
import { createRouter } from "../../src/router/create-router.ts";
import {
  computeBlockHashesWith,
  computeSeqHashes,
  portableBatchHasher,
  seqHasherOf,
} from "../../src/core/block-hash.ts";
import { RouterMetrics } from "../../src/observe/names.ts";
import { loadNativeBlockHasher } from "../../src/runtime/bun/ffi-hasher.ts";
import { MemoryAffinityStore } from "../../src/router/sessions/memory-store.ts";
import { StickyRouter } from "../../src/router/sessions/sticky.ts";
import { promptTokens } from "../../src/tokens/index.ts";
import { WorkerRegistry } from "../../src/fleet/registry.ts";

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}
const ITERS = arg("--iters", 50_000);
const PROMPT = arg("--prompt-tokens", 1024);
const BS = arg("--block-size", 16);

const prompt = "The router hashes every block of this prompt. "
  .repeat(Math.ceil(PROMPT / 47))
  .slice(0, PROMPT);
const bodyBytes = new TextEncoder().encode(
  JSON.stringify({ model: "switchyard-sim", prompt, max_tokens: 16, stream: true }),
);
const native = loadNativeBlockHasher();
const hasher = native ?? portableBatchHasher;

const registry = new WorkerRegistry();
// Built as main.ts builds it (src/router/create-router.ts).
const { index, tracker, routing } = createRouter(
  { policy: "kv", scheduler: { blockSize: BS }, sessionTtlMs: 60_000 },
  {
    hasher,
    now: () => performance.now(),
    rng: Math.random,
    workers: registry,
    sticky: new StickyRouter(
      new MemoryAffinityStore({ clock: { now: () => 0, every: () => () => {} } }),
    ),
    metrics: new RouterMetrics(),
    query: async () => ({ kind: "error", message: "no engines in this bench" }),
    sleep: async () => {},
  },
);
registry.add(1n, "http://127.0.0.1:1", 1);
tracker.updateWorkers([{ workerId: 1n, dpRank: 0 }]);

const dec = new TextDecoder();
const tokens = promptTokens(JSON.parse(dec.decode(bodyBytes)));
const blocks = computeBlockHashesWith(hasher, tokens, BS);
const seq = computeSeqHashes(blocks);
let sink = 0;

/** µs per call of fn, best of 5 rounds (the machine is shared). */
async function time(
  label: string,
  fn: () => unknown | Promise<unknown>,
  iters = ITERS,
): Promise<void> {
  let best = Infinity;
  for (let round = 0; round < 5; round++) {
    const t0 = performance.now();
    for (let i = 0; i < iters; i++) {
      const r = fn();
      if (r instanceof Promise) await r;
    }
    best = Math.min(best, ((performance.now() - t0) * 1000) / iters);
  }
  console.log(`${label.padEnd(34)} ${best.toFixed(2).padStart(7)} µs`);
}

console.log(
  `${PROMPT}-token text prompt, block size ${BS}, ${native ? "native" : "portable"} block hasher, best of 5 x ${ITERS}`,
);
await time("JSON.parse(body)", () => JSON.parse(dec.decode(bodyBytes)));
const json = JSON.parse(dec.decode(bodyBytes));
await time("promptTokens", () => (sink += promptTokens(json).length));
await time("block hashes", () => (sink += computeBlockHashesWith(hasher, tokens, BS).length));
await time("sequence hashes (portable)", () => (sink += computeSeqHashes(blocks).length));
const seqHasher = seqHasherOf(hasher);
if (seqHasher !== computeSeqHashes)
  await time("sequence hashes (native)", () => (sink += seqHasher(blocks).length));
await time(
  "block + sequence hashes",
  () => (sink += seqHasher(computeBlockHashesWith(hasher, tokens, BS)).length),
);
await time("index.findMatches", () => index.findMatches(blocks));
// Concurrent requests like the proxy bench's 64 connections: book, then release in order.
const open: { free(): boolean }[] = [];
await time("route + free (64 in flight)", async () => {
  const d = await routing.route({ tokens, requestId: routing.nextRequestId() });
  open.push(d.lease);
  if (open.length >= 64) open.shift()!.free();
});
for (const l of open.splice(0)) l.free();
// Text without a tokenizer (the proxy bench's prompt): routed approximately, each decision recorded in the approximate index.
await time("route + free, approximate (64 in flight)", async () => {
  const d = await routing.route({ tokens, requestId: routing.nextRequestId(), approximate: true });
  open.push(d.lease);
  if (open.length >= 64) open.shift()!.free();
});
for (const l of open) l.free();
if (sink === 42) console.log("");
