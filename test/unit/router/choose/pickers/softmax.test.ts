import { describe, expect, test } from "bun:test";
import {
  sampleIndex,
  softmaxPicker,
  softmaxProbabilities,
} from "../../../../../src/router/choose/pickers/softmax.ts";
import { candidate, context, seededRng } from "../helpers.ts";

describe("softmax sampling (§4.4 step 4)", () => {
  test("probabilities are exp(−(v − min)/((max − min)·T)), normalised", () => {
    const costs = [1, 2, 3];
    const T = 0.5;
    const w = costs.map((v) => Math.exp(-(v - 1) / ((3 - 1) * T)));
    const sum = w.reduce((a, b) => a + b, 0);
    const p = softmaxProbabilities(costs, T);
    p.forEach((x, i) => expect(x).toBeCloseTo(w[i]! / sum, 12));
  });

  test("equal costs give a uniform distribution", () => {
    expect(softmaxProbabilities([4, 4, 4, 4], 1)).toEqual([0.25, 0.25, 0.25, 0.25]);
  });

  test("the first index whose cumulative probability reaches u is chosen, the last as fallback", () => {
    expect(sampleIndex([0.2, 0.3, 0.5], 0)).toBe(0);
    expect(sampleIndex([0.2, 0.3, 0.5], 0.2)).toBe(0);
    expect(sampleIndex([0.2, 0.3, 0.5], 0.2000001)).toBe(1);
    expect(sampleIndex([0.2, 0.3, 0.5], 0.99)).toBe(2);
    expect(sampleIndex([0.2, 0.3, 0.4], 0.95)).toBe(2);
  });

  test("sampled frequencies follow the distribution (seed 2024, 20k draws)", () => {
    const cs = [candidate(1, { cost: 10 }), candidate(2, { cost: 12 }), candidate(3, { cost: 20 })];
    const ctx = context({ temperature: 0.3, rng: seededRng(2024) });
    const expected = softmaxProbabilities([10, 12, 20], 0.3);
    const counts = [0, 0, 0];
    const N = 20_000;
    for (let i = 0; i < N; i++) counts[cs.indexOf(softmaxPicker.pick(ctx, cs))]!++;
    counts.forEach((c, i) => expect(Math.abs(c / N - expected[i]!)).toBeLessThan(0.015));
    expect(counts[0]).toBeGreaterThan(counts[1]!);
    expect(counts[1]).toBeGreaterThan(counts[2]!);
  });

  test("a higher temperature flattens the distribution", () => {
    const cold = softmaxProbabilities([0, 1], 0.1);
    const hot = softmaxProbabilities([0, 1], 10);
    expect(cold[0]).toBeGreaterThan(0.99);
    expect(hot[0]).toBeLessThan(0.53);
  });
});
