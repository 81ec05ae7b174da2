/**
 * Round-robin baseline: the next candidate in list order each call, ignoring costs.
 * Stateful (a counter per picker instance), so each pipeline gets its own.
 */
import type { Picker } from "../types.ts";

export function roundRobinPicker(): Picker {
  let next = 0;
  return {
    type: "round-robin",
    pick(_ctx, candidates) {
      return candidates[next++ % candidates.length]!;
    },
  };
}
