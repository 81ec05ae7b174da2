import { describe, expect, test } from "bun:test";
import { prefillWaitBound } from "../../../../src/scheduler/filters/prefill-wait-bound.ts";
import { candidate, context } from "../helpers.ts";

describe("prefill-wait bound", () => {
  test("keeps candidates within factor x the best prefill wait + slack", () => {
    const f = prefillWaitBound(2, 100);
    const cs = [candidate(1, { prefillTokens: 1000 }), candidate(2, { prefillTokens: 2100 }), candidate(3, { prefillTokens: 2101 })];
    expect(f.filter(context(), cs).map((c) => c.key)).toEqual(["1:0", "2:0"]);
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
