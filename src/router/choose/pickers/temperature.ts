/**
 * The kv picker: the cheapest (ties by tree size, then random) at temperature 0, softmax
 * sampling above it. The temperature is the request's override or the config's.
 */
import type { Candidate, Picker, SchedulingContext } from "../types.ts";
import { pickMinCost } from "./min-cost.ts";
import { softmaxPicker } from "./softmax.ts";

export const temperaturePicker = {
  type: "temperature",
  pick(ctx: SchedulingContext, candidates: readonly Candidate[]): Candidate {
    return ctx.temperature > 0
      ? softmaxPicker.pick(ctx, candidates)
      : pickMinCost(ctx, candidates, true);
  },
} satisfies Picker;
