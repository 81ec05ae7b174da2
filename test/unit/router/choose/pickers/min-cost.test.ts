import { describe, expect, test } from "bun:test";
import { minCostPicker } from "../../../../../src/router/choose/pickers/min-cost.ts";
import { candidate, context, seededRng } from "../helpers.ts";

describe("min-cost picker (§4.4 T = 0)", () => {
  test("takes the unique minimum", () => {
    const cs = [candidate(1, { cost: 3 }), candidate(2, { cost: 1 }), candidate(3, { cost: 2 })];
    expect(minCostPicker().pick(context(), cs).key).toBe("2:0");
  });

  test("ties need exact float equality", () => {
    const cs = [
      candidate(1, { cost: 0.1 + 0.2, treeSize: 0 }),
      candidate(2, { cost: 0.3, treeSize: 99 }),
    ];
    expect(minCostPicker().pick(context(), cs).key).toBe("2:0"); // 0.1 + 0.2 > 0.3
  });

  test("among ties the smallest tree size wins when sizes differ", () => {
    const cs = [
      candidate(1, { cost: 1, treeSize: 50 }),
      candidate(2, { cost: 1, treeSize: 10 }),
      candidate(3, { cost: 1, treeSize: 10 }),
      candidate(4, { cost: 2, treeSize: 0 }),
    ];
    for (let seed = 0; seed < 20; seed++)
      expect(minCostPicker().pick(context({ rng: seededRng(seed) }), cs).key).toBe("2:0");
  });

  test("ties with equal tree sizes are drawn uniformly (seed 11)", () => {
    const cs = [
      candidate(1, { cost: 1, treeSize: 5 }),
      candidate(2, { cost: 1, treeSize: 5 }),
      candidate(3, { cost: 1, treeSize: 5 }),
      candidate(4, { cost: 7 }),
    ];
    const ctx = context({ rng: seededRng(11) });
    const counts = new Map<string, number>();
    for (let i = 0; i < 3000; i++) {
      const k = minCostPicker().pick(ctx, cs).key;
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    expect(counts.has("4:0")).toBe(false);
    for (const k of ["1:0", "2:0", "3:0"])
      expect(Math.abs(counts.get(k)! - 1000)).toBeLessThan(120);
  });

  test("without the tree-size tie-break, ties are random regardless of tree size (seed 5)", () => {
    const cs = [candidate(1, { cost: 1, treeSize: 0 }), candidate(2, { cost: 1, treeSize: 100 })];
    const ctx = context({ rng: seededRng(5) });
    const p = minCostPicker({ treeSizeTieBreak: false });
    const seen = new Set<string>();
    for (let i = 0; i < 50; i++) seen.add(p.pick(ctx, cs).key);
    expect(seen).toEqual(new Set(["1:0", "2:0"]));
  });
});
