/**
 * Interning of (worker_id, dp_rank, medium) to a small integer slot, so the tree can keep
 * holder membership as a bitset column per slot and never hashes a bigint on the hot path.
 *
 * A slot owns the holder's lookup (engine block hash -> node) and its extra-alias counts. The
 * medium is part of the holder: an engine's GPU and its CPU tier are two slots with two lookups
 * (vLLM and SGLang name a block by the same hash on every medium). An engine that reports only
 * GPU has only GPU slots, exactly as before tiers. Slots of removed workers are reused (lowest
 * first), which keeps the bitset narrow.
 */
import type { KvMedium } from "../../core/events.ts";
import type { DpRank, WorkerId, WorkerKey } from "../../core/ids.ts";
import { workerKey } from "../../core/ids.ts";
import { U64BucketMap } from "./u64-bucket-map.ts";
import { splitInto } from "./u64-split.ts";
import { WorkerKeyTable } from "./worker-key-table.ts";

export interface WorkerSlot {
  readonly index: number;
  readonly workerId: WorkerId;
  readonly dpRank: DpRank;
  readonly medium: KvMedium;
  /** The (worker, dp rank) key: the same for every medium of one rank. */
  readonly key: WorkerKey;
  /** Engine block hash -> node id. Its size is the worker's block count. */
  blocks: U64BucketMap;
  /**
   * node id -> number of EXTRA hashes this worker holds the node under (an engine that
   * reports one (parent, tokens) block under two hashes, e.g. two physical copies). The node
   * stays held until its last alias is removed. null while there are none (the usual case).
   */
  aliases: Map<number, number> | null;
  /**
   * Tiers only: engine hash -> announcements of it beyond the first. vLLM's offloading events
   * re-announce a hash shared by two chunks once per chunk and remove it once per chunk
   * (offloading/events.py: "consumers are expected to deduplicate (reference-count)"), so the
   * block stays held until its last removal. null while there are none (the usual case).
   */
  repeats: Map<bigint, number> | null;
  /**
   * Tiers only: blocks per chunk of the chunks this slot holds by reference (vLLM's offloading
   * placeholders, StoredData.chunks), 0 when none. A chunk is keyed by its last block's hash and
   * span - 1 keys derived from it (radix-tree.ts chunkKey), so its removal finds every block.
   */
  chunkSpan: number;
}

/** Media as small codes: where a slot's key-table row lives, and the order of dumps. */
const MEDIUM_CODE: Record<KvMedium, number> = { gpu: 0, cpu: 1, disk: 2 };
const MEDIA_COUNT = 3;

const U64_MAX = 0xffff_ffff_ffff_ffffn;

function inU64(id: WorkerId): boolean {
  return id >= 0n && id <= U64_MAX;
}

export class WorkerSlots {
  /** By slot index; undefined for a free slot. */
  readonly bySlot: (WorkerSlot | undefined)[] = [];
  /** worker -> (rank * MEDIA_COUNT + medium code) -> slot. */
  private readonly byId = new Map<WorkerId, Map<number, WorkerSlot>>();
  private readonly free: number[] = [];
  /** The hot lookup, one table per medium: (worker id halves, rank) -> slot index, without hashing a bigint. */
  private readonly tables = Array.from({ length: MEDIA_COUNT }, () => new WorkerKeyTable());
  private readonly idWords = new Uint32Array(2);
  /** The last slot found: events come in runs from one worker. */
  private last: WorkerSlot | undefined;
  /** Slots of a CPU or disk tier: none means every engine reports only GPU. */
  tierSlots = 0;

  /** The slot of (workerId, dpRank, medium), or undefined. */
  find(workerId: WorkerId, dpRank: DpRank, medium: KvMedium = "gpu"): WorkerSlot | undefined {
    if (inU64(workerId)) {
      const w = this.idWords;
      splitInto(workerId, w, 0);
      const index = this.tables[MEDIUM_CODE[medium]]!.get(w[0]!, w[1]!, dpRank);
      if (index >= 0) {
        // Equal halves of an id in u64 are the same id (the table holds only such ids), so the
        // slot's own bigint need not be read: a cache miss on every event once the index is big.
        const found = this.bySlot[index]!;
        if (found.dpRank === dpRank) return found;
      }
    }
    return this.byId.get(workerId)?.get(rankMediumKey(dpRank, medium));
  }

