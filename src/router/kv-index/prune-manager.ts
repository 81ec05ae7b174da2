/**
 * TTL timers and size pruning for the approximate index (Dynamo's approximate mode and its PruneManager).
 *
 * A timer is keyed by (worker slot, sequence hash) and carries its expiry and the block's
 * position in its sequence. `timers` is the source of truth; the min-heap is lazy: re-inserting
 * a key refreshes its expiry and pushes a new heap entry, leaving the old one stale (ignored
 * when popped: valid only if the timer still has exactly that expiry). The heap is rebuilt
 * from the timers when it grows past 50x their number.
 *
 * Pop order: earliest expiry first; on equal expiry (blocks of one routing decision) the
 * largest position first (leaves before their ancestors), then the larger key, then the larger
 * worker — Dynamo's max-heap over (Reverse(expiry), (seq_position, key, worker)).
 *
 * Heap and timer records are typed arrays; no object per block.
 */
import { U64Map } from "./u64-map.ts";

export interface PruneConfig {
  /** Time to live of a recorded block, ms. */
  readonly ttlMs: number;
  /** Above this many (block, worker) entries the index is pruned... */
  readonly maxTreeSize: number;
  /** ...down to floor(maxTreeSize * pruneTargetRatio). */
  readonly pruneTargetRatio: number;
}

export const DEFAULT_PRUNE_CONFIG: PruneConfig = {
  ttlMs: 120_000,
  maxTreeSize: 2 ** 20,
  pruneTargetRatio: 0.8,
};

/** Heap rebuild threshold: heap entries per live timer. */
export const HEAP_REBUILD_FACTOR = 50;

/**
 * After a rebuild forced by refreshes (hot prompts re-recorded), the heap shrinks only when far
 * too big: refreshes grow it back toward HEAP_REBUILD_FACTOR x the timers before the next
 * rebuild, and shrinking at 4x re-grew it by doubling every ~50 requests.
 */
const REFRESH_SHRINK_FACTOR = 16;
/** After a worker left, its heap entries' memory is given back: nothing grows it again soon. */
const LEAVE_SHRINK_FACTOR = 4;

/** Records and heap entries the arrays start with. */
const INITIAL = 256;

/** Called for each timer that fires or is pruned: (worker slot, hash lo, hash hi). */
export type TimerSink = (worker: number, lo: number, hi: number) => void;
/** Orders two worker slots as their (worker_id, dp_rank) (ties in the heap only). */
export type WorkerOrder = (a: number, b: number) => number;

export class PruneManager {
  /** Per worker slot: sequence hash -> timer record. */
  private timers: (U64Map | undefined)[] = [];
  private timerCount = 0;
  // Timer records (free list linked through recPos).
  private recExpiry = new Float64Array(256);
  private recPos = new Int32Array(256);
  private recFree = -1;
  private recNext = 0;
  // Heap entries.
  private hExpiry = new Float64Array(256);
  private hPos = new Int32Array(256);
  private hLo = new Uint32Array(256);
  private hHi = new Uint32Array(256);
  private hWorker = new Int32Array(256);
  private hSize = 0;

  constructor(
    readonly config: PruneConfig,
    private readonly workerOrder: WorkerOrder = (a, b) => a - b,
  ) {}

  /** Live timers. */
  get size(): number {
    return this.timerCount;
  }

  /** Heap entries, stale ones included. */
  get heapSize(): number {
    return this.hSize;
  }

  /** The expiry of (worker, lo, hi), or undefined. */
  expiryOf(worker: number, lo: number, hi: number): number | undefined {
    const r = this.timers[worker]?.get(lo, hi) ?? -1;
    return r < 0 ? undefined : this.recExpiry[r];
  }

  /** Earliest expiry in the heap (possibly of a stale entry), or undefined. */
  peekNextExpiry(): number | undefined {
    return this.hSize > 0 ? this.hExpiry[0] : undefined;
  }

  /** Set (or refresh) the timer of one block. Call endInsert() after a batch. */
  insert(worker: number, lo: number, hi: number, pos: number, expiry: number): void {
    let map = this.timers[worker];
    if (!map) map = this.timers[worker] = new U64Map();
    let r = map.get(lo, hi);
    if (r < 0) {
      r = this.allocRecord();
      map.set(lo, hi, r);
      this.timerCount++;
    }
    this.recExpiry[r] = expiry;
    this.recPos[r] = pos;
    this.push(expiry, pos, lo, hi, worker);
  }

