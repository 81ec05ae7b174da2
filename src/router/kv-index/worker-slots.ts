/**
 * Interning of (worker_id, dp_rank) to a small integer slot, so the tree can keep worker
 * membership as a bitset column per slot and never hashes a bigint on the hot path.
 *
 * A slot owns the worker's lookup (engine block hash -> node) and its extra-alias counts.
 * Slots of removed workers are reused (lowest first), which keeps the bitset narrow.
 */
import type { DpRank, WorkerId, WorkerKey } from "../../core/ids.ts";
import { workerKey } from "../../core/ids.ts";
import { U64BucketMap } from "./u64-bucket-map.ts";
import { splitInto } from "./u64-split.ts";
import { WorkerKeyTable } from "./worker-key-table.ts";

export interface WorkerSlot {
  readonly index: number;
  readonly workerId: WorkerId;
  readonly dpRank: DpRank;
  readonly key: WorkerKey;
  /** Engine block hash -> node id. Its size is the worker's block count. */
  blocks: U64BucketMap;
  /**
   * node id -> number of EXTRA hashes this worker holds the node under (an engine that
   * reports one (parent, tokens) block under two hashes, e.g. two physical copies). The node
   * stays held until its last alias is removed. null while there are none (the usual case).
   */
  aliases: Map<number, number> | null;
}

const U64_MAX = 0xffff_ffff_ffff_ffffn;

function inU64(id: WorkerId): boolean {
  return id >= 0n && id <= U64_MAX;
}

export class WorkerSlots {
  /** By slot index; undefined for a free slot. */
  readonly bySlot: (WorkerSlot | undefined)[] = [];
  private readonly byId = new Map<WorkerId, Map<DpRank, WorkerSlot>>();
  private readonly free: number[] = [];
  /** The hot lookup: (worker id halves, rank) -> slot index, without hashing a bigint. */
  private readonly table = new WorkerKeyTable();
  private readonly idWords = new Uint32Array(2);
  /** The last slot found: events come in runs from one worker. */
  private last: WorkerSlot | undefined;

  /** The slot of (workerId, dpRank), or undefined. */
  find(workerId: WorkerId, dpRank: DpRank): WorkerSlot | undefined {
    if (inU64(workerId)) {
      const w = this.idWords;
      splitInto(workerId, w, 0);
      const index = this.table.get(w[0]!, w[1]!, dpRank);
      if (index >= 0) {
        // Equal halves of an id in u64 are the same id (the table holds only such ids), so the
        // slot's own bigint need not be read: a cache miss on every event once the index is big.
        const found = this.bySlot[index]!;
        if (found.dpRank === dpRank) return found;
      }
    }
    return this.byId.get(workerId)?.get(dpRank);
  }

  /** The slot of (workerId, dpRank), created when missing. */
  intern(workerId: WorkerId, dpRank: DpRank): WorkerSlot {
    const last = this.last;
    if (last !== undefined && last.workerId === workerId && last.dpRank === dpRank) return last;
    const found = this.find(workerId, dpRank);
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
      key: workerKey(workerId, dpRank),
      blocks: new U64BucketMap(),
      aliases: null,
    };
    this.bySlot[index] = slot;
    ranks.set(dpRank, slot);
    if (inU64(workerId)) {
      // An id outside u64 would alias another's halves: only the Map knows those.
      const w = this.idWords;
      splitInto(workerId, w, 0);
      if (this.table.get(w[0]!, w[1]!, dpRank) < 0) this.table.add(w[0]!, w[1]!, dpRank, index);
    }
    return (this.last = slot);
  }

  /** Every dp-rank slot of a worker. */
  ranksOf(workerId: WorkerId): WorkerSlot[] {
    const ranks = this.byId.get(workerId);
    return ranks ? [...ranks.values()] : [];
  }

  /** Forget a slot; its index becomes reusable. The caller has emptied its bitset column. */
  release(slot: WorkerSlot): void {
    const ranks = this.byId.get(slot.workerId);
    if (!ranks || ranks.get(slot.dpRank) !== slot) return;
    ranks.delete(slot.dpRank);
    if (this.last === slot) this.last = undefined;
    if (ranks.size === 0) this.byId.delete(slot.workerId);
    this.bySlot[slot.index] = undefined;
    this.free.push(slot.index);
    const w = this.idWords;
    splitInto(slot.workerId, w, 0);
    this.table.delete(w[0]!, w[1]!, slot.dpRank, slot.index);
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

  /** Live slots ordered by (worker_id, dp_rank). */
  sorted(): WorkerSlot[] {
    const out: WorkerSlot[] = [];
    for (const s of this.bySlot) if (s) out.push(s);
    out.sort((a, b) => (a.workerId !== b.workerId ? (a.workerId < b.workerId ? -1 : 1) : a.dpRank - b.dpRank));
    return out;
  }

  /** One past the highest slot index in use (bitset width needed). */
  get span(): number {
    return this.bySlot.length;
  }
}
