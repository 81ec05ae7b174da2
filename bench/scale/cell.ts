/**
 * One cell of bench:scale, in its own process (a fresh heap, so memory deltas are this cell's):
 *
 *   bun bench/scale/cell.ts --workers W --entries E [--register 1000]   (prints one JSON line)
 *
 * World: a router built as the runtime builds it (createRouter, the precise index, a
 * WorkerRegistry, WorkerMembership), W workers registered, block size 16. The index is filled
 * to E (block, worker) entries the way engines fill it: 8k-token requests (512 blocks) =
 * a shared family prefix (32-448 blocks; families living on windows of 16 workers, popular
 * ones first) + a unique tail, each stored by the worker it was routed to as Stored events of
 * 16 blocks chained by parent hash, only for blocks it lacks. From 1 M entries on, 4 documents
 * of 128k tokens (8k blocks) are cached on 3 workers each.
 *
 * Measured:
 * - event apply: blocks/s inside the index's store calls while it is built (typed arrays, as
 *   the ZMQ subscriber hands them), and at the final size, Stored events as RouterEvent objects
 *   (applyEvent, what HTTP event batches become) and the same as typed arrays;
 * - memory per (block, worker) entry: JS heap + typed arrays (Bun counts both in heapUsed)
 *   after a full GC, before vs after the build, and the index's own typed arrays alone;
 * - route: hash (block + sequence) + index match + schedule (kv policy, 16 requests booked per
 *   worker; candidates reused and the kept ones copied, as the routing service does), p50/p99 µs, wall and CPU time (routeLatency says how), for 8k-token
 *   prompts (a family prefix + a new tail; native and portable hashers) and 128k-token prompts
 *   (a cached document + a new tail);
 * - registration: one more worker, then `--register` more, each through WorkerMembership
 *   (the engine's info answered at once; no /kv/query restore) followed by its first Stored
 *   event of 16 blocks (which is when the index gives it a slot); per-100 slices show whether
 *   it stays linear; then every one of them removed, and memory after a full GC against before.
 */
import { parseArgs } from "node:util";
import {
  computeBlockHashesWith,
  computeSeqHashesWith,
  portableBatchHasher,
  seqHasherOf,
  type BatchBlockHasher,
} from "../../src/core/block-hash.ts";
import { removedEvent, storedEvent, type StoredBlock } from "../../src/core/events.ts";
import { worker } from "../../src/core/ids.ts";
import { createRouter } from "../../src/router/create-router.ts";
import type { RadixTree } from "../../src/router/kv-index/radix-tree.ts";
import { endpointsOf } from "../../src/router/choose/endpoints.ts";
import { CandidatePool } from "../../src/router/choose/candidate-pool.ts";
import { findBestMatch } from "../../src/router/choose/find-best-match.ts";
import { keepCandidates } from "../../src/router/choose/kept-candidates.ts";
import { MemoryAffinityStore } from "../../src/router/sessions/memory-store.ts";
import { StickyRouter } from "../../src/router/sessions/sticky.ts";
import { RouterMetrics } from "../../src/observe/names.ts";
import { WorkerRegistry } from "../../src/fleet/registry.ts";
import { WorkerMembership } from "../../src/fleet/membership.ts";
import { loadNativeBlockHasher } from "../../src/runtime/bun/ffi-hasher.ts";
import { xorshift32, mulberry32 } from "../../test/support/prng.ts";
import { percentile } from "../replay/stats.ts";
import { concat, randomTokens as randomTokensFrom, randomU64 } from "../support/tokens.ts";

const { values } = parseArgs({
  options: {
    workers: { type: "string", default: "64" },
    entries: { type: "string", default: "1000000" },
    register: { type: "string", default: "1000" },
  },
});
const W = Number(values.workers);
const E = Number(values.entries);
const REGISTER = Number(values.register);
const BS = 16;
const EVENT_BLOCKS = 16;
const REQUEST_BLOCKS = 512;
const DOC_BLOCKS = 8192 - 16;
const WINDOW = Math.min(16, W);
const FAMILIES = Math.max(48, Math.ceil(W / 4));

const rand32 = xorshift32(0x2545f491);
const randomHash = (): bigint => randomU64(rand32);
const randomTokens = (n: number): Uint32Array => randomTokensFrom(n, rand32, 150_000);

const native = loadNativeBlockHasher();
const hasher: BatchBlockHasher = native ?? portableBatchHasher;
const seqHasher = seqHasherOf(hasher);

