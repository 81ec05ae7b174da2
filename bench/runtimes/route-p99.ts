/**
 * hash + match + schedule for an 8k-token prompt on the portable path, on whichever runtime
 * runs this file (issue 10 asks for Deno's figure beside Bun's):
 *
 *   bun bench/runtimes/route-p99.ts
 *   node_modules/@deno/linux-x64-glibc/deno run --allow-read --node-modules-dir=manual bench/runtimes/route-p99.ts
 *
 * The router is built with createRouter (the portable TypeScript hasher, as Deno and workerd
 * run it); 16 workers, an index holding each worker's own 8k-token conversation plus a shared
 * 4k-token system prompt (events applied first). Each sample: prepare (block + sequence
 * hashes) + route (index match + schedule + booking), then the booking is freed. Reports p50,
 * p99 and mean in µs over `N` samples after a warm-up. Web-standard APIs only.
 */
import { storedEvent } from "../../src/core/events.ts";
import { computeBlockHashesWith, portableBatchHasher } from "../../src/core/block-hash.ts";
import type { WorkerWithDpRank } from "../../src/core/ids.ts";
import { createRouter } from "../../src/router/create-router.ts";
import { MemoryAffinityStore } from "../../src/router/sessions/memory-store.ts";
import { StickyRouter } from "../../src/router/sessions/sticky.ts";

const TOKENS = 8192;
const BS = 16;
const WORKERS = 16;
const N = 2000;
const WARMUP = 300;

const targets: WorkerWithDpRank[] = Array.from({ length: WORKERS }, (_, i) => ({
  workerId: BigInt(i + 1),
  dpRank: 0,
}));
const workers = {
  isRoutable: () => true,
  healthyTargets: () => targets,
  get: () => ({ dpRanks: 1 }),
};
const noop = { observe() {} };
let seed = 12345;
const rng = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
const router = createRouter(
  { policy: "kv", scheduler: { blockSize: BS }, sessionTtlMs: 60_000 },
  {
    hasher: portableBatchHasher,
    now: () => performance.now(),
    rng,
    workers,
    sticky: new StickyRouter(
      new MemoryAffinityStore({ clock: { now: () => 0, every: () => () => {} } }),
    ),
    metrics: { phases: { hash: noop, match: noop, schedule: noop, total: noop }, overlap: noop },
    query: async () => ({ kind: "error", message: "none" }),
    sleep: async () => {},
  },
);
router.tracker.updateWorkers(targets);

function prompt(conversation: number, length: number): Uint32Array {
  const t = new Uint32Array(length);
  for (let i = 0; i < length; i++)
    t[i] = i < 4096 ? (i * 7919) % 150_000 : (conversation * 104_729 + i * 31) % 150_000;
  return t;
}

// Each worker holds its conversation (the shared 4k prefix + its own tail).
for (const w of targets) {
  const hashes = computeBlockHashesWith(
    portableBatchHasher,
    prompt(Number(w.workerId), TOKENS),
    BS,
  );
  const blocks = Array.from(hashes, (h) => ({ blockHash: h, tokensHash: h }));
  router.ingest([storedEvent(w.workerId, 0n, blocks, null, 0)], "admin");
}

const samples: number[] = [];
for (let i = 0; i < WARMUP + N; i++) {
  // Half the requests continue a worker's conversation, half are new conversations.
  const tokens = prompt(i % 2 === 0 ? 1 + (i % WORKERS) : 1000 + i, TOKENS);
  const t0 = performance.now();
  const prepared = router.routing.prepare(tokens, undefined);
  const d = await router.routing.route({ tokens, prepared, requestId: `r${i}` });
  const dt = performance.now() - t0;
  d.lease.free();
  if (i >= WARMUP) samples.push(dt * 1000);
}
samples.sort((a, b) => a - b);
const q = (p: number) => samples[Math.min(samples.length - 1, Math.floor(p * samples.length))]!;
const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
const runtime =
  "Deno" in globalThis
    ? `deno ${(globalThis as { Deno?: { version: { deno: string } } }).Deno!.version.deno}`
    : "Bun" in globalThis
      ? `bun ${(globalThis as { Bun?: { version: string } }).Bun!.version}`
      : "unknown";
console.log(
  JSON.stringify({
    runtime,
    tokens: TOKENS,
    samples: N,
    p50_us: +q(0.5).toFixed(1),
    p99_us: +q(0.99).toFixed(1),
    mean_us: +mean.toFixed(1),
  }),
);
