import { describe, expect, test } from "bun:test";
import { temperaturePicker } from "../../../../../src/router/choose/pickers/temperature.ts";
import { candidate, context, seededRng } from "../helpers.ts";

describe("temperature picker (the kv picker)", () => {
  test("is the min-cost picker at T = 0 and samples above it", () => {
    const cs = [candidate(1, { cost: 1 }), candidate(2, { cost: 1.01 })];
    for (let s = 0; s < 30; s++)
      expect(temperaturePicker.pick(context({ temperature: 0, rng: seededRng(s) }), cs).key).toBe(
        "1:0",
      );
    const ctx = context({ temperature: 5, rng: seededRng(9) });
    const seen = new Set<string>();
    for (let i = 0; i < 50; i++) seen.add(temperaturePicker.pick(ctx, cs).key);
    expect(seen.size).toBe(2);
  });
});
