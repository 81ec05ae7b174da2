/**
 * Softmax sampling over costs (Dynamo's DefaultWorkerSelector, temperature T > 0): with the cost range
 * [min, max], s_i = −(v_i / (max − min)) / T and p_i ∝ exp(s_i − max_j s_j), i.e.
 * exp(−(v_i − min) / ((max − min)·T)). Equal costs give a uniform draw. One u ~ U[0,1)
 * picks the first i whose cumulative probability reaches u (the last as a fallback).
 */
import type { Candidate, Picker, SchedulingContext } from "../types.ts";

/** The selection probabilities for these costs at temperature T > 0. */
export function softmaxProbabilities(costs: readonly number[], temperature: number): number[] {
  let min = Infinity;
  let max = -Infinity;
  for (const v of costs) {
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (min === max) return costs.map(() => 1 / costs.length);
  const range = max - min;
  const scaled = costs.map((v) => -(v / range) / temperature);
  let top = -Infinity;
  for (const s of scaled) if (s > top) top = s;
  const weights = scaled.map((s) => Math.exp(s - top));
  let sum = 0;
  for (const w of weights) sum += w;
  return weights.map((w) => w / sum);
}

export function sampleIndex(probabilities: readonly number[], u: number): number {
  let cumulative = 0;
  for (let i = 0; i < probabilities.length; i++) {
    cumulative += probabilities[i]!;
    if (cumulative >= u) return i;
  }
  return probabilities.length - 1;
}

export const softmaxPicker = {
  type: "softmax",
  pick(ctx: SchedulingContext, candidates: readonly Candidate[]): Candidate {
    const p = softmaxProbabilities(
      candidates.map((c) => c.cost),
      ctx.temperature,
    );
    return candidates[sampleIndex(p, ctx.rng())]!;
  },
} satisfies Picker;
