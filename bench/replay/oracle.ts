/**
 * Offline bounds on the prefix-cache hit rate, with no timing: what routing could achieve
 * with perfect information on the same trace and capacity. The online router is always
 * shown beside these.
 *  - ideal: one infinite cache sees the whole trace.
 *  - oracle: N workers with LRU caches; each request goes to the worker with the longest
 *    cached prefix among those whose request count stays within `balance` × the mean.
 *  - round-robin / random: the same caches, no cache awareness.
 */
import { fullBlockIds, type TraceRequest } from "./trace.ts";

/** An LRU set of block ids (Map iteration order is insertion order). */
class LruBlocks {
  private readonly map = new Map<number, true>();
  constructor(private readonly capacity: number) {}
  has(id: number): boolean {
    return this.map.has(id);
  }
  touch(id: number): void {
    if (this.map.has(id)) this.map.delete(id);
    this.map.set(id, true);
    if (this.map.size > this.capacity) {
      const oldest = this.map.keys().next().value as number;
      this.map.delete(oldest);
    }
  }
}

/** How many leading ids of `ids` the cache holds. */
export function prefixHits(cache: { has(id: number): boolean }, ids: readonly number[]): number {
  let n = 0;
  while (n < ids.length && cache.has(ids[n]!)) n++;
  return n;
}

export interface OfflineResult {
  readonly hitRate: number;
  readonly loadMaxOverMean: number;
  /** The worker (0-based) each request went to, in trace order: replayed in time by sim.ts for the oracle's own TTFT. */
  readonly assignment: readonly number[];
}

export function idealHitRate(trace: readonly TraceRequest[]): number {
  const seen = new Set<number>();
  let hits = 0;
  let total = 0;
  for (const r of trace) {
    const ids = fullBlockIds(r);
    hits += prefixHits(seen, ids);
    total += ids.length;
    for (const id of ids) seen.add(id);
  }
  return total ? hits / total : 0;
}

export type OfflinePolicy = "oracle" | "round-robin" | "random";

export function simulateOffline(
  trace: readonly TraceRequest[],
  policy: OfflinePolicy,
  workers: number,
  blocksPerWorker: number,
  opts: { balance?: number; seed?: number } = {},
): OfflineResult {
  const balance = opts.balance ?? 1.25;
  const caches = Array.from({ length: workers }, () => new LruBlocks(blocksPerWorker));
  const counts = new Array<number>(workers).fill(0);
  let rng = (opts.seed ?? 1) >>> 0 || 1;
  const random = () => {
    rng ^= rng << 13;
    rng >>>= 0;
    rng ^= rng >>> 17;
    rng ^= rng << 5;
    rng >>>= 0;
    return rng / 4294967296;
  };
  let hits = 0;
  let total = 0;
  const assignment: number[] = [];
  for (let i = 0; i < trace.length; i++) {
    const ids = fullBlockIds(trace[i]!);
    let w: number;
    if (policy === "round-robin") w = i % workers;
    else if (policy === "random") w = Math.floor(random() * workers);
    else {
      const limit = (balance * (i + 1)) / workers;
      let best = -1;
      let bestHits = -1;
      for (let c = 0; c < workers; c++) {
        if (counts[c]! + 1 > limit) continue;
        const h = prefixHits(caches[c]!, ids);
        // Longest prefix; ties to the least-loaded so the balance bound is rarely binding.
        if (h > bestHits || (h === bestHits && counts[c]! < counts[best]!)) {
          best = c;
          bestHits = h;
        }
      }
      w = best < 0 ? counts.indexOf(Math.min(...counts)) : best;
    }
    hits += prefixHits(caches[w]!, ids);
    total += ids.length;
    counts[w]!++;
    assignment.push(w);
    // Last block first, so the prefix ends up most recently used and the LRU end holds leaves,
    // as the simulated engine's cache (src/mocker/prefix-cache.ts) and vLLM's free-block order do.
    for (let k = ids.length - 1; k >= 0; k--) caches[w]!.touch(ids[k]!);
  }
  const mean = trace.length / workers;
  return {
    hitRate: total ? hits / total : 0,
    loadMaxOverMean: mean ? Math.max(...counts) / mean : 0,
    assignment,
  };
}
