/**
 * The last minutes of traffic in 10-second buckets, for the status page's small charts
 * (GET /debug/recent): requests, errors, the cache hit ratio beside the best any candidate
 * offered, TTFT p50 / p90, and each worker's requests (its share). Prometheus has all of this too; the page must work with no
 * Prometheus at all (a laptop, a first deployment), so the router keeps this much itself.
 * Fixed memory: BUCKETS buckets, each with at most TTFT_SAMPLES samples (a reservoir).
 */

export const BUCKET_MS = 10_000;
/** Ten minutes. */
export const BUCKETS = 60;
/** TTFT samples per bucket; past it, reservoir sampling keeps the quantiles honest. */
const TTFT_SAMPLES = 256;

interface Bucket {
  start: number;
  requests: number;
  errors: number;
  promptBlocks: number;
  cachedBlocks: number;
  bestBlocks: number;
  ttftSeen: number;
  ttft: number[];
  /** Requests each worker answered (routed requests only); as many keys as registered workers. */
  byWorker: Map<string, number>;
}

export interface RecentSample {
  readonly status: number;
  readonly ttftMs?: number;
  readonly blocks?: { readonly prompt: number; readonly cached: number; readonly best: number };
  /** The worker it was routed to (decimal id), for each worker's share of requests. */
  readonly worker?: string;
}

export class RecentStats {
  readonly #buckets: (Bucket | undefined)[] = new Array(BUCKETS);

  /** `clock`: ms since the epoch; `rng`: for the reservoir. */
  constructor(
    private readonly clock: () => number,
    private readonly rng: () => number = Math.random,
  ) {}

  add(s: RecentSample): void {
    const b = this.#bucket(this.clock());
    b.requests++;
    if (s.status >= 500) b.errors++;
    if (s.worker !== undefined) b.byWorker.set(s.worker, (b.byWorker.get(s.worker) ?? 0) + 1);
    if (s.blocks !== undefined) {
      b.promptBlocks += s.blocks.prompt;
      b.cachedBlocks += s.blocks.cached;
      b.bestBlocks += s.blocks.best;
    }
    if (s.ttftMs !== undefined) {
      b.ttftSeen++;
      if (b.ttft.length < TTFT_SAMPLES) b.ttft.push(s.ttftMs);
      else {
        const j = Math.floor(this.rng() * b.ttftSeen);
        if (j < TTFT_SAMPLES) b.ttft[j] = s.ttftMs;
      }
    }
  }

  /** Oldest first, one entry per bucket of the last BUCKETS × 10 s (empty buckets included, so charts keep their time axis). */
  series(): unknown[] {
    const now = this.clock();
    const current = Math.floor(now / BUCKET_MS) * BUCKET_MS;
    const out: unknown[] = [];
    for (let i = BUCKETS - 1; i >= 0; i--) {
      const start = current - i * BUCKET_MS;
      const b = this.#buckets[slot(start)];
      const live = b !== undefined && b.start === start;
      const ttft = live ? [...b.ttft].sort((x, y) => x - y) : [];
      out.push({
        time: new Date(start).toISOString(),
        requests: live ? b.requests : 0,
        errors: live ? b.errors : 0,
        hit_ratio: live && b.promptBlocks > 0 ? b.cachedBlocks / b.promptBlocks : null,
        ideal_hit_ratio: live && b.promptBlocks > 0 ? b.bestBlocks / b.promptBlocks : null,
        ttft_p50_ms: quantile(ttft, 0.5),
        ttft_p90_ms: quantile(ttft, 0.9),
      });
    }
    return out;
  }

  /** Requests each worker answered over the last `buckets` buckets (the newest included). */
  workerRequests(buckets: number): Record<string, number> {
    const current = Math.floor(this.clock() / BUCKET_MS) * BUCKET_MS;
    const out: Record<string, number> = {};
    for (let i = 0; i < Math.min(buckets, BUCKETS); i++) {
      const start = current - i * BUCKET_MS;
      const b = this.#buckets[slot(start)];
      if (b === undefined || b.start !== start) continue;
      for (const [w, n] of b.byWorker) out[w] = (out[w] ?? 0) + n;
    }
    return out;
  }

  #bucket(now: number): Bucket {
    const start = Math.floor(now / BUCKET_MS) * BUCKET_MS;
    const i = slot(start);
    let b = this.#buckets[i];
    if (b === undefined || b.start !== start) {
      b = {
        start,
        requests: 0,
        errors: 0,
        promptBlocks: 0,
        cachedBlocks: 0,
        bestBlocks: 0,
        ttftSeen: 0,
        ttft: [],
        byWorker: new Map(),
      };
      this.#buckets[i] = b;
    }
    return b;
  }
}

function slot(start: number): number {
  return Math.floor(start / BUCKET_MS) % BUCKETS;
}

function quantile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return Math.round(sorted[i]! * 10) / 10;
}
