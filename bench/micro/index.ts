/**
 * Micro-benchmark of the precise index (src/router/kv-index/radix-tree.ts).
 *
 *   bun bench/micro/index.ts [--json FILE] [--entries N]
 *
 * Workload: 64 workers, block size 16. 48 prompt families (shared system prompts / documents
 * of 32–448 blocks, Zipf-like popularity), each living on a window of 16 workers; every
 * request is an 8k-token prompt (512 blocks) = family prefix + unique tail, routed to one
 * worker of its family's window. Like vLLM, a worker emits Stored only for blocks it does not
 * hold yet, in events of 16 blocks chained by parent hash. Plus 8 long documents of 8192
 * blocks (128k tokens), each on 3 workers. Built until ≥ N (block, worker) entries (1M).
 *
 * Reports (targets from the indexer brief):
 *   (a) event apply rate, stored blocks/s (target ≥ 5M/s on one core); events are generated
 *       in small batches (~64 events) outside the timed region and applied right away, as a
 *       subscriber applies what it just decoded; once as RouterEvent objects (applyEvent) and
 *       once as typed arrays (storeHashes, no bigint per block);
 *       also a steady-state churn (store new request + remove an old one) rate;
 *   (b) memory per (block, worker) entry: JS heap + array buffers (heapUsed, Bun counts typed
 *       arrays there) and RSS deltas around the build, after Bun.gc(true) (target ≤ 100 B);
 *   (c) findMatches latency p50/p99 for 8k-token requests (prefix hit + new tail; exact repeat
 *       of a stored request) and 128k-token requests (full / half document hit)
 *       (target: well under 100 µs p99 for 8k).
 */
import { storedEvent, removedEvent } from "../../src/core/events.ts";
import type { RouterEvent, StoredBlock } from "../../src/core/events.ts";
import { RadixTree } from "../../src/router/kv-index/radix-tree.ts";
import { xorshift32 } from "../../test/support/prng.ts";
import { randomU64 } from "../support/tokens.ts";

/** Workers the requests spread over (`--workers`; 64 in the figures of micro/README.md). */
let WORKERS = 64;
const EVENT_BLOCKS = 16;
const REQUEST_BLOCKS = 512;
const FAMILIES = 48;
const WINDOW = 16;
const LONG_DOCS = 8;
const LONG_BLOCKS = 8192;

// ---------------------------------------------------------------------------- hashes

const RNG_SEED = 0x9e3779b9;
let rand32 = xorshift32(RNG_SEED);
const B64 = new BigUint64Array(1);
const B32 = new Uint32Array(B64.buffer);
const randomHash = (): bigint => randomU64(rand32);
/** Stand-in for the rolling sequence hash (the bench measures the index, not XXH3). */
function chain(prev: bigint, local: bigint): bigint {
  B64[0] = prev ^ local;
  let lo = B32[0]!;
  let hi = B32[1]!;
  lo = Math.imul(lo ^ (hi >>> 15), 0x85ebca6b) ^ 0x27d4eb2f;
  hi = Math.imul(hi ^ (lo >>> 13), 0xc2b2ae35) ^ 0x165667b1;
  B32[0] = lo;
  B32[1] = hi;
  return B64[0]!;
}

interface Sequence {
  local: bigint[];
  seq: bigint[];
}
function extend(base: Sequence, locals: bigint[]): Sequence {
  const local = [...base.local, ...locals];
  const seq = [...base.seq];
  for (let i = base.local.length; i < local.length; i++)
    seq.push(chain(i === 0 ? 0n : seq[i - 1]!, local[i]!));
  return { local, seq };
}
const EMPTY: Sequence = { local: [], seq: [] };

// ---------------------------------------------------------------------------- workload

interface Workload {
  families: Sequence[];
  /** Some stored requests' local hashes, for exact-repeat queries. */
  samples: BigUint64Array[];
  longDocs: Sequence[];
  /** Stored requests' unique tails (engine hashes), oldest first (for churn removals). */
  history: { worker: number; tail: BigUint64Array }[];
  /** Bytes the workload itself keeps while the index is built (subtracted from deltas). */
  keptBytes: number;
}

