import { describe, expect, test } from "bun:test";
import {
  DEFAULT_TIMING,
  decodeStepMs,
  isolatedRequestMs,
  prefillMs,
  type TimingModel,
} from "../../../src/mocker/timing.ts";

const m: TimingModel = {
  prefillUsPerToken: 40,
  prefillOverheadMs: 1,
  decodeMsPerStep: 10,
  decodeBatchFactor: 0.5,
  speedup: 1,
};

describe("timing model", () => {
  test("prefill is the overhead plus uncached tokens × µs per token", () => {
    expect(prefillMs(0, m)).toBe(1);
    expect(prefillMs(512, m)).toBeCloseTo(1 + 20.48, 9);
    expect(prefillMs(-5, m)).toBe(1);
  });
  test("a decode step grows with the running sequences", () => {
    expect(decodeStepMs(1, m)).toBe(10);
    expect(decodeStepMs(3, m)).toBe(20);
    expect(decodeStepMs(0, m)).toBe(10);
  });
  test("speedup divides every duration", () => {
    const fast = { ...m, speedup: 4 };
    expect(prefillMs(512, fast)).toBeCloseTo(prefillMs(512, m) / 4, 9);
    expect(decodeStepMs(3, fast)).toBe(5);
  });
  test("an isolated request is prefill plus one step per token after the first", () => {
    expect(isolatedRequestMs(100, 5, 1, m)).toBeCloseTo(prefillMs(100, m) + 4 * 10, 9);
    expect(isolatedRequestMs(100, 1, 1, m)).toBeCloseTo(prefillMs(100, m), 9);
  });
  test("defaults: an uncached 512-token block costs more than a decode step", () => {
    expect(prefillMs(512, DEFAULT_TIMING)).toBeGreaterThan(1.5 * decodeStepMs(1, DEFAULT_TIMING));
  });
});
