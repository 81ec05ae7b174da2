import { describe, expect, test } from "bun:test";
import { xxh3_64 } from "../../../../src/core/xxh3.ts";
import { keyOf, worker, type WorkerWithDpRank } from "../../../../src/core/ids.ts";
import {
  filterForLora,
  hrwScore,
  lruEvictionCandidate,
  placeAdapter,
  rankWorkers,
  replicaSet,
} from "../../../../src/fleet/lora/placement.ts";
import { LoraStateTracker } from "../../../../src/fleet/lora/state-tracker.ts";

const keys = (ws: readonly WorkerWithDpRank[]) => ws.map(keyOf);
const eight = Array.from({ length: 8 }, (_, i) => worker(100 + i));

describe("hrwScore", () => {
  test("hashes name bytes, 0xFF, worker id u64 LE and dp rank u32 LE with xxh3_64", () => {
    const w = worker(0x0102030405060708n, 9);
    const bytes = new Uint8Array([0x61, 0x62, 0xff, 8, 7, 6, 5, 4, 3, 2, 1, 9, 0, 0, 0]);
    expect(hrwScore("ab", w)).toBe(xxh3_64(bytes));
  });

  test("is pinned: every router (and every release) must rank workers the same way", () => {
    // Changing this value moves adapters between workers on upgrade; do it on purpose only.
    expect(hrwScore("lora-math", worker(42, 1))).toBe(0x282554c4374f917dn);
  });

  test("the dp rank and the full u64 worker id take part", () => {
    expect(hrwScore("a", worker(1, 0))).not.toBe(hrwScore("a", worker(1, 1)));
    const big = (1n << 64n) - 1n;
    expect(hrwScore("a", worker(big))).not.toBe(hrwScore("a", worker(big - 1n)));
  });
});

describe("rankWorkers", () => {
  test("the order does not depend on the order of the input", () => {
    const reversed = [...eight].reverse();
    expect(keys(rankWorkers("lora-x", reversed))).toEqual(keys(rankWorkers("lora-x", eight)));
    expect(keys(rankWorkers("lora-x", eight)).sort()).toEqual(keys(eight).sort());
  });

  test("removing one worker only moves the adapters whose first choice it was", () => {
    const gone = eight[3]!;
    const rest = eight.filter((w) => w !== gone);
    let moved = 0;
    for (let i = 0; i < 500; i++) {
      const name = `adapter-${i}`;
      const before = rankWorkers(name, eight)[0]!;
      const after = rankWorkers(name, rest)[0]!;
      if (keyOf(before) !== keyOf(gone)) expect(keyOf(after)).toBe(keyOf(before));
      else moved++;
    }
    expect(moved).toBeGreaterThan(0);
  });

  test("first choices spread over the workers", () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 2000; i++) {
      const top = keyOf(rankWorkers(`adapter-${i}`, eight)[0]!);
      counts.set(top, (counts.get(top) ?? 0) + 1);
    }
    expect(counts.size).toBe(8);
    for (const c of counts.values()) expect(c).toBeWithin(150, 350); // mean 250
  });

  test("replicaSet takes the first n, all when n is larger, none when n is 0", () => {
    const order = keys(rankWorkers("r", eight));
    expect(keys(replicaSet("r", eight, 3))).toEqual(order.slice(0, 3));
    expect(keys(replicaSet("r", eight, 20))).toEqual(order);
    expect(replicaSet("r", eight, 0)).toEqual([]);
  });
});

describe("filterForLora (no routing table)", () => {
  const tracker = new LoraStateTracker();
  tracker.handleMdcAddition(eight[1]!, { name: "a", maxGpuLoraCount: 2 });
  tracker.handleMdcAddition(eight[5]!, { name: "a", maxGpuLoraCount: 2 });
  tracker.handleMdcAddition(worker(999), { name: "b", maxGpuLoraCount: 2 });

  test("a request without an adapter keeps every candidate", () => {
    expect(filterForLora(undefined, eight, tracker)).toBe(eight);
    expect(filterForLora("", eight, tracker)).toBe(eight);
  });

  test("a loaded adapter narrows the candidates to the workers holding it", () => {
    expect(keys(filterForLora("a", eight, tracker))).toEqual(keys([eight[1]!, eight[5]!]));
  });

  test("an adapter loaded nowhere among the candidates keeps them all (load on demand)", () => {
    expect(filterForLora("zzz", eight, tracker)).toBe(eight);
    // Loaded only outside the candidates: the filter may narrow, never widen.
    expect(filterForLora("b", eight, tracker)).toBe(eight);
  });
});

