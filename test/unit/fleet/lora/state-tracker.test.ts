import { describe, expect, test } from "bun:test";
import { keyOf, worker, type WorkerWithDpRank } from "../../../../src/core/ids.ts";
import {
  DEFAULT_MAX_GPU_LORA_COUNT,
  LoraStateTracker,
  type LoraInfo,
} from "../../../../src/fleet/lora/state-tracker.ts";
import { lcgAnsiC } from "../../../support/prng.ts";

const lora = (name: string, maxGpuLoraCount?: number): LoraInfo => ({ name, maxGpuLoraCount });
const keys = (ws: readonly WorkerWithDpRank[]) => ws.map(keyOf).sort();

/** Every (lora → worker) fact has its (worker → lora) inverse, and the other way round. */
function expectIndexesAgree(tracker: LoraStateTracker, workers: readonly WorkerWithDpRank[]): void {
  for (const name of tracker.listLoras()) {
    const holders = tracker.getLoadedWorkers(name);
    expect(holders.length).toBeGreaterThan(0); // empty sets are dropped
    for (const w of holders) expect(tracker.lorasOn(w)).toContain(name);
  }
  for (const w of workers) {
    for (const name of tracker.lorasOn(w)) expect(tracker.isLoaded(name, w)).toBe(true);
    expect(tracker.loadedCount(w)).toBe(tracker.lorasOn(w).length);
  }
}

describe("LoraStateTracker (seed 000)", () => {
  test("an addition is visible in every query", () => {
    const tracker = new LoraStateTracker();
    const w1 = worker(1);
    tracker.handleMdcAddition(w1, lora("lora-math", 8));

    expect(tracker.isEmpty()).toBe(false);
    expect(tracker.listWorkers().length).toBe(1);
    expect(tracker.listLoras()).toEqual(["lora-math"]);
    expect(tracker.isLoaded("lora-math", w1)).toBe(true);
    expect(tracker.totalLoraSlots()).toBe(8);
    expect(tracker.freeSlots(w1)).toBe(7);
    expect(tracker.loraInfo("lora-math", w1)).toEqual(lora("lora-math", 8));
  });

  test("one adapter on several workers lists them all and sums their capacity", () => {
    const tracker = new LoraStateTracker();
    const w1 = worker(1);
    const w2 = worker(2);
    tracker.handleMdcAddition(w1, lora("lora-code", 4));
    tracker.handleMdcAddition(w2, lora("lora-code", 4));

    expect(keys(tracker.getLoadedWorkers("lora-code"))).toEqual(keys([w1, w2]));
    expect(tracker.totalLoraSlots()).toBe(8);
  });

  test("removing the last holder of an adapter forgets the adapter", () => {
    const tracker = new LoraStateTracker();
    const w1 = worker(1);
    tracker.handleMdcAddition(w1, lora("lora-math", 4));
    expect(tracker.isLoaded("lora-math", w1)).toBe(true);

    tracker.handleMdcRemoval(w1, "lora-math");
    expect(tracker.isLoaded("lora-math", w1)).toBe(false);
    expect(tracker.listLoras()).toEqual([]);
    // The worker's capacity is a worker fact, not an adapter fact: it stays.
    expect(tracker.freeSlots(w1)).toBe(4);
  });

  test("removing a worker drops its adapters and its capacity", () => {
    const tracker = new LoraStateTracker();
    const w1 = worker(1);
    tracker.handleMdcAddition(w1, lora("lora-a", 4));
    tracker.handleMdcAddition(w1, lora("lora-b", 4));
    expect(tracker.loadedCount(w1)).toBe(2);
    expect(tracker.freeSlots(w1)).toBe(2);

    tracker.handleWorkerRemoval(w1);
    expect(tracker.isEmpty()).toBe(true);
    expect(tracker.listLoras()).toEqual([]);
    expect(tracker.totalLoraSlots()).toBe(0);
  });

  test("slot usage reports (loaded, capacity) per worker", () => {
    const tracker = new LoraStateTracker();
    const w1 = worker(1);
    tracker.handleMdcAddition(w1, lora("lora-a", 8));
    tracker.handleMdcAddition(w1, lora("lora-b", 8));

    const usage = tracker.getWorkerSlotUsage().get(keyOf(w1));
    expect(usage).toEqual({ worker: w1, loaded: 2, capacity: 8 });
  });

  test("only workers below capacity have free slots", () => {
    const tracker = new LoraStateTracker();
    const w1 = worker(1);
    const w2 = worker(2);
    tracker.handleMdcAddition(w1, lora("lora-a", 1)); // 1 of 1 used
    tracker.handleMdcAddition(w2, lora("lora-b", 4)); // 1 of 4 used

    expect(keys(tracker.workersWithFreeSlots())).toEqual([keyOf(w2)]);
  });

  test("interleaved async additions and removals keep the inverse indexes in agreement", async () => {
    // Port of the seed's 8-thread hammer: 8 async tasks interleave at every await, in an
    // order decided by a seeded generator, so a handler that yielded half-way would be caught.
    const seed = 0x5eed;
    const rng = lcgAnsiC(seed);
    const tracker = new LoraStateTracker();
    const nWorkers = 8;
    const nLoras = 8;
    const iters = 200;
    const workers = Array.from({ length: nWorkers }, (_, t) => worker(t));
    const yieldRandomly = async () => {
      const hops = Math.floor(rng() * 3);
      for (let i = 0; i < hops; i++) await Promise.resolve();
    };

    let writersDone = false;
    let checks = 0;
    const reader = async () => {
      // Readers see the state between any two handler calls: it must always be consistent.
      while (!writersDone) {
        expectIndexesAgree(tracker, workers);
        checks++;
        await yieldRandomly();
        await Promise.resolve();
      }
    };
    const readerDone = reader();
    await Promise.all(
      workers.map(async (w) => {
        for (let i = 0; i < iters; i++) {
          const name = `lora-${i % nLoras}`;
          tracker.handleMdcAddition(w, lora(name, nLoras));
          await yieldRandomly();
          if (i % 3 === 0) tracker.handleMdcRemoval(w, name);
          await yieldRandomly();
          if (i % 50 === 49) tracker.handleWorkerRemoval(w);
          await yieldRandomly();
        }
      }),
    );

    writersDone = true;
    await readerDone;
    try {
      expect(checks).toBeGreaterThan(100);
      expectIndexesAgree(tracker, workers);
      // Every task ends with i = 199 (a worker removal), so nothing may be left.
      expect(tracker.listLoras()).toEqual([]);
    } catch (e) {
      console.error(`interleaving seed=${seed}`);
      throw e;
    }
  });
});