function memory(): number {
  Bun.gc(true);
  return process.memoryUsage().heapUsed;
}

// ------------------------------------------------------------------ the router, built as runtime/compose/ builds it

const registry = new WorkerRegistry();
const router = createRouter(
  { policy: "kv", scheduler: { blockSize: BS }, sessionTtlMs: 60_000 },
  {
    hasher,
    now: () => performance.now(),
    rng: mulberry32(1),
    workers: registry,
    sticky: new StickyRouter(
      new MemoryAffinityStore({ clock: { now: () => 0, every: () => () => {} } }),
    ),
    metrics: new RouterMetrics(),
    query: async () => ({ kind: "error", message: "no engines in this bench" }),
    sleep: async () => {},
  },
);
const tree = router.index as RadixTree;
const membership = new WorkerMembership({
  registry,
  blockSize: BS,
  load: router.members,
  recovery: router.members,
  engineInfo: async () => ({ loras: [], dpRanks: 1, blockSize: BS }),
});
const idOf = (i: number) => BigInt(i + 1);
const register = (i: number) =>
  membership.register({
    url: `http://10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:8000`,
    id: idOf(i),
    restore: false,
  });

const mem0 = memory();
for (let i = 0; i < W; i++) await register(i);

// ------------------------------------------------------------------ the world

interface Family {
  tokens: Uint32Array;
  local: BigUint64Array;
  seq: BigUint64Array;
}
const families: Family[] = Array.from({ length: FAMILIES }, (_, f) => {
  const tokens = randomTokens(BS * (32 + ((f * 37) % 417)));
  const local = computeBlockHashesWith(hasher, tokens, BS);
  return { tokens, local, seq: computeSeqHashesWith(seqHasher, local) };
});
const holds: Set<number>[] = Array.from({ length: W }, () => new Set());
let storeMs = 0;
let storedBlocks = 0;
const tokBuf = new BigUint64Array(REQUEST_BLOCKS);
const seqBuf = new BigUint64Array(REQUEST_BLOCKS);

/** Store blocks [from, n) of (local, seq) for worker w, in events of 16; timed inside the index only. */
function storeRange(
  w: number,
  local: BigUint64Array,
  seq: BigUint64Array,
  from: number,
  n: number,
): void {
  for (let i = from; i < n; i += EVENT_BLOCKS) {
    const end = Math.min(n, i + EVENT_BLOCKS);
    const t0 = performance.now();
    tree.storeHashes(
      idOf(w),
      0,
      i === 0 ? null : seq[i - 1]!,
      local.subarray(i, end),
      seq.subarray(i, end),
    );
    storeMs += performance.now() - t0;
    storedBlocks += end - i;
  }
}

function pickFamily(): number {
  const r = rand32() / 2 ** 32;
  return Math.floor(FAMILIES * r * r); // popular families first
}

/** One 8k-token request routed to a worker of its family's window: the blocks it lacks, stored. */
function storeRequest(): void {
  const f = pickFamily();
  const fam = families[f]!;
  const w = (f * 7 + (rand32() % WINDOW)) % W;
  const p = fam.local.length;
  tokBuf.set(fam.local);
  seqBuf.set(fam.seq);
  for (let i = p; i < REQUEST_BLOCKS; i++) {
    tokBuf[i] = randomHash();
    seqBuf[i] = randomHash(); // unique tail: any distinct engine hashes will do
  }
  const from = holds[w]!.has(f) ? p : 0;
  holds[w]!.add(f);
  storeRange(w, tokBuf, seqBuf, from, REQUEST_BLOCKS);
}

const docs: Family[] = [];
if (E >= 1_000_000) {
  for (let d = 0; d < 4; d++) {
    const tokens = randomTokens(DOC_BLOCKS * BS);
    const local = computeBlockHashesWith(hasher, tokens, BS);
    const doc = { tokens, local, seq: computeSeqHashesWith(seqHasher, local) };
    docs.push(doc);
    for (const k of [0, 1, 2]) storeRange((d * 16 + k * 5) % W, doc.local, doc.seq, 0, DOC_BLOCKS);
  }
}
const buildT0 = performance.now();
while (tree.size() < E) storeRequest();
const buildMs = performance.now() - buildT0;
const entries = tree.size();
const memBuilt = memory();
const indexBytes = tree.memoryBytes();

// ------------------------------------------------------------------ route latency