  /** After a batch of inserts: drop stale heap entries when they pile up. */
  endInsert(): void {
    if (this.hSize > this.timerCount * HEAP_REBUILD_FACTOR) this.rebuild(REFRESH_SHRINK_FACTOR);
  }

  /** Remove every timer with expiry <= now, reporting each. */
  popExpired(now: number, sink: TimerSink): number {
    let fired = 0;
    while (this.hSize > 0 && this.hExpiry[0]! <= now) {
      if (this.popTop(sink)) fired++;
    }
    return fired;
  }

  /**
   * When currentSize > maxTreeSize, remove the oldest timers until currentSize - target have
   * gone (target = floor(maxTreeSize * ratio)) or none are left; returns how many.
   */
  prune(currentSize: number, sink: TimerSink): number {
    const { maxTreeSize, pruneTargetRatio } = this.config;
    if (currentSize <= maxTreeSize) return 0;
    const goal = currentSize - Math.floor(maxTreeSize * pruneTargetRatio);
    let pruned = 0;
    while (pruned < goal && this.hSize > 0) {
      if (this.popTop(sink)) pruned++;
    }
    return pruned;
  }

  /** Forget every timer of a worker slot (its heap entries turn stale). */
  removeWorker(worker: number): void {
    const map = this.timers[worker];
    if (!map) return;
    const recs = map.values();
    for (let i = 0; i < recs.length; i++) this.freeRecord(recs[i]!);
    this.timerCount -= recs.length;
    this.timers[worker] = undefined;
    // Its heap entries are stale now: rebuilt (and re-sized) once they are most of the heap,
    // so a worker that leaves does not leave its timers' memory behind.
    if (this.timerCount === 0) this.reset();
    else if (this.hSize > this.timerCount * 4) this.rebuild(LEAVE_SHRINK_FACTOR);
  }

  /** No timer left: every array back to its initial size. */
  private reset(): void {
    this.hSize = 0;
    if (this.recExpiry.length <= INITIAL && this.hExpiry.length <= INITIAL) return;
    this.recExpiry = new Float64Array(INITIAL);
    this.recPos = new Int32Array(INITIAL);
    this.recFree = -1;
    this.recNext = 0;
    this.hSize = 0;
    this.hExpiry = new Float64Array(INITIAL);
    this.hPos = new Int32Array(INITIAL);
    this.hLo = new Uint32Array(INITIAL);
    this.hHi = new Uint32Array(INITIAL);
    this.hWorker = new Int32Array(INITIAL);
  }

  // ------------------------------------------------------------------ internals

  /** Pop the heap top; report and delete its timer when the entry is valid. */
  private popTop(sink: TimerSink): boolean {
    const expiry = this.hExpiry[0]!;
    const lo = this.hLo[0]!;
    const hi = this.hHi[0]!;
    const worker = this.hWorker[0]!;
    this.removeTop();
    const map = this.timers[worker];
    if (!map) return false;
    const r = map.get(lo, hi);
    if (r < 0 || this.recExpiry[r] !== expiry) return false; // stale
    map.delete(lo, hi);
    this.freeRecord(r);
    if (--this.timerCount === 0) this.reset(); // whatever is left in the heap is stale
    sink(worker, lo, hi);
    return true;
  }

  private allocRecord(): number {
    if (this.recFree >= 0) {
      const r = this.recFree;
      this.recFree = this.recPos[r]!;
      return r;
    }
    if (this.recNext === this.recExpiry.length) {
      const cap = this.recExpiry.length * 2;
      this.recExpiry = grow(this.recExpiry, new Float64Array(cap));
      this.recPos = grow(this.recPos, new Int32Array(cap));
    }
    return this.recNext++;
  }

  private freeRecord(r: number): void {
    this.recExpiry[r] = NaN;
    this.recPos[r] = this.recFree;
    this.recFree = r;
  }

