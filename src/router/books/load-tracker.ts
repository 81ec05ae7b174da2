/**
 * Active load across all (worker, dp_rank) slots (Dynamo's ActiveSequencesMultiWorker, Dynamo
 * `ActiveSequencesMultiWorker`): which slot each request was booked on, the per-slot
 * ActiveSequences, the potential load of a new request everywhere, load snapshots for
 * metrics, and the replica-sync seam (local events out through `onLocalEvent`, remote
 * events in through `applyRemote`). It books and releases load; it never chooses a worker.
 * PURE: `now` is milliseconds, passed in; the output-block rng is passed in.
 */
import { RouterError } from "../../core/errors.ts";
import {
  keyOf,
  parseWorkerKey,
  type WorkerId,
  type WorkerKey,
  type WorkerWithDpRank,
} from "../../core/ids.ts";
import type { OverlapScores } from "../../core/overlap.ts";
import { ActiveSequences } from "./active-sequences.ts";
import { BlockRefs } from "./block-refs.ts";
import { u32Halves } from "./hash64-table.ts";
import type { ActiveSequenceEvent, ActiveSequenceEventData } from "./sequence-events.ts";
import type { Rng } from "../../core/rng.ts";

export interface TrackedRequest {
  readonly requestId: string;
  readonly worker: WorkerWithDpRank;
  /** Sequence hashes of the prompt's full blocks (Dynamo's compute_seq_hashes_for_tracking); null when blocks are not tracked. */
  readonly seqHashes: BigUint64Array | null;
  readonly isl: number;
  /** Prompt blocks cached on that worker when it was chosen. */
  readonly overlap: number;
  readonly loraName?: string;
}

/** A slot's current load (Dynamo `ActiveLoad` plus the request count). */
export interface WorkerLoad {
  readonly key: WorkerKey;
  readonly worker: WorkerWithDpRank;
  readonly activePrefillTokens: number;
  readonly activeDecodeBlocks: number;
  readonly activeRequests: number;
}

/** A slot's load if one more request went there (Dynamo's ActiveSequences::potential_blocks_and_tokens). */
export interface PotentialLoad {
  readonly decodeBlocks: number;
  readonly prefillTokens: number;
}

export interface LoadTrackerOptions {
  readonly blockSize: number;
  /** This router's id in replica-sync events (default 0). */
  readonly routerId?: bigint;
  /**
   * Called after each local add / prefill-completed / free, e.g. to publish to replicas; a
   * local request dropped by the 300 s expiry or with its slot (removeWorker, updateWorkers)
   * is reported as a free too. Must not throw.
   */
  readonly onLocalEvent?: (event: ActiveSequenceEvent) => void;
}

interface Slot {
  readonly worker: WorkerWithDpRank;
  readonly seqs: ActiveSequences;
  /** No longer tracked (a cached lookup must not return it). */
  dropped: boolean;
}

/**
 * How many let-go request ids knowsRequest remembers: a burst claim lives for its window (100 ms
 * by default), and 4,096 requests freed within one window is ~40,000 requests a second.
 */
const LET_GO_KEPT = 4096;

const FREE: ActiveSequenceEventData = { type: "free" };
const PREFILL_DONE: ActiveSequenceEventData = { type: "mark_prefill_completed" };

export class LoadTracker {
  readonly blockSize: number;
  readonly routerId: bigint;
  onLocalEvent: ((event: ActiveSequenceEvent) => void) | undefined;
  readonly #refs = new BlockRefs();
  readonly #slots = new Map<WorkerKey, Slot>();
  /** Each worker's slot keys, so one worker leaves without a walk over every slot. */
  readonly #keysOf = new Map<WorkerId, Set<WorkerKey>>();
  /** Slot by worker object: callers pass the same endpoint objects again and again, and this skips formatting the key. */
  readonly #slotByWorker = new WeakMap<WorkerWithDpRank, Slot>();
  readonly #requestSlot = new Map<string, Slot>();
  readonly #requestLora = new Map<string, string>();
  /** Requests booked through applyRemote: their drops are the origin's to announce, not ours. */
  readonly #remote = new Set<string>();
  /**
   * The latest requests let go of (freed, expired, dropped with their slot), this router's by id
   * and the others' by remoteRequestKey, oldest first, at most LET_GO_KEPT: a burst claim
   * (burst-claims.ts) for one of them is not unseen load, though the books no longer hold it.
   */
  readonly #letGo = new Set<string>();
  /** Each rank's KV capacity in blocks, as its engine reported it; kept for a slot created later. */
  readonly #kvCapacity = new Map<WorkerKey, number>();
  #held = new Int32Array(0);