/**
 * `--tiers`: every engine also offloads every block it computes to a CPU tier (vLLM's
 * OffloadingConnector stores each computed chunk), so each Stored event has a CPU twin and an
 * entry is a (block, worker, medium).
 */
let TIERS = false;

/** Events storing seq[from..] for a worker: chunks of 16 chained through parent hashes. */
function storeEvents(worker: number, s: Sequence, from: number, out: RouterEvent[]): number {
  let n = 0;
  for (let i = from; i < s.local.length; i += EVENT_BLOCKS) {
    const blocks: StoredBlock[] = [];
    for (let j = i; j < Math.min(i + EVENT_BLOCKS, s.local.length); j++)
      blocks.push({ tokensHash: s.local[j]!, blockHash: s.seq[j]! });
    out.push(storedEvent(BigInt(worker), 0n, blocks, i === 0 ? null : s.seq[i - 1]!));
    if (TIERS)
      out.push(storedEvent(BigInt(worker), 0n, blocks, i === 0 ? null : s.seq[i - 1]!, 0, "cpu"));
    n += blocks.length * (TIERS ? 2 : 1);
  }
  return n;
}

function makeFamilies(): Sequence[] {
  const out: Sequence[] = [];
  for (let f = 0; f < FAMILIES; f++) {
    const len = 32 + (rand32() % 417);
    out.push(extend(EMPTY, Array.from({ length: len }, randomHash)));
  }
  return out;
}

function pickFamily(): number {
  const r = rand32() / 2 ** 32;
  return Math.floor(FAMILIES * r * r); // popular families first
}

function newRequest(w: Workload, family: number): Sequence {
  const prefix = w.families[family]!;
  return extend(prefix, Array.from({ length: REQUEST_BLOCKS - prefix.local.length }, randomHash));
}

/** One request routed to a worker of its family's window: the events it produces. */
function requestEvents(w: Workload, holds: Set<number>[], out: RouterEvent[]): number {
  const family = pickFamily();
  const worker = (family * 7 + (rand32() % WINDOW)) % WORKERS;
  const req = newRequest(w, family);
  const from = holds[worker]!.has(family) ? w.families[family]!.local.length : 0;
  holds[worker]!.add(family);
  if (w.samples.length < 400 && rand32() % 8 === 0) {
    w.samples.push(BigUint64Array.from(req.local));
    w.keptBytes += req.local.length * 8 + 64;
  }
  const tail = BigUint64Array.from(req.seq.slice(w.families[family]!.local.length));
  w.history.push({ worker, tail });
  w.keptBytes += tail.byteLength + 96; // array + object + header, roughly

  return storeEvents(worker, req, from, out);
}

// ---------------------------------------------------------------------------- measuring

function quantile(sorted: Float64Array, q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

function latency(
  tree: RadixTree,
  queries: BigUint64Array[],
  rounds: number,
): { p50Us: number; p99Us: number; maxUs: number; meanScored: number } {
  for (let i = 0; i < 2000; i++) tree.findMatches(queries[i % queries.length]!); // warm-up
  const times = new Float64Array(queries.length * rounds);
  let scored = 0;
  let k = 0;
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < queries.length; i++) {
      const q = queries[(i * 7919 + r) % queries.length]!;
      const t0 = Bun.nanoseconds();
      const s = tree.findMatches(q);
      times[k++] = (Bun.nanoseconds() - t0) / 1000;
      scored += s.scores.size;
    }
  }
  times.sort();
  return {
    p50Us: quantile(times, 0.5),
    p99Us: quantile(times, 0.99),
    maxUs: times[times.length - 1]!,
    meanScored: scored / times.length,
  };
}

function memory(): { heapUsed: number; rss: number } {
  Bun.gc(true);
  const m = process.memoryUsage();
  return { heapUsed: m.heapUsed, rss: m.rss };
}

