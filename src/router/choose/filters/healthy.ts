/** Drop endpoints the health checks have fenced (`healthy: false`); absent means healthy. */
import type { Candidate, Filter, SchedulingContext } from "../types.ts";

export const healthy = {
  type: "healthy",
  filter(_ctx: SchedulingContext, candidates: readonly Candidate[]): readonly Candidate[] {
    for (const c of candidates)
      if (c.endpoint.healthy === false)
        return candidates.filter((x) => x.endpoint.healthy !== false);
    return candidates;
  },
} satisfies Filter;