describe("placeAdapter", () => {
  test("picks the adapter's highest-HRW worker among those with a free slot", () => {
    const tracker = new LoraStateTracker();
    for (const w of eight) tracker.setWorkerCapacity(w, 1);
    const order = rankWorkers("new", eight);
    expect(keyOf(placeAdapter("new", tracker, eight)!)).toBe(keyOf(order[0]!));

    tracker.handleMdcAddition(order[0]!, { name: "other", maxGpuLoraCount: 1 }); // now full
    expect(keyOf(placeAdapter("new", tracker, eight)!)).toBe(keyOf(order[1]!));
  });

  test("skips workers that already hold the adapter and workers of unknown capacity", () => {
    const tracker = new LoraStateTracker();
    const [a, b, c] = eight as [WorkerWithDpRank, WorkerWithDpRank, WorkerWithDpRank];
    tracker.handleMdcAddition(a, { name: "x", maxGpuLoraCount: 4 });
    tracker.setWorkerCapacity(b, 2);
    const placed = placeAdapter("x", tracker, [a, b, c]);
    expect(placed && keyOf(placed)).toBe(keyOf(b));
  });

  test("no free slot anywhere: undefined", () => {
    const tracker = new LoraStateTracker();
    tracker.handleMdcAddition(eight[0]!, { name: "x", maxGpuLoraCount: 1 });
    expect(placeAdapter("y", tracker, eight)).toBeUndefined();
    expect(placeAdapter("y", tracker, [])).toBeUndefined();
  });
});

describe("lruEvictionCandidate", () => {
  function full(): LoraStateTracker {
    const tracker = new LoraStateTracker();
    const [a, b] = eight as [WorkerWithDpRank, WorkerWithDpRank];
    tracker.handleMdcAddition(a, { name: "a1", maxGpuLoraCount: 2 });
    tracker.handleMdcAddition(a, { name: "a2", maxGpuLoraCount: 2 });
    tracker.handleMdcAddition(b, { name: "b1", maxGpuLoraCount: 2 });
    tracker.handleMdcAddition(b, { name: "b2", maxGpuLoraCount: 2 });
    tracker.recordUse("a1", a, 50);
    tracker.recordUse("a2", a, 40);
    tracker.recordUse("b1", b, 30);
    tracker.recordUse("b2", b, 60);
    return tracker;
  }
  const ab = eight.slice(0, 2);

  test("evicts the least recently used adapter on any candidate", () => {
    expect(lruEvictionCandidate("new", full(), ab)).toEqual({
      worker: eight[1]!,
      evict: "b1",
      lastUsedMs: 30,
    });
  });

  test("an adapter never used since it was loaded goes first", () => {
    const tracker = full();
    tracker.handleMdcRemoval(eight[0]!, "a2");
    tracker.handleMdcAddition(eight[0]!, { name: "a3", maxGpuLoraCount: 2 });
    expect(lruEvictionCandidate("new", tracker, ab)).toMatchObject({
      evict: "a3",
      lastUsedMs: undefined,
    });
  });

  test("pinned adapters and workers already holding the adapter are left alone", () => {
    const tracker = full();
    const pinned = lruEvictionCandidate("new", tracker, ab, { isPinned: (name) => name === "b1" });
    expect(pinned).toMatchObject({ evict: "a2", lastUsedMs: 40 });
    // Worker b holds "b2": asking to place "b2" considers only worker a.
    expect(lruEvictionCandidate("b2", tracker, ab)).toMatchObject({
      worker: eight[0]!,
      evict: "a2",
    });
    expect(lruEvictionCandidate("new", tracker, ab, { isPinned: () => true })).toBeUndefined();
  });

  test("equal ages go to the requested adapter's preferred worker", () => {
    const tracker = new LoraStateTracker();
    for (const w of eight)
      tracker.handleMdcAddition(w, { name: `on-${w.workerId}`, maxGpuLoraCount: 1 });
    const preferred = rankWorkers("wanted", eight)[0]!;
    expect(lruEvictionCandidate("wanted", tracker, eight)).toEqual({
      worker: preferred,
      evict: `on-${preferred.workerId}`,
      lastUsedMs: undefined,
    });
  });

  test("only candidates count", () => {
    expect(lruEvictionCandidate("new", full(), [eight[0]!])).toMatchObject({ evict: "a2" });
    expect(lruEvictionCandidate("new", full(), [eight[7]!])).toBeUndefined();
  });
});
