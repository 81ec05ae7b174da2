import { describe, expect, test } from "bun:test";
import { prefillWaitBound } from "../../../../../src/router/choose/filters/prefill-wait-bound.ts";
import { candidate, context } from "../helpers.ts";

describe("prefill-wait bound", () => {
  test("keeps candidates within factor x the best prefill wait + share x the mean queued prefill", () => {
    const f = prefillWaitBound(2, 0.5);
    // mean queued prefill = (0 + 300 + 300) / 3 = 200; limit = 2 x 1000 + 0.5 x 200 = 2100
    const cs = [
      candidate(1, { prefillTokens: 1000, activePrefillTokens: 0 }),
      candidate(2, { prefillTokens: 2100, activePrefillTokens: 300 }),
      candidate(3, { prefillTokens: 2101, activePrefillTokens: 300 }),
    ];
    expect(f.filter(context(), cs).map((c) => c.key)).toEqual(["1:0", "2:0"]);
  });

  test("a busy cluster loosens the bound: the warm worker's queue is tolerated", () => {
    const idle = [
      candidate(1, { prefillTokens: 4000, activePrefillTokens: 0 }),
      candidate(2, { prefillTokens: 9000, activePrefillTokens: 8800 }),
    ];
    expect(
      prefillWaitBound(1.2, 1)
        .filter(context(), idle)
        .map((c) => c.key),
    ).toEqual(["1:0", "2:0"]); // 4800 + 4400 >= 9000
    expect(
      prefillWaitBound(1.2, 0)
        .filter(context(), idle)
        .map((c) => c.key),
    ).toEqual(["1:0"]);
  });

  test("returns the same array when nothing is dropped, never empties the set", () => {
    const f = prefillWaitBound(1, 0);
    const same = [candidate(1, { prefillTokens: 5 }), candidate(2, { prefillTokens: 5 })];
    expect(f.filter(context(), same)).toBe(same);
    expect(f.filter(context(), [candidate(1, { prefillTokens: 9 })]).length).toBe(1);
  });

  test("refuses a factor below 1", () => {
    expect(() => prefillWaitBound(0.5, 0)).toThrow();
  });
});
