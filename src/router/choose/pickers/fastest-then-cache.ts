/**
 * The kv picker: the lowest cost (predicted TTFT); among the candidates whose cost is within
 * `tolerance(ctx, best)` of it, the one that leaves the cache better placed for what comes next:
 * the most of this prompt already cached or being computed there (so its blocks are not copied
 * to a second engine, and the next request sharing them finds one home), then the fewer KV
 * blocks held by running requests (decoding shares the engine with prefill on real engines, and
 * requests answered at once never show in a prefill queue), then the coldest cache (the rank
 * that had a request booked longest ago: a new prefix evicts what nobody has used for longest,
 * and does not land beside another prefix family's traffic), then the fewer blocks in the index
 * (among ranks never used: caches fill evenly), then a uniform draw.
 *
 * Why the coldest before the emptiest: once the caches are full (in service, always; in the
 * bench, after the warm-up) every engine has the same index size, so a new prompt was drawn at
 * random among idle engines, and on the held-out agentic fan-out at half load one router put
 * two to five of the six agents' tool prompts on one engine while two or three engines stood
 * idle: the agents evicted one another's prompts and their bursts queued together (placement p90
 * 57-77 ms against SGLang's 46 in three runs of eight; SGLang's smallest-tree choice spread them).
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
      let pick: Candidate | undefined;
      // The pick's index size, read once the last tie-break needs it (-1: not read yet).
      let pickBlocks = -1;
      let ties = 0;
      for (const c of candidates) {
        if (!(c.cost <= limit)) continue;
        let better = pick === undefined ? 1 : compareLoad(c, pick);
        let cBlocks = -1;
        if (better === 0) {
          if (pickBlocks < 0) pickBlocks = indexBlocks(ctx, pick!);
          cBlocks = indexBlocks(ctx, c);
          better = cBlocks === pickBlocks ? 0 : cBlocks < pickBlocks ? 1 : -1;
        }
        if (better > 0) {
          pick = c;
          pickBlocks = cBlocks;
          ties = 1;
        } else if (better === 0) {
          // Reservoir draw among equals: each of `ties` equal candidates kept with probability 1/ties.
          ties++;
          if (ctx.rng() * ties < 1) pick = c;
        }
      }
      return pick ?? best;
    },
  };
}

/** > 0 when `a` leaves the cache better placed than `b` by what it must compute, then by what runs there, then by how cold its cache is. */
function compareLoad(a: Candidate, b: Candidate): number {
  const ua = a.uncachedTokens ?? a.prefillTokens;
  const ub = b.uncachedTokens ?? b.prefillTokens;
  if (ua !== ub) return ua < ub ? 1 : -1;
  if (a.decodeBlocks !== b.decodeBlocks) return a.decodeBlocks < b.decodeBlocks ? 1 : -1;
  const la = a.lastBookedAt;
  const lb = b.lastBookedAt;
  // An untracked rank's history is unknown: it ties with every other on this count.
  if (la !== undefined && lb !== undefined && la !== lb) return la < lb ? 1 : -1;
  return 0;
}

/** Blocks the candidate's rank has in the index: every rank's where the index says, else Dynamo's tree size. */
function indexBlocks(ctx: SchedulingContext, c: Candidate): number {
  const blocksOf = ctx.request.overlaps.indexBlocksOf;
  return blocksOf === undefined ? c.treeSize : blocksOf(c.endpoint.worker);
}