for (let w = 0; w < W; w++) {
  for (let k = 0; k < 16; k++) {
    const toks = concat(families[(w + k) % FAMILIES]!.tokens.subarray(0, 512), randomTokens(512));
    const seq = computeSeqHashesWith(seqHasher, computeBlockHashesWith(hasher, toks, BS));
    router.tracker.addRequest(
      {
        requestId: `bg-${w}-${k}`,
        worker: worker(w + 1),
        seqHashes: seq,
        isl: toks.length,
        overlap: 0,
      },
      0,
    );
    if (k % 2 === 0) router.tracker.markPrefillCompleted(`bg-${w}-${k}`, 0);
  }
}
const endpoints = endpointsOf(Array.from({ length: W }, (_, i) => ({ workerId: idOf(i) })));
/** As the routing service schedules: candidate objects reused, the ones the page and traces keep copied. */
const candidatePool = new CandidatePool();

/**
 * p50 and p99 of hash + match + schedule per call, µs, two ways: wall time (what a request
 * waits; on a shared machine inflated by other processes preempting this one) and this
 * process's CPU time around the call (getrusage: the code's own cost, garbage collection
 * included, preemption not). `rounds` rounds over the queries: wall p99 is the lowest round's
 * (preemption only adds), the rest over all samples.
 */
function routeLatency(
  h: BatchBlockHasher,
  queries: Uint32Array[],
  rounds: number,
  passes: number,
): { p50: number; p99: number; cpu_p50: number; cpu_p99: number } {
  const sh = seqHasherOf(h);
  const rng = mulberry32(2);
  const wall: number[] = [];
  const cpu: number[] = [];
  const p99s: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const out: number[] = [];
    for (let r = 0; r < passes; r++) {
      for (const q of queries) {
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        const local = computeBlockHashesWith(h, q, BS);
        const seq = computeSeqHashesWith(sh, local);
        const overlaps = tree.findMatches(local);
        const sel = findBestMatch({
          overlaps,
          seqHashes: seq,
          isl: q.length,
          endpoints,
          tracker: router.tracker,
          pipeline: router.pipeline,
          config: router.scheduler,
          now: 1,
          rng,
          candidatePool,
        });
        keepCandidates(sel.candidates, sel.key);
        out.push((performance.now() - t0) * 1000);
        const c1 = process.cpuUsage();
        cpu.push(c1.user + c1.system - c0.user - c0.system);
      }
    }
    p99s.push(percentile(Float64Array.from(out).sort(), 99));
    wall.push(...out);
  }
  const w = Float64Array.from(wall).sort();
  const c = Float64Array.from(cpu).sort();
  const f = (x: number) => +x.toFixed(1);
  return {
    p50: f(percentile(w, 50)),
    p99: f(Math.min(...p99s)),
    cpu_p50: f(percentile(c, 50)),
    cpu_p99: f(percentile(c, 99)),
  };
}
const q8k = Array.from({ length: 64 }, (_, i) => {
  const f = families[(i * 5) % FAMILIES]!;
  return concat(f.tokens, randomTokens(REQUEST_BLOCKS * BS - f.tokens.length));
});
const q128k = Array.from({ length: 4 }, (_, i) =>
  docs[i] ? concat(docs[i]!.tokens, randomTokens(16 * BS)) : randomTokens(8192 * BS),
);
const route: Record<string, { p50: number; p99: number; cpu_p50: number; cpu_p99: number }> = {};
const hashers: [string, BatchBlockHasher][] = native
  ? [
      ["native", native],
      ["portable", portableBatchHasher],
    ]
  : [["portable", portableBatchHasher]];
for (const [name, h] of hashers) {
  routeLatency(h, q8k, 1, 10); // warm-up: the JIT's optimizing tier
  route[`8k_${name}`] = routeLatency(h, q8k, 5, 8);
  routeLatency(h, q128k, 1, 3);
  route[`128k_${name}`] = routeLatency(h, q128k, 5, 4);
}

// ------------------------------------------------------------------ registration

