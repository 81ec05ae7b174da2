/**
 * The simplest index that honours the event rules the driver depends on: a set of block
 * hashes per (worker, dp_rank); a Stored whose parent the rank does not hold is rejected
 * whole (like the radix tree's ParentBlockNotFound).
 */
import type { KvEventStatus, RouterEvent } from "../../../../../src/core/events.ts";
import { workerKey, type DpRank, type WorkerId } from "../../../../../src/core/ids.ts";
import type { IndexSink } from "../../../../../src/router/recovery/types.ts";

export class ModelIndex implements IndexSink {
  readonly blocks = new Map<string, Set<bigint>>();
  /** Every sink call, in order, for tests that check the sequence. */
  readonly log: string[] = [];
  rejected = 0;

  applyEvent(ev: RouterEvent): KvEventStatus {
    const key = workerKey(ev.workerId, ev.event.dpRank);
    const d = ev.event.data;
    this.log.push(`${d.type}:${key}:${ev.event.eventId}`);
    let set = this.blocks.get(key);
    if (set === undefined) {
      set = new Set();
      this.blocks.set(key, set);
    }
    switch (d.type) {
      case "stored":
        if (d.parentHash !== null && !set.has(d.parentHash)) {
          this.rejected += 1;
          return "parent_block_not_found";
        }
        for (const b of d.blocks) set.add(b.blockHash);
        return "ok";
      case "removed": {
        let status: KvEventStatus = "ok";
        for (const h of d.blockHashes) if (!set.delete(h)) status = "block_not_found";
        return status;
      }
      case "cleared":
        set.clear();
        return "ok";
    }
  }

  removeWorkerDpRank(workerId: WorkerId, dpRank: DpRank): void {
    this.log.push(`removeRank:${workerId}:${dpRank}`);
    this.blocks.delete(workerKey(workerId, dpRank));
  }

  removeWorker(workerId: WorkerId): void {
    this.log.push(`removeWorker:${workerId}`);
    for (const key of [...this.blocks.keys()])
      if (key.startsWith(`${workerId}:`)) this.blocks.delete(key);
  }

  /** Sorted hashes of one rank (empty when unknown). */
  of(workerId: WorkerId, dpRank: DpRank): bigint[] {
    return sorted(this.blocks.get(workerKey(workerId, dpRank)) ?? []);
  }

  /** Non-empty ranks only, hashes sorted: comparable with toEqual. */
  snapshot(): Map<string, bigint[]> {
    const out = new Map<string, bigint[]>();
    for (const [k, s] of [...this.blocks].sort(([a], [b]) => (a < b ? -1 : 1)))
      if (s.size > 0) out.set(k, sorted(s));
    return out;
  }
}

export function sorted(hashes: Iterable<bigint>): bigint[] {
  return [...hashes].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
