/**
 * Part of delay-to-others.ts (the kv policy's cost), for a request that starts a new prefix (no
 * engine holds any of its prompt: the first of a group, or a prompt nobody shares), and for a
 * candidate that would compute a group's prefix a second time while its first request is still
 * computing it on its home (no engine has finished it): the delay its
 * prefill causes the requests that will arrive behind it on the candidate's rank. Those arriving
 * while the prefill queued ahead of it drains (A) and during its own (T) wait T longer, the ones
 * arriving during T half of it on average; at the group traffic λ the rank draws
 * (books/prefix-traffic.ts `hostedPerMs`: each group it holds at its rate, shared among the
 * group's homes, and each new prefix booked there whose siblings have not come yet at the typical
 * group's rate) that is λ × (A + T ÷ 2) requests, each delayed T. At most one is counted: a
 * request that would wait longer behind it is routed elsewhere, where its prefix is computed
 * again (without the bound, a prompt of 40k tokens priced seconds of others' delay on noise in λ,
 * and the Mooncake synthetic trace lost up to 6% of its p90 in the timing simulation).
 *
 * Why: every engine computes a new prompt alike, so its predicted TTFT tells idle engines apart by
 * nothing, and the cluster-wide part of delay-to-others weighs them all the same. The new group's
 * first request then went to whichever engine the tie-breaks named, and on SGLang's
 * generated-shared-prefix load (16 groups, shuffled) one engine collected three groups while
 * another kept one (issue 44). Priced here, a new group goes where the fewest requests will queue
 * behind its prompt: the engine whose groups draw the least traffic, a group placed a moment ago
 * counted for the siblings it will bring. A sibling that arrives while the first prompt is still
 * computed predicts about as fast waiting for it (the engine's next step finds the prefix) as
 * computing it again elsewhere, and a second placement of the group was how engines came to
 * hold three (real runs on a loaded machine); priced, it waits unless the other engine's groups
 * draw no traffic (the timing simulation's agentic trace: p90 6,373 → 4,984 ms at full load).
 * Other requests of a known group are not priced here: where they go is their cache's and the
 * prediction's to say (priced for them too, the simulation's chat trace lost up to 24% of its p90).
 */
import type { Candidate, SchedulingContext } from "../types.ts";

/** min(1, λ × (A + T ÷ 2)) × T for candidate `c` (ms); 0 without a predictor, and for a known group unless inFlightOnly. */
export function arrivalsBehindMs(ctx: SchedulingContext, c: Candidate): number {
  const ttft = ctx.ttft;
  if (ttft === undefined) return 0;
  if (ctx.groupKey !== undefined && !inFlightOnly(ctx, c)) return 0;
  const uncached = c.uncachedTokens ?? 0;
  if (!(uncached > 0)) return 0;
  const lambda = ttft.traffic.hostedPerMs(c.key, ctx.now);
  if (lambda === 0) return 0;
  const msPerToken = c.msPerToken ?? ttft.msPerTokenOf(c.key);
  const own = msPerToken * uncached;
  const ahead = msPerToken * Math.max(0, (c.ttftTokens ?? uncached) - uncached);
  return Math.min(1, lambda * (ahead + own / 2)) * own;
}

/**
 * Whether `c` would compute again a group's prefix that no engine has finished yet (its first
 * request still prefilling on its home: no index entry reaches the group's depth), and `c` is not
 * that home. Such a sibling is a second new placement of the group, priced as the first was.
 */
function inFlightOnly(ctx: SchedulingContext, c: Candidate): boolean {
  const depth = ctx.groupDepth ?? 0;
  if (depth === 0 || c.overlapBlocks >= depth) return false;
  for (const s of ctx.request.overlaps.scores.values()) if (s >= depth) return false;
  return true;
}
