/**
 * Approximate mode (Dynamo's approximate mode): no KV events; the router indexes its own routing decisions
 * and forgets them after a TTL, or earlier when the index outgrows its maximum size.
 *
 * recordDecision stores the request as a Stored event with parent None whose block hashes
 * are the router's sequence hashes (tokens_hash = local hash), into a RadixTree, and sets a
 * TTL timer per block (re-recording a block refreshes it). Time is the `now` passed in:
 * expire(now) removes what has expired; findMatches(hashes, now) and recordDecision(…, now)
 * expire first, so a caller without a timer still never sees stale entries. When the tree
 * holds more than maxTreeSize (block, worker) entries, the oldest are pruned (deepest block
 * of a decision first) down to maxTreeSize * pruneTargetRatio.
 *
 * Engine events given to applyEvent still apply to the tree (as in Dynamo's KvIndexer) but
 * carry no TTL; a Cleared also drops its (worker, dp_rank)'s timers.
 */
import type { KvEventStatus, RouterEvent } from "../../core/events.ts";
import type { DpRank, WorkerId, WorkerKey, WorkerWithDpRank } from "../../core/ids.ts";
import type { OverlapScores } from "../../core/overlap.ts";
import type { PruneConfig } from "./prune-manager.ts";
import { DEFAULT_PRUNE_CONFIG, PruneManager } from "./prune-manager.ts";
import { RadixTree } from "./radix-tree.ts";
import type { EventCounters, KvIndex } from "./types.ts";
import { wordsOf } from "./u64-split.ts";

export class ApproxIndex implements KvIndex {
  private readonly tree = new RadixTree();
  private readonly timers: PruneManager;
  private readonly removeTimed = (worker: number, lo: number, hi: number): void => {
    const slot = this.tree.slotAt(worker);
    if (slot) this.tree.removeHash(slot, lo, hi);
  };

  constructor(config: Partial<PruneConfig> = {}) {
    const full = { ...DEFAULT_PRUNE_CONFIG, ...config };
    if (
      !(full.ttlMs > 0) ||
      !(full.maxTreeSize >= 0) ||
      !(full.pruneTargetRatio >= 0 && full.pruneTargetRatio <= 1)
    ) {
      throw new RangeError(`invalid prune config ${JSON.stringify(full)}`);
    }
    this.timers = new PruneManager(full, (a, b) => {
      const x = this.tree.slotAt(a);
      const y = this.tree.slotAt(b);
      if (!x || !y) return a - b;
      return x.workerId !== y.workerId ? (x.workerId < y.workerId ? -1 : 1) : x.dpRank - y.dpRank;
    });
  }

  get config(): PruneConfig {
    return this.timers.config;
  }

  recordDecision(
    localHashes: BigUint64Array,
    seqHashes: BigUint64Array,
    target: WorkerWithDpRank,
    now: number,
  ): void {
    if (localHashes.length !== seqHashes.length)
      throw new RangeError("localHashes and seqHashes differ in length");
    this.expire(now);
    const n = localHashes.length;
    if (n === 0) return;
    const slot = this.tree.internSlot(target.workerId, target.dpRank);
    const seq = wordsOf(seqHashes);
    if (this.tree.storeChain(slot, false, 0, 0, wordsOf(localHashes), seq, n) !== "ok") return;
    const expiry = now + this.timers.config.ttlMs;
    // Deepest block first: blocks of one decision share an expiry and pop deepest first, so
    // pushed in this order each heap entry stays where it lands (in the other order each one
    // sifted up past its shallower siblings: ~log2(n) swaps per block, every request).
    for (let i = n - 1; i >= 0; i--)
      this.timers.insert(slot.index, seq[2 * i]!, seq[2 * i + 1]!, i, expiry);
    this.timers.endInsert();
    const size = this.tree.size();
    if (size > this.timers.config.maxTreeSize) this.timers.prune(size, this.removeTimed);
  }

  expire(now: number): void {
    this.timers.popExpired(now, this.removeTimed);
  }

  /** When the next timer fires (maybe a stale one): for a caller that schedules expire(). */
  nextExpiry(): number | undefined {
    return this.timers.peekNextExpiry();
  }

  findMatches(localHashes: BigUint64Array, now?: number): OverlapScores {
    if (now !== undefined) this.expire(now);
    return this.tree.findMatches(localHashes);
  }

  applyEvent(event: RouterEvent): KvEventStatus {
    if (event.event.data.type === "cleared") this.dropTimers(event.workerId, event.event.dpRank);
    return this.tree.applyEvent(event);
  }

  removeWorker(workerId: WorkerId): void {
    for (const w of this.tree.knownWorkers())
      if (w.workerId === workerId) this.dropTimers(w.workerId, w.dpRank);
    this.tree.removeWorker(workerId);
  }

  removeWorkerDpRank(workerId: WorkerId, dpRank: DpRank): void {
    this.dropTimers(workerId, dpRank);
    this.tree.removeWorkerDpRank(workerId, dpRank);
  }

  dump(): RouterEvent[] {
    return this.tree.dump();
  }

  size(): number {
    return this.tree.size();
  }

  workerSize(key: WorkerKey): number {
    return this.tree.workerSize(key);
  }

  counters(): EventCounters {
    return this.tree.counters();
  }

  nodeCount(): number {
    return this.tree.nodeCount();
  }

  /** Live TTL timers (one per recorded (block, worker)). */
  timerCount(): number {
    return this.timers.size;
  }

  private dropTimers(workerId: WorkerId, dpRank: DpRank): void {
    const slot = this.tree.slotOf(workerId, dpRank);
    if (slot) this.timers.removeWorker(slot.index);
  }
}