  /** Every medium's slot of one (workerId, dpRank). */
  mediaOf(workerId: WorkerId, dpRank: DpRank): WorkerSlot[] {
    const ranks = this.byId.get(workerId);
    if (!ranks) return [];
    const out: WorkerSlot[] = [];
    for (let c = 0; c < MEDIA_COUNT; c++) {
      const s = ranks.get(dpRank * MEDIA_COUNT + c);
      if (s) out.push(s);
    }
    return out;
  }

  /** The slot of (workerId, dpRank, medium), created when missing. */
  intern(workerId: WorkerId, dpRank: DpRank, medium: KvMedium = "gpu"): WorkerSlot {
    const last = this.last;
    if (
      last !== undefined &&
      last.workerId === workerId &&
      last.dpRank === dpRank &&
      last.medium === medium
    )
      return last;
    const found = this.find(workerId, dpRank, medium);
    if (found) return (this.last = found);
    let ranks = this.byId.get(workerId);
    if (!ranks) {
      ranks = new Map();
      this.byId.set(workerId, ranks);
    }
    let index: number;
    if (this.free.length > 0) {
      // Lowest free index first: keeps the bitset stride small after churn.
      let best = 0;
      for (let i = 1; i < this.free.length; i++) if (this.free[i]! < this.free[best]!) best = i;
      index = this.free[best]!;
      this.free[best] = this.free[this.free.length - 1]!;
      this.free.pop();
    } else {
      index = this.bySlot.length;
    }
    const slot: WorkerSlot = {
      index,
      workerId,
      dpRank,
      medium,
      key: workerKey(workerId, dpRank),
      blocks: new U64BucketMap(),
      aliases: null,
      repeats: null,
      chunkSpan: 0,
    };
    this.bySlot[index] = slot;
    ranks.set(rankMediumKey(dpRank, medium), slot);
    if (medium !== "gpu") this.tierSlots++;
    if (inU64(workerId)) {
      // An id outside u64 would alias another's halves: only the Map knows those.
      const w = this.idWords;
      splitInto(workerId, w, 0);
      const table = this.tables[MEDIUM_CODE[medium]]!;
      if (table.get(w[0]!, w[1]!, dpRank) < 0) table.add(w[0]!, w[1]!, dpRank, index);
    }
    return (this.last = slot);
  }

  /** Every slot of a worker: each dp rank, each medium. */
  ranksOf(workerId: WorkerId): WorkerSlot[] {
    const ranks = this.byId.get(workerId);
    return ranks ? [...ranks.values()] : [];
  }

  /** Forget a slot; its index becomes reusable. The caller has emptied its bitset column. */
  release(slot: WorkerSlot): void {
    const ranks = this.byId.get(slot.workerId);
    const k = rankMediumKey(slot.dpRank, slot.medium);
    if (!ranks || ranks.get(k) !== slot) return;
    ranks.delete(k);
    if (slot.medium !== "gpu") this.tierSlots--;
    if (this.last === slot) this.last = undefined;
    if (ranks.size === 0) this.byId.delete(slot.workerId);
    this.bySlot[slot.index] = undefined;
    this.free.push(slot.index);
    const w = this.idWords;
    splitInto(slot.workerId, w, 0);
    this.tables[MEDIUM_CODE[slot.medium]]!.delete(w[0]!, w[1]!, slot.dpRank, slot.index);
    // Trailing free slots leave the span, so the holder bitsets can narrow again.
    const by = this.bySlot;
    while (by.length > 0 && by[by.length - 1] === undefined) {
      const index = by.length - 1;
      by.pop();
      const k = this.free.indexOf(index);
      this.free[k] = this.free[this.free.length - 1]!;
      this.free.pop();
    }
  }

  /** Live slots ordered by (worker_id, dp_rank, medium: GPU, CPU, disk). */
  sorted(): WorkerSlot[] {
    const out: WorkerSlot[] = [];
    for (const s of this.bySlot) if (s) out.push(s);
    out.sort((a, b) =>
      a.workerId !== b.workerId
        ? a.workerId < b.workerId
          ? -1
          : 1
        : a.dpRank - b.dpRank || MEDIUM_CODE[a.medium] - MEDIUM_CODE[b.medium],
    );
    return out;
  }

  /** One past the highest slot index in use (bitset width needed). */
  get span(): number {
    return this.bySlot.length;
  }
}

function rankMediumKey(dpRank: DpRank, medium: KvMedium): number {
  return dpRank * MEDIA_COUNT + MEDIUM_CODE[medium];
}
