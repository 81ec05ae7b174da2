import { describe, expect, test } from "bun:test";
import { worker } from "../../../../../src/core/ids.ts";
import { DEFAULT_MAX_BATCHED_TOKENS } from "../../../../../src/router/choose/config.ts";
import { endpoint } from "../../../../../src/router/choose/endpoints.ts";
import {
  allWorkersBusy,
  busyThreshold,
} from "../../../../../src/router/choose/filters/busy-threshold.ts";
import { LoadTracker } from "../../../../../src/router/books/load-tracker.ts";
import { candidate, context } from "../helpers.ts";

describe("busy-threshold filter (§4.3)", () => {
  const e = (id: number) => endpoint(id, 0, { maxNumBatchedTokens: 1000 });

  test("a rank is busy only above threshold × max_num_batched_tokens", () => {
    const f = busyThreshold(2);
    const cs = [
      candidate(1, { endpoint: e(1), activePrefillTokens: 2000 }), // at the limit: not busy
      candidate(2, { endpoint: e(2), activePrefillTokens: 2001 }),
    ];
    expect(f.filter(context(), cs).map((c) => c.key)).toEqual(["1:0"]);
  });

  test("engines that report no batch size use 10M tokens", () => {
    expect(DEFAULT_MAX_BATCHED_TOKENS).toBe(10_000_000);
    const f = busyThreshold(1);
    const cs = [
      candidate(1, { activePrefillTokens: 10_000_000 }),
      candidate(2, { activePrefillTokens: 10_000_001 }),
    ];
    expect(f.filter(context(), cs).map((c) => c.key)).toEqual(["1:0"]);
  });

  test("when every rank is busy the filter empties and names all_workers_busy", () => {
    const f = busyThreshold(1);
    expect(f.whenEmpty).toBe("all_workers_busy");
    expect(
      f.filter(context(), [candidate(1, { endpoint: e(1), activePrefillTokens: 5000 })]),
    ).toEqual([]);
  });

  test("allWorkersBusy: true only if every eligible rank is busy, false when none was checked", () => {
    const t = new LoadTracker({ blockSize: 16 });
    t.updateWorkers([worker(1), worker(2)]);
    const eps = [e(1), e(2)];
    t.addRequest({ requestId: "a", worker: worker(1), seqHashes: null, isl: 1500, overlap: 0 }, 0);
    expect(allWorkersBusy(eps, t, 1, 0)).toBe(false);
    expect(allWorkersBusy(eps, t, 1, 0, new Set([1n]))).toBe(true);
    t.addRequest({ requestId: "b", worker: worker(2), seqHashes: null, isl: 1500, overlap: 0 }, 0);
    expect(allWorkersBusy(eps, t, 1, 0)).toBe(true);
    expect(allWorkersBusy(eps, t, 2, 0)).toBe(false);
    expect(allWorkersBusy(eps, t, 1, 0, new Set([7n]))).toBe(false);
  });
});
