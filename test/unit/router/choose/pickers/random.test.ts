import { describe, expect, test } from "bun:test";
import { randomPicker } from "../../../../../src/router/choose/pickers/random.ts";
import { candidate, context, seededRng } from "../helpers.ts";

describe("random picker", () => {
  const cs = [
    candidate(1, { cost: 0 }),
    candidate(2, { cost: 9 }),
    candidate(3, { cost: 9 }),
    candidate(4, { cost: 9 }),
  ];

  test("draws uniformly with the injected rng, ignoring costs (seed 77)", () => {
    const ctx = context({ rng: seededRng(77) });
    const counts = new Map<string, number>();
    for (let i = 0; i < 4000; i++) {
      const k = randomPicker.pick(ctx, cs).key;
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    for (const k of ["1:0", "2:0", "3:0", "4:0"])
      expect(Math.abs(counts.get(k)! - 1000)).toBeLessThan(120);
  });

  test("the same seed gives the same choices", () => {
    const a = context({ rng: seededRng(3) });
    const b = context({ rng: seededRng(3) });
    expect(Array.from({ length: 8 }, () => randomPicker.pick(a, cs).key)).toEqual(
      Array.from({ length: 8 }, () => randomPicker.pick(b, cs).key),
    );
  });
});
