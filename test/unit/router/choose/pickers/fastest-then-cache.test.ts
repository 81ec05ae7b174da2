import { describe, expect, test } from "bun:test";
import { fastestThenCachePicker } from "../../../../../src/router/choose/pickers/fastest-then-cache.ts";
import { candidate, context, seededRng } from "../helpers.ts";

const oneMs = fastestThenCachePicker(() => 1);

describe("fastest-then-cache picker (kv)", () => {
  test("the cheapest wins when no other is within the tolerance", () => {
    const cs = [candidate(1, { cost: 10, uncachedTokens: 0 }), candidate(2, { cost: 8, uncachedTokens: 500 })];
    expect(oneMs.pick(context(), cs).key).toBe("2:0");
  });

  test("within the tolerance, the one with the most of the prompt cached (fewest uncached tokens)", () => {
    const cs = [candidate(1, { cost: 8.5, uncachedTokens: 100 }), candidate(2, { cost: 8, uncachedTokens: 500 }), candidate(3, { cost: 9.5, uncachedTokens: 0 })];
    expect(oneMs.pick(context(), cs).key).toBe("1:0");
  });

  test("then the fewer blocks held by running requests, then the smaller index", () => {
    const a = candidate(1, { cost: 8, uncachedTokens: 0, decodeBlocks: 30, treeSize: 1 });
    const b = candidate(2, { cost: 8, uncachedTokens: 0, decodeBlocks: 10, treeSize: 9 });
    expect(oneMs.pick(context(), [a, b]).key).toBe("2:0");
    const c = candidate(3, { cost: 8, uncachedTokens: 0, decodeBlocks: 10, treeSize: 2 });
    expect(oneMs.pick(context(), [a, b, c]).key).toBe("3:0");
  });

  test("then the coldest cache (booked longest ago) before the smaller index; an untracked rank ties on it", () => {
    const hot = candidate(1, { cost: 8, uncachedTokens: 0, lastBookedAt: 900, treeSize: 1 });
    const cold = candidate(2, { cost: 8, uncachedTokens: 0, lastBookedAt: 100, treeSize: 9 });
    expect(oneMs.pick(context(), [hot, cold]).key).toBe("2:0");
    const never = candidate(3, { cost: 8, uncachedTokens: 0, lastBookedAt: -Infinity, treeSize: 5 });
    expect(oneMs.pick(context(), [hot, cold, never]).key).toBe("3:0");
    // Untracked: no history, so the index decides between it and the cold one.
    const untracked = candidate(4, { cost: 8, uncachedTokens: 0, treeSize: 2 });
    expect(oneMs.pick(context(), [cold, untracked]).key).toBe("4:0");
  });

  test("full ties are drawn uniformly (seed 3)", () => {
    const cs = [1, 2, 3].map((i) => candidate(i, { cost: 5, uncachedTokens: 0 }));
    const counts = new Map<string, number>();
    const ctx = context({ rng: seededRng(3) });
    for (let i = 0; i < 3000; i++) {
      const k = oneMs.pick(ctx, cs).key;
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    for (const n of counts.values()) expect(n).toBeGreaterThan(850);
    expect(counts.size).toBe(3);
  });
});
