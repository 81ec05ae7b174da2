import { describe, expect, test } from "bun:test";
import type { RouterEvent } from "../../../src/core/events.ts";
import { RankKv } from "../../../src/mocker/rank-kv.ts";

const seq = (...xs: number[]) => BigUint64Array.from(xs.map(BigInt));
const toks = (h: BigUint64Array) => h.map((x) => x + 1000n);

function rank(capacity: number, dpRank = 0) {
  const events: RouterEvent[] = [];
  const kv = new RankKv({ workerId: 7n, dpRank, capacity, emit: (e) => events.push(e) });
  /** One request: begin, commit, release. */
  const run = (hashes: BigUint64Array) => {
    const lease = kv.begin(hashes);
    kv.commit(lease, hashes, toks(hashes));
    kv.release(lease);
    return lease.cachedBlocks;
  };
  return { kv, events, run };
}

describe("RankKv events", () => {
  test("a new sequence is one Stored event with no parent and engine + tokens hashes", () => {
    const { events, run } = rank(8);
    expect(run(seq(1, 2, 3))).toBe(0);
    expect(events).toEqual([
      {
        workerId: 7n,
        event: {
          eventId: 0n,
          dpRank: 0,
          data: {
            type: "stored",
            parentHash: null,
            blocks: [
              { blockHash: 1n, tokensHash: 1001n },
              { blockHash: 2n, tokensHash: 1002n },
              { blockHash: 3n, tokensHash: 1003n },
            ],
          },
        },
      },
    ]);
  });

  test("an extension stores only the new blocks, parented on the last cached one", () => {
    const { events, run } = rank(8);
    run(seq(1, 2));
    expect(run(seq(1, 2, 3, 4))).toBe(2);
    const last = events[1]!.event;
    expect(last.eventId).toBe(1n);
    expect(last.data).toEqual({
      type: "stored",
      parentHash: 2n,
      blocks: [
        { blockHash: 3n, tokensHash: 1003n },
        { blockHash: 4n, tokensHash: 1004n },
      ],
    });
  });

  test("a fully cached request emits nothing", () => {
    const { events, run } = rank(8);
    run(seq(1, 2));
    expect(run(seq(1, 2))).toBe(2);
    expect(events.length).toBe(1);
  });

  test("evictions are one Removed event before the Stored event that needed the room", () => {
    const { events, run } = rank(3);
    run(seq(1, 2, 3));
    run(seq(5, 6));
    expect(events.map((e) => e.event.eventId)).toEqual([0n, 1n, 2n]);
    expect(events[1]!.event.data).toEqual({ type: "removed", blockHashes: [3n, 2n] });
    expect(events[2]!.event.data).toEqual({
      type: "stored",
      parentHash: null,
      blocks: [
        { blockHash: 5n, tokensHash: 1005n },
        { blockHash: 6n, tokensHash: 1006n },
      ],
    });
  });

  test("event ids are dense from 0 per dp rank, independently", () => {
    const a = rank(8, 0);
    const b = rank(8, 1);
    a.run(seq(1));
    a.run(seq(2));
    b.run(seq(3));
    expect(a.events.map((e) => [e.event.eventId, e.event.dpRank])).toEqual([
      [0n, 0],
      [1n, 0],
    ]);
    expect(b.events.map((e) => [e.event.eventId, e.event.dpRank])).toEqual([[0n, 1]]);
  });

  test("clear emits Cleared, empties the cache, and leases from before it go inert", () => {
    const { kv, events } = rank(8);
    const hashes = seq(1, 2);
    const lease = kv.begin(hashes);
    kv.commit(lease, hashes, toks(hashes));
    kv.clear();
    expect(events.at(-1)!.event.data).toEqual({ type: "cleared" });
    expect(kv.cache.size).toBe(0);
    kv.release(lease); // must not touch the new generation's slots
    expect(kv.cache.pinnedCount).toBe(0);
    const stale = kv.begin(seq(9));
    kv.clear();
    kv.commit(stale, seq(9), toks(seq(9)));
    expect(kv.cache.size).toBe(0);
  });

  test("restart empties the cache and restarts event ids at 0 without an event", () => {
    const { kv, events, run } = rank(8);
    run(seq(1));
    run(seq(2));
    kv.restart();
    expect(kv.cache.size).toBe(0);
    expect(events.length).toBe(2);
    run(seq(3));
    expect(events.at(-1)!.event.eventId).toBe(0n);
  });

  test("the tree dump is one Stored per cached block, parents first, ids 0..n-1, equal to the cache", () => {
    const { kv, run } = rank(8);
    run(seq(1, 2, 3));
    run(seq(1, 5));
    const dump = kv.dump();
    expect(dump.map((e) => e.event.eventId)).toEqual([0n, 1n, 2n, 3n]);
    const seen = new Set<bigint>();
    for (const e of dump) {
      if (e.event.data.type !== "stored") throw new Error("dump holds only Stored events");
      const { parentHash, blocks } = e.event.data;
      if (parentHash !== null) expect(seen.has(parentHash)).toBe(true);
      expect(blocks.length).toBe(1);
      expect(blocks[0]!.tokensHash).toBe(blocks[0]!.blockHash + 1000n);
      seen.add(blocks[0]!.blockHash);
    }
    expect([...seen].sort()).toEqual([1n, 2n, 3n, 5n]);
  });
});
