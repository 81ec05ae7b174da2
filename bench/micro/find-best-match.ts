/**
 * The router's per-request routing overhead, end to end on the pure core:
 * hash (block hashes + sequence hashes) → match (precise radix tree) → schedule (kv policy).
 *
 *   bun bench/micro/find-best-match.ts [--json FILE] [--entries N]
 *
 * World: 64 workers, block size 16, a precise index of ≥ 1M (block, worker) entries built
 * from real token prompts (48 shared prefixes of 32–448 blocks + unique tails, 8k tokens
 * each), and 16 active requests booked per worker in the load tracker. Queries: 8k-token
 * prompts (512 blocks) that share a family prefix, and 128k-token prompts (8192 blocks)
 * that extend a cached document. Reported for the portable hashers and, when the C library
 * is built, the native ones (block and sequence hashes). Target (issue 2): p99 ≤ 100 µs at 8k tokens.
 */
import { parseArgs } from "node:util";
import { writeFileSync } from "node:fs";
import {
  computeBlockHashesWith,
  computeSeqHashes,
  computeSeqHashesWith,
  portableBatchHasher,
  seqHasherOf,
  type BatchBlockHasher,
} from "../../src/core/block-hash.ts";
import { RadixTree } from "../../src/router/kv-index/radix-tree.ts";
import { endpointsOf } from "../../src/router/choose/endpoints.ts";
import { schedulerConfig } from "../../src/router/choose/config.ts";
import { findBestMatch } from "../../src/router/choose/find-best-match.ts";
import { LoadTracker } from "../../src/router/books/load-tracker.ts";
import { createPipeline } from "../../src/router/choose/registry.ts";
import { loadNativeBlockHasher } from "../../src/runtime/bun/ffi-hasher.ts";
import { worker } from "../../src/core/ids.ts";
import { xorshift32 } from "../../test/support/prng.ts";
import { percentile } from "../replay/stats.ts";
import { mulberry32 } from "../../test/support/prng.ts";
import { concat, randomTokens as randomTokensFrom } from "../support/tokens.ts";

const WORKERS = 64;
const BS = 16;
const PROMPT = 8192;
const LONG = 131072;

const rand32 = xorshift32(0x2545f491);
const randomTokens = (n: number): Uint32Array => randomTokensFrom(n, rand32, 32000);

interface World {
  tree: RadixTree;
  tracker: LoadTracker;
  families: Uint32Array[];
  docs: Uint32Array[];
  buildMs: number;
}

function store(tree: RadixTree, w: number, tokens: Uint32Array): void {
  const local = computeBlockHashesWith(portableBatchHasher, tokens, BS);
  const seq = computeSeqHashes(local);
  // Engines emit events of 16 blocks chained by parent hash; the index sees the same.
  for (let i = 0; i < local.length; i += 16) {
    const end = Math.min(local.length, i + 16);
    tree.storeHashes(
      BigInt(w),
      0,
      i === 0 ? null : seq[i - 1]!,
      local.subarray(i, end),
      seq.subarray(i, end),
    );
  }
}

function buildWorld(entries: number): World {
  const t0 = performance.now();
  const tree = new RadixTree();
  const families = Array.from({ length: 48 }, (_, i) => randomTokens(BS * (32 + ((i * 37) % 417))));
  const docs = Array.from({ length: 4 }, () => randomTokens(LONG - 4096));
  docs.forEach((d, i) => [0, 1, 2].forEach((k) => store(tree, (i * 16 + k * 5) % WORKERS, d)));
  let n = 0;
  while (tree.size() < entries) {
    const w = n % WORKERS;
    const f = families[(w + (n >> 6) * 7) % families.length]!;
    store(tree, w, concat(f, randomTokens(PROMPT - f.length)));
    n++;
  }
  const tracker = new LoadTracker({ blockSize: BS });
  tracker.updateWorkers(Array.from({ length: WORKERS }, (_, i) => worker(i)));
  let id = 0;
  for (let w = 0; w < WORKERS; w++) {
    for (let k = 0; k < 16; k++) {
      const toks = concat(families[(w + k) % families.length]!, randomTokens(1024));
      const seq = computeSeqHashes(computeBlockHashesWith(portableBatchHasher, toks, BS));
      tracker.addRequest(
        {
          requestId: `bg-${id++}`,
          worker: worker(w),
          seqHashes: seq,
          isl: toks.length,
          overlap: 0,
        },
        0,
      );
      if (k % 2 === 0) tracker.markPrefillCompleted(`bg-${id - 1}`, 0);
    }
  }
  return { tree, tracker, families, docs, buildMs: performance.now() - t0 };
}

