/**
 * The true event stream of one (worker, dp_rank) engine publisher: its blocks (a forest,
 * parents before children), dense event ids from 0, and the worker-side EventBuffer that
 * answers recovery queries with replays or a dump of the current blocks.
 */
import type { KvCacheEventData, RouterEvent } from "../../../../../src/core/events.ts";
import type { DpRank, WorkerId } from "../../../../../src/core/ids.ts";
import { EventBuffer } from "../../../../../src/protocol/event-buffer.ts";
import type { WorkerKvQueryResponse } from "../../../../../src/protocol/kv-query.ts";

export class FakeEngineRank {
  nextId = 0n;
  /** block hash -> parent hash, in insertion order (so parents always come first). */
  readonly parentOf = new Map<bigint, bigint | null>();
  private readonly children = new Map<bigint, number>();
  readonly buffer: EventBuffer;

  constructor(
    readonly workerId: WorkerId,
    readonly dpRank: DpRank,
    capacity?: number,
  ) {
    this.buffer = new EventBuffer({ capacity, dump: () => this.dump() });
  }

  store(parent: bigint | null, hashes: readonly bigint[]): RouterEvent {
    if (parent !== null && !this.parentOf.has(parent))
      throw new Error(`engine has no block ${parent}`);
    let p = parent;
    for (const h of hashes) {
      this.parentOf.set(h, p);
      this.children.set(h, 0);
      if (p !== null) this.children.set(p, this.children.get(p)! + 1);
      p = h;
    }
    return this.emit({
      type: "stored",
      parentHash: parent,
      blocks: hashes.map((h) => ({ blockHash: h, tokensHash: h })),
    });
  }

  /** Evict blocks that have no children (engines evict leaves). */
  remove(hashes: readonly bigint[]): RouterEvent {
    for (const h of hashes) {
      if (this.children.get(h) !== 0) throw new Error(`block ${h} is not a leaf`);
      const p = this.parentOf.get(h)!;
      this.parentOf.delete(h);
      this.children.delete(h);
      if (p !== null) this.children.set(p, this.children.get(p)! - 1);
    }
    return this.emit({ type: "removed", blockHashes: [...hashes] });
  }

  clear(): RouterEvent {
    this.parentOf.clear();
    this.children.clear();
    return this.emit({ type: "cleared" });
  }

  /** The process restarts: empty cache, ids from 0 again, a fresh buffer. Emits nothing. */
  restart(): void {
    this.parentOf.clear();
    this.children.clear();
    this.nextId = 0n;
    this.buffer.clear();
  }

  leaves(): bigint[] {
    const out: bigint[] = [];
    for (const [h, n] of this.children) if (n === 0) out.push(h);
    return out;
  }

  blocks(): bigint[] {
    return [...this.parentOf.keys()];
  }

  /** One Stored per block, parents first, synthetic ids 0..n (spec §3.5). */
  dump(): RouterEvent[] {
    let i = 0n;
    const out: RouterEvent[] = [];
    for (const [h, p] of this.parentOf) {
      out.push({
        workerId: this.workerId,
        event: {
          eventId: i++,
          dpRank: this.dpRank,
          data: { type: "stored", parentHash: p, blocks: [{ blockHash: h, tokensHash: h }] },
        },
      });
    }
    return out;
  }

  query(start?: bigint, end?: bigint): WorkerKvQueryResponse {
    return this.buffer.getEventsInIdRange(start, end);
  }

  private emit(data: KvCacheEventData): RouterEvent {
    const ev: RouterEvent = {
      workerId: this.workerId,
      event: { eventId: this.nextId, dpRank: this.dpRank, data },
    };
    this.nextId += 1n;
    this.buffer.push(ev);
    return ev;
  }
}