  constructor(opts: LoadTrackerOptions) {
    if (!(opts.blockSize >= 1)) throw new Error(`block size must be >= 1, got ${opts.blockSize}`);
    this.blockSize = opts.blockSize;
    this.routerId = opts.routerId ?? 0n;
    this.onLocalEvent = opts.onLocalEvent;
  }

  // ------------------------------------------------------------ membership

  /**
   * Track exactly these slots (given as workers or "worker:rank" keys): new ones start
   * empty, remaining ones keep their state, the rest are dropped with their requests.
   */
  updateWorkers(targets: Iterable<WorkerWithDpRank | WorkerKey>): void {
    const wanted = new Map<WorkerKey, WorkerWithDpRank>();
    for (const t of targets) {
      const w = typeof t === "string" ? parseWorkerKey(t) : t;
      wanted.set(keyOf(w), w);
    }
    for (const key of [...this.#slots.keys()]) if (!wanted.has(key)) this.#dropSlot(key);
    for (const [key, w] of wanted) this.#ensure(key, w);
  }

  /** Track these slots too (external routing); never removes. */
  addWorkers(targets: Iterable<WorkerWithDpRank | WorkerKey>): void {
    for (const t of targets) {
      const w = typeof t === "string" ? parseWorkerKey(t) : t;
      this.#ensure(keyOf(w), w);
    }
  }

  /** Drop every dp rank of a worker, freeing its requests. */
  removeWorker(workerId: WorkerId): void {
    const keys = this.#keysOf.get(workerId);
    if (keys !== undefined) for (const key of [...keys]) this.#dropSlot(key);
    for (const key of [...this.#kvCapacity.keys()])
      if (parseWorkerKey(key).workerId === workerId) this.#kvCapacity.delete(key);
  }

  /**
   * A rank's KV capacity in blocks, as its engine reported it (undefined: it did not say, and
   * in-flight prefixes are credited whole). The time-based kv credits a prefix only as
   * far as the engine can keep it (ActiveSequences.keptWhenItStarts).
   */
  setKvCapacity(worker: WorkerWithDpRank, blocks: number | undefined): void {
    const key = keyOf(worker);
    if (blocks === undefined || !(blocks >= 0)) this.#kvCapacity.delete(key);
    else this.#kvCapacity.set(key, blocks);
    const slot = this.#slots.get(key);
    if (slot) slot.seqs.kvCapacityBlocks = this.#kvCapacity.get(key);
  }

  /** A rank's KV capacity in blocks as its engine reported it; undefined: unknown. */
  kvCapacity(key: WorkerKey): number | undefined {
    return this.#kvCapacity.get(key);
  }

  hasWorker(key: WorkerKey): boolean {
    return this.#slots.has(key);
  }

  workers(): WorkerWithDpRank[] {
    return [...this.#slots.values()].map((s) => s.worker);
  }

  /** Bumped whenever a slot is added or dropped, so callers may cache slotOf() results (candidates.ts). */
  get slotsVersion(): number {
    return this.#slotsVersion;
  }
  #slotsVersion = 0;

  #ensure(key: WorkerKey, worker: WorkerWithDpRank): Slot {
    let slot = this.#slots.get(key);
    if (!slot) {
      this.#slotsVersion++;
      slot = {
        worker: { workerId: worker.workerId, dpRank: worker.dpRank },
        seqs: new ActiveSequences(this.blockSize, this.#refs),
        dropped: false,
      };
      slot.seqs.kvCapacityBlocks = this.#kvCapacity.get(key);
      this.#slots.set(key, slot);
      let keys = this.#keysOf.get(worker.workerId);
      if (keys === undefined) this.#keysOf.set(worker.workerId, (keys = new Set()));
      keys.add(key);
    }
    return slot;
  }

  #dropSlot(key: WorkerKey): void {
    const slot = this.#slots.get(key);
    if (!slot) return;
    const ids = [...slot.seqs.requestIds()];
    slot.seqs.clear();
    for (const id of ids) this.#dropped(slot, id);
    this.#refs.releaseSlot(slot.seqs.slot);
    this.#slots.delete(key);
    const keys = this.#keysOf.get(slot.worker.workerId);
    keys?.delete(key);
    if (keys?.size === 0) this.#keysOf.delete(slot.worker.workerId);
    slot.dropped = true;
    this.#slotsVersion++;
  }

  /** The tracked slot of a worker, or undefined. */
  #slotOf(w: WorkerWithDpRank): Slot | undefined {
    const cached = this.#slotByWorker.get(w);
    if (cached !== undefined && !cached.dropped) return cached;
    const slot = this.#slots.get(keyOf(w));
    if (slot !== undefined) this.#slotByWorker.set(w, slot);
    return slot;
  }

  #unmap(requestId: string): void {
    this.#letGo.add(requestId);
    if (this.#letGo.size > LET_GO_KEPT) this.#letGo.delete(this.#letGo.values().next().value!);
    this.#requestSlot.delete(requestId);
    this.#requestLora.delete(requestId);
    this.#remote.delete(requestId);
  }

  /**
   * A request the tracker let go of by itself (expiry, slot dropped; its load is already
   * released): forget it and, when it was booked here, tell the replicas with a free.
   */
  #dropped(slot: Slot, requestId: string): void {
    const local = !this.#remote.has(requestId);
    const lora = this.#requestLora.get(requestId) ?? null;
    this.#unmap(requestId);
    if (local) this.#emit(requestId, slot.worker, lora, FREE);
  }

  // ------------------------------------------------------------ request lifecycle

  /**
   * Book a request on its worker. Throws RouterError `worker_not_found` (slot not tracked)
   * or `duplicate_request` (id already active). Returns the ids that expired meanwhile.
   */
  addRequest(req: TrackedRequest, now: number): string[] {
    const slot = this.#slotOf(req.worker);
    if (!slot)
      throw new RouterError("worker_not_found", `worker ${keyOf(req.worker)} is not tracked`);
    if (this.#requestSlot.has(req.requestId))
      throw new RouterError("duplicate_request", `request ${req.requestId} is already active`);
    const expired = this.#book(slot, req, now);
    // Without a listener (no replicas) the event is not even built. The wire's expected
    // output is always null: nothing on the request path predicts a request's output length.
    if (this.onLocalEvent !== undefined) {
      this.#emit(req.requestId, slot.worker, req.loraName ?? null, {
        type: "add_request",
        tokenSequence: req.seqHashes,
        isl: req.isl,
        overlap: req.overlap,
        expectedOutputTokens: null,
      });
    }
    return expired;
  }

  #book(slot: Slot, req: TrackedRequest, now: number): string[] {
    this.#requestSlot.set(req.requestId, slot);
    if (req.loraName !== undefined) this.#requestLora.set(req.requestId, req.loraName);
    const expired = slot.seqs.add(req, now) ?? [];
    for (const id of expired) this.#dropped(slot, id);
    return expired;
  }

