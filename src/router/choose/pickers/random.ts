/** Random baseline: a uniform draw from the candidates with the injected rng, ignoring costs. */
import type { Candidate, Picker, SchedulingContext } from "../types.ts";

export const randomPicker = {
  type: "random",
  pick(ctx: SchedulingContext, candidates: readonly Candidate[]): Candidate {
    return candidates[Math.floor(ctx.rng() * candidates.length)]!;
  },
} satisfies Picker;
