/**
 * Micro-benchmark of one scheduling decision (src/router/choose/find-best-match.ts).
 *
 *   bun bench/micro/scheduler.ts [--json FILE]
 *
 * Setup: 64 workers (one dp rank each), block size 16, 16 active requests per worker,
 * each an 8k-token prompt (512 sequence hashes): a 1k-token system prompt shared by every
 * request on every worker, then a conversation prefix, then unique turns. Half of them have
 * finished prefill and carry 8 output blocks. That is ~460k (block, worker) refs held.
 * The request being scheduled is 8k tokens (512 hashes): the shared system prompt, a
 * conversation whose earlier turn is active on one worker, then new blocks.
 *
 * Each call is timed on its own (Bun.nanoseconds) after warm-up; p50/p90/p99/max in µs,
 * plus the best mean over batches of 200 calls (`bestBatchUs`, robust to other load on the
 * machine). The 1-minute load average is recorded: on a shared 2-core box p99 mostly
 * measures the neighbours. Target: schedule step ≤ 30 µs p99 so hash + match + schedule
 * stays ≤ 100 µs.
 */
import { readFileSync } from "node:fs";
import { keyOf } from "../../src/core/ids.ts";
import type { OverlapScores } from "../../src/core/overlap.ts";
import { schedulerConfig, type SchedulerConfig } from "../../src/router/choose/config.ts";
import { endpointsOf } from "../../src/router/choose/endpoints.ts";
import { findBestMatch } from "../../src/router/choose/find-best-match.ts";
import { LoadTracker } from "../../src/router/books/load-tracker.ts";
import { RequestLease } from "../../src/router/books/request-lease.ts";
import { createPipeline, type PolicyName } from "../../src/router/choose/registry.ts";
import type { Endpoint } from "../../src/router/choose/types.ts";
import { mulberry32 } from "../../test/support/prng.ts";
import { textTable } from "../support/text-table.ts";

const WORKERS = 64;
const BLOCK_SIZE = 16;
const BLOCKS = 512; // 8192 tokens
const ACTIVE_PER_WORKER = 16;
const SYSTEM_BLOCKS = 64;
const CONVERSATION_BLOCKS = 256;
const REQUEST_POOL = 64;
const WARMUP = 2_000;
const SAMPLES = 20_000;

interface CaseResult {
  name: string;
  calls: number;
  p50Us: number;
  p90Us: number;
  p99Us: number;
  maxUs: number;
  meanUs: number;
  bestBatchUs: number;
}

/** Distinct pseudo-random 64-bit "sequence hashes" for a labelled segment. */
function segment(label: number, n: number): BigUint64Array {
  const out = new BigUint64Array(n);
  let x = BigInt(label) * 0x9e3779b97f4a7c15n + 0x632be59bd9b4e019n;
  for (let i = 0; i < n; i++) {
    x = BigInt.asUintN(64, x * 0x5851f42d4c957f2dn + 0x14057b7ef767814fn);
    out[i] = x ^ (x >> 29n);
  }
  return out;
}

function prompt(...parts: BigUint64Array[]): BigUint64Array {
  const out = new BigUint64Array(BLOCKS);
  let at = 0;
  for (const p of parts) {
    out.set(p.subarray(0, Math.min(p.length, BLOCKS - at)), at);
    at += p.length;
    if (at >= BLOCKS) break;
  }
  return out;
}

interface World {
  config: SchedulerConfig;
  tracker: LoadTracker;
  endpoints: Endpoint[];
  requests: { seqHashes: BigUint64Array; overlaps: OverlapScores }[];
}