  /** The prompt is computed (first token seen). False for an unknown id. */
  markPrefillCompleted(requestId: string, now: number): boolean {
    const slot = this.#requestSlot.get(requestId);
    if (!slot) return false;
    slot.seqs.markPrefillCompleted(requestId, now);
    this.#emit(requestId, slot.worker, this.#requestLora.get(requestId) ?? null, PREFILL_DONE);
    return true;
  }

  /** Release a request (end, error, abort). Idempotent: false for an unknown id. */
  free(requestId: string, _now: number): boolean {
    const slot = this.#requestSlot.get(requestId);
    if (!slot) return false;
    const lora = this.#requestLora.get(requestId) ?? null;
    slot.seqs.free(requestId);
    this.#unmap(requestId);
    this.#emit(requestId, slot.worker, lora, FREE);
    return true;
  }

  /** One more generated block (local only, never replicated). False for an unknown id. */
  addOutputBlock(requestId: string, decayFraction: number | undefined, rng: Rng): boolean {
    const slot = this.#requestSlot.get(requestId);
    return slot ? slot.seqs.addOutputBlock(requestId, decayFraction, rng) : false;
  }

  /** Free requests older than 300 s on every slot (each slot scans at most every 30 s). */
  forceExpiry(now: number): string[] {
    const expired: string[] = [];
    for (const slot of this.#slots.values()) {
      for (const id of slot.seqs.forceExpiry(now)) {
        this.#dropped(slot, id);
        expired.push(id);
      }
    }
    return expired;
  }

