/**
 * Hits in an external KV pool shared by all workers (spec §1.9 `SharedCacheHits`, e.g.
 * HiCache/Mooncake): which prompt blocks the pool holds, as sorted, disjoint, half-open
 * block ranges. The kv cost credits blocks found there beyond a worker's own prefix.
 */
export interface SharedCacheHits {
  /** Sorted, disjoint [start, end) block ranges. */
  readonly ranges: readonly (readonly [number, number])[];
}

/** How many blocks at positions ≥ p the ranges cover. */
export function hitsBeyond(hits: SharedCacheHits, p: number): number {
  let n = 0;
  for (const [start, end] of hits.ranges) if (end > p) n += end - Math.max(start, p);
  return n;
}