describe("LoraStateTracker capacity", () => {
  test("an entry without max_gpu_lora_count gets the default capacity", () => {
    const tracker = new LoraStateTracker();
    tracker.handleMdcAddition(worker(1), lora("a"));
    expect(tracker.capacity(worker(1))).toBe(DEFAULT_MAX_GPU_LORA_COUNT);
    expect(DEFAULT_MAX_GPU_LORA_COUNT).toBe(4);
  });

  test("a changed capacity is adopted, with one warning naming both values", () => {
    const warnings: Record<string, unknown>[] = [];
    const tracker = new LoraStateTracker({ logger: { warn: (_m, f) => warnings.push(f!) } });
    const w = worker(7, 1);
    tracker.handleMdcAddition(w, lora("a", 4));
    tracker.handleMdcAddition(w, lora("b", 4));
    expect(warnings).toEqual([]);

    tracker.handleMdcAddition(w, lora("c", 2));
    expect(tracker.capacity(w)).toBe(2);
    expect(tracker.freeSlots(w)).toBe(0); // 3 loaded, 2 slots: saturates at 0
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      workerId: 7n,
      dpRank: 1,
      previousCapacity: 4,
      newCapacity: 2,
      loraName: "c",
    });
  });

  test("re-publishing the same pair is idempotent and updates the stored info", () => {
    const tracker = new LoraStateTracker();
    const w = worker(1);
    tracker.handleMdcAddition(w, lora("a", 4));
    tracker.recordUse("a", w, 100);
    tracker.handleMdcAddition(w, lora("a", 6));
    expect(tracker.loadedCount(w)).toBe(1);
    expect(tracker.getLoadedWorkers("a")).toHaveLength(1);
    expect(tracker.loraInfo("a", w)?.maxGpuLoraCount).toBe(6);
    expect(tracker.lastUsedMs("a", w)).toBe(100); // re-publishing is not a reload
  });

  test("a capacity set before any adapter makes the worker placeable", () => {
    const tracker = new LoraStateTracker();
    const w = worker(3);
    expect(tracker.freeSlots(w)).toBe(0);
    expect(tracker.workersWithFreeSlots()).toEqual([]);
    tracker.setWorkerCapacity(w, 2);
    expect(tracker.freeSlots(w)).toBe(2);
    expect(keys(tracker.workersWithFreeSlots())).toEqual([keyOf(w)]);
    expect(tracker.listLoras()).toEqual([]);
  });

  test("dp ranks of one worker are separate slot pools", () => {
    const tracker = new LoraStateTracker();
    tracker.handleMdcAddition(worker(1, 0), lora("a", 1));
    tracker.handleMdcAddition(worker(1, 1), lora("b", 1));
    expect(tracker.isLoaded("a", worker(1, 1))).toBe(false);
    expect(tracker.freeSlots(worker(1, 0))).toBe(0);
    expect(tracker.totalLoraSlots()).toBe(2);
  });
});

describe("LoraStateTracker last use", () => {
  test("recordUse only applies to adapters loaded on that worker, and removal forgets it", () => {
    const tracker = new LoraStateTracker();
    const w = worker(1);
    expect(tracker.recordUse("a", w, 5)).toBe(false);
    tracker.handleMdcAddition(w, lora("a"));
    expect(tracker.lastUsedMs("a", w)).toBeUndefined();
    expect(tracker.recordUse("a", w, 5)).toBe(true);
    expect(tracker.lastUsedMs("a", w)).toBe(5);
    tracker.handleMdcRemoval(w, "a");
    tracker.handleMdcAddition(w, lora("a"));
    expect(tracker.lastUsedMs("a", w)).toBeUndefined();
  });
});