interface Built {
  tree: RadixTree;
  w: Workload;
  holds: Set<number>[];
  applyNs: number;
  storedBlocks: number;
  events: number;
  heapBytes: number;
  rssBytes: number;
}

/** A Stored event as typed arrays, the form an adapter decoding msgpack could hand over. */
interface TypedStore {
  workerId: bigint;
  parent: bigint | null;
  tokens: BigUint64Array;
  hashes: BigUint64Array;
}
function typed(e: RouterEvent): TypedStore {
  const d = e.event.data;
  if (d.type !== "stored") throw new Error("stored events only");
  return {
    workerId: e.workerId,
    parent: d.parentHash,
    tokens: BigUint64Array.from(d.blocks.map((b) => b.tokensHash)),
    hashes: BigUint64Array.from(d.blocks.map((b) => b.blockHash)),
  };
}

/**
 * Build the index from the seeded workload until `target` entries. `viaTyped`: hand events
 * over as typed arrays (RadixTree.storeHashes) instead of RouterEvent objects.
 */
function build(target: number, viaTyped: boolean): Built {
  rand32 = xorshift32(RNG_SEED); // every build sees the same workload
  const w: Workload = {
    families: makeFamilies(),
    samples: [],
    longDocs: [],
    history: [],
    keptBytes: 0,
  };
  for (let d = 0; d < LONG_DOCS; d++)
    w.longDocs.push(extend(EMPTY, Array.from({ length: LONG_BLOCKS }, randomHash)));
  const holds = Array.from({ length: WORKERS }, () => new Set<number>());

  const before = memory();
  const tree = new RadixTree();
  let applyNs = 0;
  let storedBlocks = 0;
  let events = 0;
  const apply = (batch: RouterEvent[]) => {
    if (viaTyped) {
      // storeHashes is the GPU's path: a tier's twin events are left out of the typed rate.
      const stores = batch.filter((e) => e.event.medium === undefined).map(typed);
      const t0 = Bun.nanoseconds();
      for (let i = 0; i < stores.length; i++) {
        const s = stores[i]!;
        tree.storeHashes(s.workerId, 0, s.parent, s.tokens, s.hashes);
      }
      applyNs += Bun.nanoseconds() - t0;
    } else {
      const t0 = Bun.nanoseconds();
      for (let i = 0; i < batch.length; i++) tree.applyEvent(batch[i]!);
      applyNs += Bun.nanoseconds() - t0;
    }
    events += batch.length;
  };
  // Long documents first (3 workers each), then requests until the target size.
  for (let d = 0; d < LONG_DOCS; d++) {
    for (let r = 0; r < 3; r++) {
      const batch: RouterEvent[] = [];
      storedBlocks += storeEvents((d * 11 + r * 5) % WORKERS, w.longDocs[d]!, 0, batch);
      for (let i = 0; i < batch.length; i += 64) apply(batch.slice(i, i + 64));
    }
  }
  while (tree.size() < target) {
    const batch: RouterEvent[] = [];
    // Small batches: a subscriber applies events right after decoding them (cache-warm).
    while (batch.length < 64) storedBlocks += requestEvents(w, holds, batch);
    apply(batch);
  }
  const after = memory();
  return {
    tree,
    w,
    holds,
    applyNs,
    storedBlocks,
    events,
    heapBytes: after.heapUsed - before.heapUsed - w.keptBytes,
    rssBytes: after.rss - before.rss - w.keptBytes,
  };
}