  /** True when heap entry i pops before entry j. */
  private before(i: number, j: number): boolean {
    const ei = this.hExpiry[i]!;
    const ej = this.hExpiry[j]!;
    if (ei !== ej) return ei < ej;
    const pi = this.hPos[i]!;
    const pj = this.hPos[j]!;
    if (pi !== pj) return pi > pj;
    const hi = this.hHi[i]!;
    const hj = this.hHi[j]!;
    if (hi !== hj) return hi > hj;
    const li = this.hLo[i]!;
    const lj = this.hLo[j]!;
    if (li !== lj) return li > lj;
    return this.workerOrder(this.hWorker[i]!, this.hWorker[j]!) > 0;
  }

  private push(expiry: number, pos: number, lo: number, hi: number, worker: number): void {
    if (this.hSize === this.hExpiry.length) this.growHeap(this.hSize * 2);
    const i = this.hSize++;
    this.hExpiry[i] = expiry;
    this.hPos[i] = pos;
    this.hLo[i] = lo;
    this.hHi[i] = hi;
    this.hWorker[i] = worker;
    this.siftUp(i);
  }

  private removeTop(): void {
    const last = --this.hSize;
    if (last > 0) {
      this.move(last, 0);
      this.siftDown(0);
    }
  }

  private siftUp(i: number): void {
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.before(i, p)) return;
      this.swap(i, p);
      i = p;
    }
  }

  private siftDown(i: number): void {
    const n = this.hSize;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) return;
      const r = l + 1;
      const c = r < n && this.before(r, l) ? r : l;
      if (!this.before(c, i)) return;
      this.swap(i, c);
      i = c;
    }
  }

  private swap(i: number, j: number): void {
    const e = this.hExpiry[i]!;
    this.hExpiry[i] = this.hExpiry[j]!;
    this.hExpiry[j] = e;
    const p = this.hPos[i]!;
    this.hPos[i] = this.hPos[j]!;
    this.hPos[j] = p;
    const lo = this.hLo[i]!;
    this.hLo[i] = this.hLo[j]!;
    this.hLo[j] = lo;
    const hi = this.hHi[i]!;
    this.hHi[i] = this.hHi[j]!;
    this.hHi[j] = hi;
    const w = this.hWorker[i]!;
    this.hWorker[i] = this.hWorker[j]!;
    this.hWorker[j] = w;
  }

  private move(from: number, to: number): void {
    this.hExpiry[to] = this.hExpiry[from]!;
    this.hPos[to] = this.hPos[from]!;
    this.hLo[to] = this.hLo[from]!;
    this.hHi[to] = this.hHi[from]!;
    this.hWorker[to] = this.hWorker[from]!;
  }

  private growHeap(cap: number): void {
    this.hExpiry = grow(this.hExpiry, new Float64Array(cap));
    this.hPos = grow(this.hPos, new Int32Array(cap));
    this.hLo = grow(this.hLo, new Uint32Array(cap));
    this.hHi = grow(this.hHi, new Uint32Array(cap));
    this.hWorker = grow(this.hWorker, new Int32Array(cap));
  }

  /**
   * Replace the heap by one entry per live timer (Floyd's heapify). The arrays are re-sized
   * both ways (the stale entries that made them grow are gone now), shrunk once they are
   * more than `shrinkPast` times the size the live timers need.
   */
  private rebuild(shrinkPast: number): void {
    this.hSize = 0;
    const cap = Math.max(256, this.timerCount * 2);
    if (this.hExpiry.length < this.timerCount || this.hExpiry.length > shrinkPast * cap) {
      this.hExpiry = new Float64Array(cap);
      this.hPos = new Int32Array(cap);
      this.hLo = new Uint32Array(cap);
      this.hHi = new Uint32Array(cap);
      this.hWorker = new Int32Array(cap);
    }
    for (let w = 0; w < this.timers.length; w++) {
      this.timers[w]?.forEach((lo, hi, r) => {
        const i = this.hSize++;
        this.hExpiry[i] = this.recExpiry[r]!;
        this.hPos[i] = this.recPos[r]!;
        this.hLo[i] = lo;
        this.hHi[i] = hi;
        this.hWorker[i] = w;
      });
    }
    for (let i = (this.hSize >> 1) - 1; i >= 0; i--) this.siftDown(i);
  }
}

function grow<T extends Float64Array | Int32Array | Uint32Array>(from: T, to: T): T {
  to.set(from);
  return to;
}