function buildWorld(): World {
  const config = schedulerConfig({ blockSize: BLOCK_SIZE });
  const endpoints = endpointsOf(
    Array.from({ length: WORKERS }, (_, i) => ({ workerId: BigInt(1000 + i) })),
  );
  const tracker = new LoadTracker({ blockSize: BLOCK_SIZE });
  tracker.updateWorkers(endpoints.map((e) => e.worker));
  const rng = mulberry32(42);
  const system = segment(1, SYSTEM_BLOCKS);
  const conversations: BigUint64Array[] = [];
  let n = 0;
  for (const e of endpoints) {
    for (let r = 0; r < ACTIVE_PER_WORKER; r++) {
      const conv = segment(10_000 + n, CONVERSATION_BLOCKS);
      conversations.push(conv);
      const id = `active-${n++}`;
      tracker.addRequest(
        {
          requestId: id,
          worker: e.worker,
          seqHashes: prompt(system, conv, segment(50_000 + n, BLOCKS)),
          isl: BLOCKS * BLOCK_SIZE,
          overlap: SYSTEM_BLOCKS,
        },
        0,
      );
      if (r % 2 === 0) {
        tracker.markPrefillCompleted(id, 0);
        for (let b = 0; b < 8; b++) tracker.addOutputBlock(id, r % 4 === 0 ? 0.5 : undefined, rng);
      }
    }
  }
  // Requests to schedule: the system prompt, an earlier turn of a conversation active on
  // one worker, then new blocks. The indexer says every worker caches the system prompt
  // and the conversation's worker caches its prefix too.
  const requests = Array.from({ length: REQUEST_POOL }, (_, i) => {
    const owner = Math.floor(rng() * WORKERS);
    const conv = conversations[owner * ACTIVE_PER_WORKER + (i % ACTIVE_PER_WORKER)]!;
    const seqHashes = prompt(system, conv, segment(900_000 + i, BLOCKS));
    const scores = new Map<string, number>();
    const treeSizes = new Map<string, number>();
    for (const e of endpoints) {
      scores.set(e.key, SYSTEM_BLOCKS);
      treeSizes.set(e.key, 50_000 + Math.floor(rng() * 10_000));
    }
    scores.set(keyOf(endpoints[owner]!.worker), SYSTEM_BLOCKS + CONVERSATION_BLOCKS);
    return { seqHashes, overlaps: { scores, treeSizes, frequencies: [] } };
  });
  return { config, tracker, endpoints, requests };
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

/** Time each call of `fn(i)` separately; report µs percentiles. */
function timeCalls(name: string, fn: (i: number) => void): CaseResult {
  for (let i = 0; i < WARMUP; i++) fn(i);
  const ns = new Float64Array(SAMPLES);
  for (let i = 0; i < SAMPLES; i++) {
    const t0 = Bun.nanoseconds();
    fn(WARMUP + i);
    ns[i] = Bun.nanoseconds() - t0;
  }
  let best = Infinity;
  for (let i = 0; i + 200 <= SAMPLES; i += 200) {
    let batch = 0;
    for (let j = i; j < i + 200; j++) batch += ns[j]!;
    best = Math.min(best, batch / 200);
  }
  ns.sort();
  let sum = 0;
  for (const x of ns) sum += x;
  return {
    name,
    calls: SAMPLES,
    p50Us: percentile(ns, 0.5) / 1000,
    p90Us: percentile(ns, 0.9) / 1000,
    p99Us: percentile(ns, 0.99) / 1000,
    maxUs: ns[ns.length - 1]! / 1000,
    meanUs: sum / ns.length / 1000,
    bestBatchUs: best / 1000,
  };
}

function scheduleCase(
  world: World,
  policy: PolicyName,
  label: string,
  temperature = 0,
): CaseResult {
  const config = { ...world.config, temperature };
  const pipeline = createPipeline(policy, config);
  const rng = mulberry32(7);
  const { tracker, endpoints, requests } = world;
  return timeCalls(label, (i) => {
    const r = requests[i % REQUEST_POOL]!;
    findBestMatch({
      overlaps: r.overlaps,
      seqHashes: r.seqHashes,
      isl: BLOCKS * BLOCK_SIZE,
      endpoints,
      tracker,
      pipeline,
      config,
      now: 0,
      rng,
    });
  });
}

/** Schedule, book through the request's lease (as the router does), prefill done, free: the whole per-request bookkeeping. */
function lifecycleCase(world: World): CaseResult {
  const config = world.config;
  const pipeline = createPipeline("kv", config);
  const rng = mulberry32(9);
  const { tracker, endpoints, requests } = world;
  const ids = Array.from({ length: WARMUP + SAMPLES }, (_, i) => `bench-${i}`);
  return timeCalls("kv schedule + book + prefill done + free", (i) => {
    const r = requests[i % REQUEST_POOL]!;
    const id = ids[i]!;
    const isl = BLOCKS * BLOCK_SIZE;
    const sel = findBestMatch({
      overlaps: r.overlaps,
      seqHashes: r.seqHashes,
      isl,
      endpoints,
      tracker,
      pipeline,
      config,
      now: 0,
      rng,
    });
    const booking = {
      requestId: id,
      worker: sel.worker,
      seqHashes: r.seqHashes,
      isl,
      overlap: sel.overlapBlocks,
    };
    const lease = RequestLease.book(tracker, booking, 0, BLOCK_SIZE, () => 0, rng);
    lease.prefillDone();
    lease.free();
  });
}

function potentialCase(world: World): CaseResult {
  const { tracker, requests } = world;
  return timeCalls("potentialBlocksAndTokens (Map per worker)", (i) => {
    const r = requests[i % REQUEST_POOL]!;
    tracker.potentialBlocksAndTokens(r.seqHashes, BLOCKS * BLOCK_SIZE, r.overlaps, 0);
  });
}

function loadAverage(): number | null {
  try {
    return Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0]);
  } catch {
    return null;
  }
}