export async function runIndexBench(
  opts: { entries?: number; tiers?: boolean; workers?: number } = {},
): Promise<Record<string, unknown>> {
  const target = opts.entries ?? 1_000_000;
  TIERS = opts.tiers ?? false;
  WORKERS = opts.workers ?? 64;
  const { tree, w, holds, applyNs, storedBlocks, events, heapBytes, rssBytes } = build(
    target,
    false,
  );
  const entries = tree.size();
  const typedBuild = build(target, true); // same stream again, as typed arrays (rate only)
  const typedNsPerBlock = typedBuild.applyNs / typedBuild.storedBlocks;
  typedBuild.tree = new RadixTree();

  // Steady state: each new request's store is paired with the eviction of the oldest tail.
  let churnNs = 0;
  let churnBlocks = 0;
  for (let round = 0; round < 200; round++) {
    const batch: RouterEvent[] = [];
    for (let i = 0; i < 10; i++) {
      churnBlocks += requestEvents(w, holds, batch);
      const old = w.history.shift()!;
      batch.push(removedEvent(BigInt(old.worker), 0n, [...old.tail]));
      churnBlocks += old.tail.length;
    }
    const t0 = Bun.nanoseconds();
    for (const e of batch) tree.applyEvent(e);
    churnNs += Bun.nanoseconds() - t0;
  }

  const toQuery = (locals: bigint[]) => BigUint64Array.from(locals);
  const q8kPrefix = Array.from({ length: 400 }, () => toQuery(newRequest(w, pickFamily()).local));
  const q8kRepeat = w.samples;
  const q128kFull = w.longDocs.map((d) => toQuery(d.local));
  const q128kHalf = w.longDocs.map((d) =>
    toQuery([
      ...d.local.slice(0, LONG_BLOCKS / 2),
      ...Array.from({ length: LONG_BLOCKS / 2 }, randomHash),
    ]),
  );

  // Dump and replay (recovery, worker-local query): how long a full-index dump takes.
  const d0 = Bun.nanoseconds();
  const dump = tree.dump();
  const dumpMs = (Bun.nanoseconds() - d0) / 1e6;
  const replica = new RadixTree();
  const r0 = Bun.nanoseconds();
  for (const e of dump) replica.applyEvent(e);
  const replayMs = (Bun.nanoseconds() - r0) / 1e6;
  const replicaEqual = replica.size() === tree.size() && replica.nodeCount() === tree.nodeCount();

  const result = {
    bench: "index",
    tiers: TIERS ? "every block also on a CPU tier" : "GPU only",
    runtime: `bun ${Bun.version}`,
    workers: WORKERS,
    entries,
    nodes: tree.nodeCount(),
    apply: {
      events,
      storedBlocks,
      blocksPerSec: Math.round(storedBlocks / (applyNs / 1e9)),
      nsPerBlock: +(applyNs / storedBlocks).toFixed(1),
      typedArraysBlocksPerSec: Math.round(1e9 / typedNsPerBlock),
      targetBlocksPerSec: 5_000_000,
      churnBlocksPerSec: Math.round(churnBlocks / (churnNs / 1e9)),
    },
    memory: {
      bytesPerEntryHeap: +(heapBytes / entries).toFixed(1),
      bytesPerEntryRss: +(rssBytes / entries).toFixed(1),
      bytesPerEntryTypedArrays: +(tree.memoryBytes() / entries).toFixed(1),
      targetBytesPerEntry: 100,
    },
    dump: {
      events: dump.length,
      dumpMs: +dumpMs.toFixed(1),
      replayMs: +replayMs.toFixed(1),
      replicaEqual,
    },
    findMatches: {
      "8k prefix hit + new tail": latency(tree, q8kPrefix, 5),
      "8k exact repeat": latency(tree, q8kRepeat, 5),
      "128k full document": latency(tree, q128kFull, 50),
      "128k half document": latency(tree, q128kHalf, 50),
      targetP99Us8k: 100,
    },
  };
  return result;
}

if (import.meta.main) {
  const e = process.argv.indexOf("--entries");
  const wk = process.argv.indexOf("--workers");
  const result = await runIndexBench({
    entries: e > 0 ? Number(process.argv[e + 1]) : undefined,
    tiers: process.argv.includes("--tiers"),
    workers: wk > 0 ? Number(process.argv[wk + 1]) : undefined,
  });
  console.log(JSON.stringify(result, null, 2));
  const i = process.argv.indexOf("--json");
  if (i > 0 && process.argv[i + 1]) {
    await Bun.write(process.argv[i + 1]!, JSON.stringify(result, null, 2) + "\n");
    console.log(`wrote ${process.argv[i + 1]}`);
  }
}