  #emit(
    requestId: string,
    worker: WorkerWithDpRank,
    loraName: string | null,
    data: ActiveSequenceEventData,
  ): void {
    this.onLocalEvent?.({ requestId, worker, data, routerId: this.routerId, loraName });
  }

  // ------------------------------------------------------------ replica sync

  /**
   * Apply another router's event. Own events (same routerId), adds for untracked slots or
   * known ids, and frees of unknown ids are ignored. Returns whether state changed.
   */
  applyRemote(ev: ActiveSequenceEvent, now: number): boolean {
    if (ev.routerId === this.routerId) return false;
    const d = ev.data;
    // Keyed by origin too: ids are unique per router only (a client may name its own at
    // POST /v1/route), so another router's "r1" must not collide with ours or a third's.
    const id = remoteRequestKey(ev.routerId, ev.requestId);
    if (d.type === "add_request") {
      const slot = this.#slots.get(keyOf(ev.worker));
      if (!slot || this.#requestSlot.has(id)) return false;
      this.#remote.add(id);
      this.#book(
        slot,
        {
          requestId: id,
          worker: ev.worker,
          seqHashes: d.tokenSequence,
          isl: d.isl,
          overlap: d.overlap,
          loraName: ev.loraName ?? undefined,
        },
        now,
      );
      return true;
    }
    const slot = this.#requestSlot.get(id);
    if (!slot) return false;
    if (d.type === "mark_prefill_completed") slot.seqs.markPrefillCompleted(id, now);
    else {
      slot.seqs.free(id);
      this.#unmap(id);
    }
    return true;
  }

  // ------------------------------------------------------------ queries

  hasRequest(requestId: string): boolean {
    return this.#requestSlot.has(requestId);
  }

  /**
   * Whether these books hold, or held lately, request `requestId` of router `routerId` (this
   * router's own when it is ours, else one synced from it).
   */
  knowsRequest(routerId: bigint, requestId: string): boolean {
    const id = routerId === this.routerId ? requestId : remoteRequestKey(routerId, requestId);
    return this.#requestSlot.has(id) || this.#letGo.has(id);
  }

  /** Whether router `routerId`'s request `requestId` (applied through applyRemote) is booked here. */
  hasRemoteRequest(routerId: bigint, requestId: string): boolean {
    return this.#requestSlot.has(remoteRequestKey(routerId, requestId));
  }

  /** Where a request was booked. */
  workerOf(requestId: string): WorkerWithDpRank | undefined {
    return this.#requestSlot.get(requestId)?.worker;
  }

  /** The per-slot sequences (undefined when the slot is not tracked). */
  slotOf(key: WorkerKey): ActiveSequences | undefined {
    return this.#slots.get(key)?.seqs;
  }

  activeBlocks(key: WorkerKey): number {
    return this.#slots.get(key)?.seqs.activeBlocks() ?? 0;
  }

  /** Booked prefill tokens (`now` is unused: prefill load does not decay; the callers still pass it). */
  activeTokens(key: WorkerKey, _now?: number): number {
    return this.#slots.get(key)?.seqs.activeTokens() ?? 0;
  }

  activeRequests(key: WorkerKey): number {
    return this.#slots.get(key)?.seqs.activeRequests ?? 0;
  }

  /** Current load of every tracked slot, for metrics and /v1/workers (`now` is unused, as in activeTokens). */
  loads(_now?: number): WorkerLoad[] {
    const out: WorkerLoad[] = [];
    for (const [key, s] of this.#slots) {
      out.push({
        key,
        worker: s.worker,
        activePrefillTokens: s.seqs.activeTokens(),
        activeDecodeBlocks: s.seqs.activeBlocks(),
        activeRequests: s.seqs.activeRequests,
      });
    }
    return out;
  }

  /** In-flight requests per LoRA adapter name. */
  activeLoraCounts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const name of this.#requestLora.values()) counts.set(name, (counts.get(name) ?? 0) + 1);
    return counts;
  }

  /**
   * For each slot index, how many of these hashes it already holds (index with
   * `slotOf(key).slot`). One probe per hash for all slots. The array is scratch: valid
   * until the next call.
   */
  heldCounts(seqHashes: BigUint64Array | null): Int32Array {
    const cap = this.#refs.slotCapacity;
    if (this.#held.length !== cap) this.#held = new Int32Array(cap);
    else this.#held.fill(0);
    if (seqHashes && seqHashes.length > 0)
      this.#refs.countHeld(u32Halves(seqHashes), seqHashes.length, this.#held);
    return this.#held;
  }

  /**
   * heldCounts for a prompt's sequence hashes (each chains its whole prefix): the same counts,
   * found with O(log n) probes per stretch of equal holders (BlockRefs.countHeldPrefix) instead
   * of one per block. The array is scratch: valid until the next call.
   */
  heldPrefixCounts(seqHashes: BigUint64Array | null): Int32Array {
    const cap = this.#refs.slotCapacity;
    if (this.#held.length !== cap) this.#held = new Int32Array(cap);
    else this.#held.fill(0);
    if (seqHashes && seqHashes.length > 0)
      this.#refs.countHeldPrefix(u32Halves(seqHashes), seqHashes.length, this.#held);
    return this.#held;
  }

  /**
   * What every tracked slot would carry with this request added (Dynamo's ActiveSequences):
   * decodeBlocks = new blocks + active blocks, prefillTokens = max(0, isl − overlap·bs) + active tokens.
   */
  potentialBlocksAndTokens(
    seqHashes: BigUint64Array | null,
    isl: number,
    overlaps: OverlapScores,
    now: number,
  ): Map<WorkerKey, PotentialLoad> {
    const held = this.heldCounts(seqHashes);
    const n = seqHashes?.length ?? 0;
    const out = new Map<WorkerKey, PotentialLoad>();
    for (const [key, { seqs }] of this.#slots) {
      out.set(key, {
        decodeBlocks: n - held[seqs.slot]! + seqs.activeBlocks(),
        prefillTokens: seqs.newTokens(isl, overlaps.scores.get(key) ?? 0) + seqs.activeTokens(),
      });
    }
    return out;
  }

  /** Distinct (block, slot) pairs held: memory accounting for metrics and tests. */
  get heldBlockRefs(): number {
    return this.#refs.liveNodes;
  }
}

/**
 * The tracker's key for another router's request. A local id never starts with NUL (the
 * router's own ids are generated; a client's /v1/route request_id is refused with control
 * characters), so the two key spaces cannot meet.
 */
export function remoteRequestKey(routerId: bigint, requestId: string): string {
  return `\u0000${routerId}\u0000${requestId}`;
}
