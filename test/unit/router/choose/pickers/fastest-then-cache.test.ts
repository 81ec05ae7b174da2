import { describe, expect, test } from "bun:test";
import { fastestThenCachePicker } from "../../../../../src/router/choose/pickers/fastest-then-cache.ts";
import { candidate, context, seededRng } from "../helpers.ts";

const oneMs = fastestThenCachePicker(() => 1);

describe("fastest-then-cache picker (kv)", () => {
  test("the cheapest wins when no other is within the tolerance", () => {
    const cs = [
      candidate(1, { cost: 10, uncachedTokens: 0 }),
      candidate(2, { cost: 8, uncachedTokens: 500 }),
    ];
    expect(oneMs.pick(context(), cs).key).toBe("2:0");
  });

  test("within the tolerance, the one with the most of the prompt cached (fewest uncached tokens)", () => {
    const cs = [
      candidate(1, { cost: 8.5, uncachedTokens: 100 }),
      candidate(2, { cost: 8, uncachedTokens: 500 }),
      candidate(3, { cost: 9.5, uncachedTokens: 0 }),
    ];
    expect(oneMs.pick(context(), cs).key).toBe("1:0");
  });

  test("then the fewer blocks held by running requests, then (ranks without history) the smaller index", () => {
    const a = candidate(1, { cost: 8, uncachedTokens: 0, decodeBlocks: 30, treeSize: 1 });
    const b = candidate(2, { cost: 8, uncachedTokens: 0, decodeBlocks: 10, treeSize: 9 });
    expect(oneMs.pick(context(), [a, b]).key).toBe("2:0");
    const c = candidate(3, { cost: 8, uncachedTokens: 0, decodeBlocks: 10, treeSize: 2 });
    expect(oneMs.pick(context(), [a, b, c]).key).toBe("3:0");
  });

  test("alone, then the coldest cache (booked longest ago) outright, before the smaller index", () => {
    const hot = candidate(1, { cost: 8, uncachedTokens: 0, lastBookedAt: 900, treeSize: 1 });
    const cold = candidate(2, { cost: 8, uncachedTokens: 0, lastBookedAt: 200, treeSize: 9 });
    const colder = candidate(3, { cost: 8, uncachedTokens: 0, lastBookedAt: 100, treeSize: 9 });
    const alsoColder = candidate(4, { cost: 8, uncachedTokens: 0, lastBookedAt: 100, treeSize: 5 });
    for (let seed = 1; seed <= 20; seed++) {
      for (const otherRouters of [undefined, 0]) {
        const ctx = context({ now: 1000, rng: seededRng(seed), otherRouters });
        expect({ seed, key: oneMs.pick(ctx, [hot, cold]).key }).toEqual({ seed, key: "2:0" });
        expect({ seed, key: oneMs.pick(ctx, [hot, colder, cold, alsoColder]).key }).toEqual({
          seed,
          key: "4:0",
        });
      }
    }
  });

  test("with other routers, a draw weighted by how long each rank has gone without a booking (seed 7): idle 800 ms is taken 8 × as often as idle 100 ms", () => {
    const hot = candidate(1, { cost: 8, uncachedTokens: 0, lastBookedAt: 900, treeSize: 1 });
    const cold = candidate(2, { cost: 8, uncachedTokens: 0, lastBookedAt: 200, treeSize: 9 });
    const ctx = context({ now: 1000, rng: seededRng(7), otherRouters: 3 });
    let coldPicks = 0;
    const draws = 9000;
    for (let i = 0; i < draws; i++) if (oneMs.pick(ctx, [hot, cold]).key === "2:0") coldPicks++;
    // Expected 8 / 9 = 0.889; the binomial's standard deviation over 9000 draws is 0.0033.
    expect(coldPicks / draws).toBeGreaterThan(0.87);
    expect(coldPicks / draws).toBeLessThan(0.905);
  });

  test("a rank never booked comes before every booked one, the emptier index first among them", () => {
    const hot = candidate(1, { cost: 8, uncachedTokens: 0, lastBookedAt: 900, treeSize: 1 });
    const cold = candidate(2, { cost: 8, uncachedTokens: 0, lastBookedAt: -5000, treeSize: 1 });
    const never = candidate(3, {
      cost: 8,
      uncachedTokens: 0,
      lastBookedAt: -Infinity,
      treeSize: 5,
    });
    const neverEmpty = candidate(4, {
      cost: 8,
      uncachedTokens: 0,
      lastBookedAt: -Infinity,
      treeSize: 2,
    });
    for (let seed = 1; seed <= 20; seed++) {
      for (const otherRouters of [0, 3]) {
        const ctx = context({ now: 1000, rng: seededRng(seed), otherRouters });
        expect({ seed, key: oneMs.pick(ctx, [hot, cold, never]).key }).toEqual({
          seed,
          key: "3:0",
        });
        expect({ seed, key: oneMs.pick(ctx, [hot, never, cold, neverEmpty]).key }).toEqual({
          seed,
          key: "4:0",
        });
      }
    }
  });

  test("an untracked rank among the equals: no history to weigh, so the index decides; so too when all were booked this instant", () => {
    const cold = candidate(2, { cost: 8, uncachedTokens: 0, lastBookedAt: 100, treeSize: 9 });
    const untracked = candidate(4, { cost: 8, uncachedTokens: 0, treeSize: 2 });
    expect(oneMs.pick(context({ now: 1000 }), [cold, untracked]).key).toBe("4:0");
    expect(oneMs.pick(context({ now: 1000, otherRouters: 3 }), [cold, untracked]).key).toBe("4:0");
    const a = candidate(5, { cost: 8, uncachedTokens: 0, lastBookedAt: 1000, treeSize: 7 });
    const b = candidate(6, { cost: 8, uncachedTokens: 0, lastBookedAt: 1000, treeSize: 3 });
    expect(oneMs.pick(context({ now: 1000, otherRouters: 3 }), [a, b]).key).toBe("6:0");
  });

  test("the draw is only among the equals on work: a colder rank with more to compute or more running is never taken", () => {
    const warm = candidate(1, { cost: 8, uncachedTokens: 0, decodeBlocks: 4, lastBookedAt: 999 });
    const coldMoreToDo = candidate(2, {
      cost: 8,
      uncachedTokens: 16,
      decodeBlocks: 4,
      lastBookedAt: -9e9,
    });
    const coldBusier = candidate(3, {
      cost: 8,
      uncachedTokens: 0,
      decodeBlocks: 5,
      lastBookedAt: -9e9,
    });
    for (let seed = 1; seed <= 20; seed++) {
      for (const otherRouters of [0, 3])
        expect(
          oneMs.pick(context({ now: 1000, rng: seededRng(seed), otherRouters }), [
            coldMoreToDo,
            warm,
            coldBusier,
          ]).key,
        ).toBe("1:0");
    }
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
