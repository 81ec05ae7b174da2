/**
 * Where a LoRA request may go and where an adapter should be loaded: Dynamo's rendezvous
 * score and its LoRA filter as it behaves before its allocation controller has placed anything
 * (this router has no controller: adapters are loaded on demand instead).
 *
 * Rendezvous (highest-random-weight) hashing gives every adapter its own deterministic
 * order of workers: every router computes the same order from the same worker set, and
 * adding or removing one worker only moves the adapters whose top choice it was.
 */
import { xxh3_64 } from "../../core/xxh3.ts";
import { compareWorkers, keyOf, type WorkerWithDpRank } from "../../core/ids.ts";
import type { LoraStateTracker } from "./state-tracker.ts";

const utf8 = new TextEncoder();

/**
 * HRW score of (adapter, worker): xxh3_64 over the adapter name's UTF-8 bytes, 0xFF (as
 * Rust hashes a str), the worker id (u64 LE) and the dp rank (u32 LE). The layout follows
 * Dynamo's; the hash does not (it uses SipHash), so only TS routers agree with each other.
 */
export function hrwScore(loraName: string, worker: WorkerWithDpRank): bigint {
  return scoreWithName(utf8.encode(loraName), worker);
}

function scoreWithName(name: Uint8Array, worker: WorkerWithDpRank): bigint {
  const buf = new Uint8Array(name.length + 13);
  buf.set(name);
  buf[name.length] = 0xff;
  const view = new DataView(buf.buffer);
  view.setBigUint64(name.length + 1, BigInt.asUintN(64, worker.workerId), true);
  view.setUint32(name.length + 9, worker.dpRank >>> 0, true);
  return xxh3_64(buf);
}

/** Workers in the adapter's preference order: highest score first; ties: larger (id, rank). */
export function rankWorkers(
  loraName: string,
  workers: readonly WorkerWithDpRank[],
): WorkerWithDpRank[] {
  const name = utf8.encode(loraName);
  const scored = workers.map((w) => ({ w, s: scoreWithName(name, w) }));
  scored.sort((a, b) => (a.s !== b.s ? (a.s > b.s ? -1 : 1) : compareWorkers(b.w, a.w)));
  return scored.map((x) => x.w);
}

/** The first `n` workers of the adapter's HRW order (all of them when n ≥ |workers|). */
export function replicaSet(
  loraName: string,
  workers: readonly WorkerWithDpRank[],
  n: number,
): WorkerWithDpRank[] {
  return rankWorkers(loraName, workers).slice(0, Math.max(0, n));
}

/**
 * The candidates a request for `loraName` may use: those that have the adapter loaded, if
 * any; else all of them (the engine loads it on demand). This is Dynamo's filter with no
 * placement decided yet, which is always our case.
 * No adapter: the candidates unchanged. Never widens: the result is a subset of candidates.
 */
export function filterForLora(
  loraName: string | undefined,
  candidates: readonly WorkerWithDpRank[],
  tracker: LoraStateTracker,
): readonly WorkerWithDpRank[] {
  if (!loraName) return candidates;
  const loaded = candidates.filter((w) => tracker.isLoaded(loraName, w));
  return loaded.length > 0 ? loaded : candidates;
}

/**
 * The worker to load `loraName` on: the highest-HRW candidate that has a free slot and does
 * not hold it yet. Undefined when no candidate has a free slot (see lruEvictionCandidate).
 * Workers whose capacity the tracker does not know have no free slot.
 */
export function placeAdapter(
  loraName: string,
  tracker: LoraStateTracker,
  candidates: readonly WorkerWithDpRank[],
): WorkerWithDpRank | undefined {
  const free = candidates.filter((w) => tracker.freeSlots(w) > 0 && !tracker.isLoaded(loraName, w));
  return free.length > 0 ? rankWorkers(loraName, free)[0] : undefined;
}

export interface Eviction {
  /** Where to unload `evict` and then load the requested adapter. */
  readonly worker: WorkerWithDpRank;
  readonly evict: string;
  /** When the evicted adapter was last used here; undefined: never, since it was loaded. */
  readonly lastUsedMs: number | undefined;
}

export interface EvictionOptions {
  /** Adapters that must stay (e.g. with requests in flight on that worker). */
  readonly isPinned?: (loraName: string, worker: WorkerWithDpRank) => boolean;
}

/**
 * For `--lora-evict`, when placeAdapter found no free slot: the least recently used adapter
 * on any candidate with a known capacity (never-used adapters first). Ties go to the worker
 * the requested adapter prefers (HRW), then to the adapter name. Candidates that already
 * hold `loraName` are skipped, as are pinned adapters. Undefined when nothing can be evicted.
 */
export function lruEvictionCandidate(
  loraName: string,
  tracker: LoraStateTracker,
  candidates: readonly WorkerWithDpRank[],
  opts: EvictionOptions = {},
): Eviction | undefined {
  const eligible = candidates.filter(
    (w) => (tracker.capacity(w) ?? 0) > 0 && !tracker.isLoaded(loraName, w),
  );
  const preference = new Map(rankWorkers(loraName, eligible).map((w, i) => [keyOf(w), i]));
  let best: (Eviction & { rank: number }) | undefined;
  for (const w of eligible) {
    const rank = preference.get(keyOf(w))!;
    for (const victim of tracker.lorasOn(w)) {
      if (opts.isPinned?.(victim, w)) continue;
      const lastUsedMs = tracker.lastUsedMs(victim, w);
      const candidate = { worker: w, evict: victim, lastUsedMs, rank };
      if (!best || olderFirst(candidate, best) < 0) best = candidate;
    }
  }
  if (!best) return undefined;
  return { worker: best.worker, evict: best.evict, lastUsedMs: best.lastUsedMs };
}

function olderFirst(a: Eviction & { rank: number }, b: Eviction & { rank: number }): number {
  const ta = a.lastUsedMs ?? -Infinity;
  const tb = b.lastUsedMs ?? -Infinity;
  if (ta !== tb) return ta < tb ? -1 : 1;
  if (a.rank !== b.rank) return a.rank - b.rank;
  return a.evict < b.evict ? -1 : a.evict > b.evict ? 1 : 0;
}