interface Phases {
  hash: Float64Array;
  match: Float64Array;
  schedule: Float64Array;
  total: Float64Array;
}

function measure(
  world: World,
  hasher: BatchBlockHasher,
  queries: Uint32Array[],
  rounds: number,
): Record<string, { p50: number; p99: number }> {
  const config = schedulerConfig({ blockSize: BS });
  const pipeline = createPipeline("kv", config);
  const endpoints = endpointsOf(
    Array.from({ length: WORKERS }, (_, i) => ({ workerId: BigInt(i) })),
  );
  const rng = mulberry32(1);
  const n = queries.length * rounds;
  const ph: Phases = {
    hash: new Float64Array(n),
    match: new Float64Array(n),
    schedule: new Float64Array(n),
    total: new Float64Array(n),
  };
  const seqHasher = seqHasherOf(hasher);
  let i = 0;
  for (let round = 0; round < rounds; round++) {
    for (const q of queries) {
      const t0 = performance.now();
      const local = computeBlockHashesWith(hasher, q, BS);
      const seq = computeSeqHashesWith(seqHasher, local);
      const t1 = performance.now();
      const overlaps = world.tree.findMatches(local);
      const t2 = performance.now();
      findBestMatch({
        overlaps,
        seqHashes: seq,
        isl: q.length,
        endpoints,
        tracker: world.tracker,
        pipeline,
        config,
        now: 1,
        rng,
      });
      const t3 = performance.now();
      ph.hash[i] = (t1 - t0) * 1000;
      ph.match[i] = (t2 - t1) * 1000;
      ph.schedule[i] = (t3 - t2) * 1000;
      ph.total[i] = (t3 - t0) * 1000;
      i++;
    }
  }
  const out: Record<string, { p50: number; p99: number }> = {};
  for (const [k, v] of Object.entries(ph) as [keyof Phases, Float64Array][]) {
    const s = v.slice(0, i).sort();
    out[k] = { p50: percentile(s, 50), p99: percentile(s, 99) };
  }
  return out;
}

export async function runFindBestMatchBench(
  opts: { entries?: number } = {},
): Promise<Record<string, unknown>> {
  const world = buildWorld(opts.entries ?? 1_000_000);
  const q8k = Array.from({ length: 64 }, (_, i) => {
    const f = world.families[(i * 5) % world.families.length]!;
    return concat(f, randomTokens(PROMPT - f.length));
  });
  const q128k = world.docs.map((d) => concat(d, randomTokens(LONG - d.length)));
  const native = loadNativeBlockHasher();
  const hashers: [string, BatchBlockHasher][] = [["portable", portableBatchHasher]];
  if (native) hashers.push(["native", native]);
  const results: Record<string, unknown> = {};
  for (const [name, h] of hashers) {
    measure(world, h, q8k, 20); // warm-up: let the JIT reach its optimizing tier
    results[`8k/${name}`] = measure(world, h, q8k, 60);
    results[`128k/${name}`] = measure(world, h, q128k, 15);
  }
  return {
    workers: WORKERS,
    block_size: BS,
    indexed_entries: world.tree.size(),
    build_ms: Math.round(world.buildMs),
    native_hasher: native !== undefined,
    latency_us: results,
  };
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: { json: { type: "string" }, entries: { type: "string" } },
  });
  const r = await runFindBestMatchBench({
    entries: values.entries ? Number(values.entries) : undefined,
  });
  console.log(
    `find-best-match: ${r.workers} workers, ${r.indexed_entries} indexed entries, block size ${r.block_size}`,
  );
  console.log("case            phase       p50 µs    p99 µs");
  for (const [k, v] of Object.entries(
    r.latency_us as Record<string, Record<string, { p50: number; p99: number }>>,
  )) {
    for (const [phase, x] of Object.entries(v))
      console.log(
        `${k.padEnd(15)} ${phase.padEnd(9)} ${x.p50.toFixed(1).padStart(9)} ${x.p99.toFixed(1).padStart(9)}`,
      );
  }
  if (values.json) writeFileSync(values.json, JSON.stringify(r, null, 2));
}