/** Register worker i and store its first event (16 fresh blocks): when the index makes room for it. */
async function registerOne(i: number): Promise<void> {
  await register(i);
  const local = new BigUint64Array(EVENT_BLOCKS);
  const seq = new BigUint64Array(EVENT_BLOCKS);
  for (let k = 0; k < EVENT_BLOCKS; k++) {
    local[k] = randomHash();
    seq[k] = randomHash();
  }
  tree.storeHashes(idOf(i), 0, null, local, seq);
}
const memBeforeRegister = memory();
let t0 = performance.now();
await registerOne(W);
const registerOneMs = performance.now() - t0;
const slices: number[] = [];
t0 = performance.now();
let sliceT0 = t0;
for (let i = 1; i <= REGISTER; i++) {
  await registerOne(W + i);
  if (i % 100 === 0) {
    const now = performance.now();
    slices.push(+(now - sliceT0).toFixed(1));
    sliceT0 = now;
  }
}
const registerManyMs = performance.now() - t0;
const memRegistered = memory();
t0 = performance.now();
for (let i = 0; i <= REGISTER; i++) membership.remove(idOf(W + i));
const removeMs = performance.now() - t0;
const memRemoved = memory();

// ------------------------------------------------------------------ event apply at this size

/**
 * At the final size: rounds of fresh Stored events (16 blocks, on random workers), applied in
 * batches of 64 as a subscriber applies what it just decoded, then Removed again, so the index
 * stays at its size. Once as RouterEvent objects (applyEvent: HTTP event batches) and once as
 * typed arrays (storeHashes: the ZMQ subscriber's path). Building the events is not timed.
 */
function applyAtSize(): {
  events_blocks_per_s: number;
  typed_blocks_per_s: number;
  removed_blocks_per_s: number;
} {
  const ROUNDS = 16;
  const PER_ROUND = 64 * 16; // events per round
  let evMs = 0;
  let typedMs = 0;
  let rmMs = 0;
  let blocks = 0;
  for (let r = 0; r < ROUNDS; r++) {
    for (const typed of [false, true]) {
      const evs: {
        w: bigint;
        local: BigUint64Array;
        seq: BigUint64Array;
        ev: ReturnType<typeof storedEvent>;
      }[] = [];
      for (let e = 0; e < PER_ROUND; e++) {
        const local = new BigUint64Array(EVENT_BLOCKS);
        const seq = new BigUint64Array(EVENT_BLOCKS);
        const bl: StoredBlock[] = [];
        for (let i = 0; i < EVENT_BLOCKS; i++) {
          local[i] = randomHash();
          seq[i] = randomHash();
          bl.push({ tokensHash: local[i]!, blockHash: seq[i]! });
        }
        const w = idOf(rand32() % W);
        evs.push({ w, local, seq, ev: storedEvent(w, 0n, bl, null) });
      }
      const removals = evs.map((x) => removedEvent(x.w, 0n, [...x.seq]));
      let t0 = performance.now();
      if (typed) for (const x of evs) tree.storeHashes(x.w, 0, null, x.local, x.seq);
      else for (const x of evs) tree.applyEvent(x.ev);
      const ms = performance.now() - t0;
      if (typed) typedMs += ms;
      else evMs += ms;
      t0 = performance.now();
      for (const ev of removals) tree.applyEvent(ev);
      rmMs += performance.now() - t0;
      if (typed) blocks += PER_ROUND * EVENT_BLOCKS;
    }
  }
  return {
    events_blocks_per_s: Math.round(blocks / (evMs / 1000)),
    typed_blocks_per_s: Math.round(blocks / (typedMs / 1000)),
    removed_blocks_per_s: Math.round((2 * blocks) / (rmMs / 1000)),
  };
}
const buildRate = Math.round(storedBlocks / (storeMs / 1000));
const atSize = applyAtSize();

console.log(
  JSON.stringify({
    workers: W,
    entries,
    nodes: tree.nodeCount(),
    native_hasher: native !== undefined,
    build_s: +(buildMs / 1000).toFixed(1),
    apply: { build_blocks_per_s: buildRate, at_size: atSize },
    memory: {
      bytes_per_entry: +((memBuilt - mem0) / entries).toFixed(1),
      index_typed_arrays_per_entry: +(indexBytes / entries).toFixed(1),
      heap_mb: +(memBuilt / 2 ** 20).toFixed(1),
    },
    route_us: route,
    registration: {
      one_ms: +registerOneMs.toFixed(2),
      many: REGISTER,
      many_ms: +registerManyMs.toFixed(1),
      per_100_ms: slices,
      remove_ms: +removeMs.toFixed(1),
      memory_mb: {
        before: +(memBeforeRegister / 2 ** 20).toFixed(1),
        registered: +(memRegistered / 2 ** 20).toFixed(1),
        removed: +(memRemoved / 2 ** 20).toFixed(1),
      },
      memory_after_removal_ratio: +(memRemoved / memBeforeRegister).toFixed(3),
    },
  }),
);
