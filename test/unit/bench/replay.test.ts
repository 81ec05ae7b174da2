import { describe, expect, test } from "bun:test";
import { idealHitRate, simulateOffline } from "../../../bench/replay/oracle.ts";
import { histogramQuantile, percentile } from "../../../bench/replay/stats.ts";
import { promptTokens, type TraceRequest } from "../../../bench/replay/trace.ts";

const req = (
  index: number,
  hashIds: number[],
  inputLength = hashIds.length * 512,
): TraceRequest => ({
  index,
  timestamp: index,
  inputLength,
  outputLength: 4,
  hashIds,
});

describe("trace tokens", () => {
  test("same hash id gives the same 512 tokens, different ids differ, last block is cut", () => {
    const a = promptTokens(req(0, [7, 8]));
    const b = promptTokens(req(1, [7, 9], 700));
    expect(a.length).toBe(1024);
    expect(b.length).toBe(700);
    expect(Array.from(a.subarray(0, 512))).toEqual(Array.from(b.subarray(0, 512)));
    expect(Array.from(a.subarray(512, 700))).not.toEqual(Array.from(b.subarray(512, 700)));
    expect(Math.max(...a)).toBeLessThan(32000);
  });
});

describe("offline bounds", () => {
  const trace = [
    req(0, [1, 2, 3]),
    req(1, [1, 2, 4]),
    req(2, [5, 6]),
    req(3, [1, 2, 3]),
    req(4, [5, 6, 7]),
  ];
  test("ideal counts leading blocks seen before", () => {
    // hits: 0 + 2 + 0 + 3 + 2 = 7 of 3+3+2+3+3 = 14
    expect(idealHitRate(trace)).toBeCloseTo(7 / 14, 10);
  });
  test("the oracle with room for everything reaches the ideal; round-robin does not", () => {
    const oracle = simulateOffline(trace, "oracle", 2, 100, { balance: 2 });
    const rr = simulateOffline(trace, "round-robin", 2, 100);
    expect(oracle.hitRate).toBeCloseTo(7 / 14, 10);
    expect(rr.hitRate).toBeLessThan(oracle.hitRate);
  });
  test("LRU capacity limits hits", () => {
    const tiny = simulateOffline(trace, "oracle", 1, 1);
    expect(tiny.hitRate).toBeLessThan(idealHitRate(trace));
  });
});

describe("stats", () => {
  test("percentile and histogram quantile", () => {
    expect(percentile([1, 2, 3, 4], 50)).toBe(2);
    expect(percentile([1, 2, 3, 4], 99)).toBe(4);
    const q = histogramQuantile(
      [
        { le: 10, count: 50 },
        { le: 20, count: 100 },
        { le: Infinity, count: 100 },
      ],
      0.75,
    );
    expect(q).toBeCloseTo(15, 10);
  });
});