export async function runSchedulerBench(): Promise<Record<string, unknown>> {
  const loadBefore = loadAverage();
  const t0 = performance.now();
  const world = buildWorld();
  const setupMs = performance.now() - t0;
  const cases = [
    scheduleCase(world, "kv", "kv schedule (query only, T=0)"),
    scheduleCase(world, "kv", "kv schedule (query only, T=0.5 softmax)", 0.5),
    scheduleCase(world, "least-loaded", "least-loaded schedule"),
    scheduleCase(world, "round-robin", "round-robin schedule"),
    lifecycleCase(world),
    potentialCase(world),
  ];
  return {
    bench: "scheduler",
    runtime: typeof Bun !== "undefined" ? `bun ${Bun.version}` : "unknown",
    setup: {
      workers: WORKERS,
      blockSize: BLOCK_SIZE,
      requestBlocks: BLOCKS,
      activePerWorker: ACTIVE_PER_WORKER,
      heldBlockRefs: world.tracker.heldBlockRefs,
      buildMs: Math.round(setupMs),
    },
    targetP99Us: 30,
    loadAverage1m: { before: loadBefore, after: loadAverage() },
    cases,
  };
}

function printTable(cases: CaseResult[]): void {
  const head = [
    "case",
    "calls",
    "p50 µs",
    "p90 µs",
    "p99 µs",
    "max µs",
    "mean µs",
    "best batch µs",
  ];
  const rows = cases.map((c) => [
    c.name,
    String(c.calls),
    ...[c.p50Us, c.p90Us, c.p99Us, c.maxUs, c.meanUs, c.bestBatchUs].map((x) => x.toFixed(1)),
  ]);
  console.log(textTable(head, rows));
}

if (import.meta.main) {
  const result = await runSchedulerBench();
  console.log(JSON.stringify({ ...(result.setup as object), loadAverage1m: result.loadAverage1m }));
  printTable(result.cases as CaseResult[]);
  const i = process.argv.indexOf("--json");
  if (i > 0 && process.argv[i + 1]) {
    await Bun.write(process.argv[i + 1]!, JSON.stringify(result, null, 2) + "\n");
    console.log(`wrote ${process.argv[i + 1]}`);
  }
}
