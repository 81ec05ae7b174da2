/**
 * Builds the per-request view of each endpoint: its cache overlap (from the indexer's
 * OverlapScores) and its current and potential load (from the LoadTracker). For an
 * endpoint the tracker does not know, Dynamo's fallbacks apply: prefill = isl,
 * decode = floor(isl / blockSize), no active load.
 *
 * With `inflightOverlap`, a tracked endpoint's overlap is the longer of the index's and the
 * prefix its in-flight requests hold: sequence hashes chain the whole prefix, so the
 * request's blocks an endpoint holds are always a leading run of it. With `creditKeptPrefix`
 * (the policies that predict TTFT), that credit goes only as far as the engine can still hold
 * the prefix when this request starts, given its KV capacity (ActiveSequences.keptWhenItStarts).
 *
 * With a TTFT predictor in the context, every candidate also carries its predicted time to
 * first token (books/ttft-predictor.ts), the uncached tokens that prediction assumed, the
 * rank's speed it used, and the rank's decode step time at its running decodes (what a first
 * token there waits for, as much as the predictor's decode weight says).
 *
 * This runs once per endpoint per request, so at a thousand ranks it is written to allocate
 * nothing but the candidates themselves, and those only without a pool (candidate-pool.ts): no
 * prediction or speed objects, and overlaps read through the list's key → position table
 * (list-view.ts) instead of a Map lookup per endpoint.
 */
import type { LoadTracker } from "../books/load-tracker.ts";
import type { CandidatePool } from "./candidate-pool.ts";
import { listViewOf, overlapsByPosition } from "./list-view.ts";
import type { KvPlan } from "../kv-plan/plan.ts";
import type { Candidate, Endpoint, SchedulingContext } from "./types.ts";

export function buildCandidates(
  ctx: SchedulingContext,
  endpoints: readonly Endpoint[],
  tracker: LoadTracker,
  pool?: CandidatePool,
): Candidate[] {
  const { isl, seqHashes, overlaps, unseen: claimed } = ctx.request;
  const bs = ctx.blockSize;
  const ttft = ctx.ttft;
  const now = ctx.now;
  const latencyMs = ttft === undefined ? 0 : ttft.latencyMs;
  const planner = ctx.kvPlanner;
  const decodeWeight = ttft === undefined ? 0 : ttft.decodeWeight;
  // Sequence hashes chain the prefix: the blocks of it a slot holds are a leading run.
  const held = tracker.heldPrefixCounts(seqHashes);
  const n = seqHashes?.length ?? 0;
  const view = listViewOf(endpoints, tracker);
  const slots = view.seqs;
  const { scores, treeSizes } = overlapsByPosition(view, overlaps);
  const reused = pool?.candidatesFor(endpoints);
  const out: Candidate[] = reused ?? new Array(endpoints.length);
  for (let i = 0; i < endpoints.length; i++) {
    const e = endpoints[i]!;
    const indexed = scores[i]!;
    const treeSize = treeSizes[i]!;
    const seqs = slots[i];
    const msPerToken = ttft === undefined ? undefined : ttft.msPerTokenOf(e.key);
    // An untracked rank takes Dynamo's fallbacks, and has nothing queued ahead of this request.
    let overlapBlocks = indexed;
    let prefillTokens = isl;
    let decodeBlocks = Math.floor(isl / bs);
    let activePrefillTokens = 0;
    let activeDecodeBlocks = 0;
    let activeRequests = 0;
    let prefillingRequests: number | undefined;
    let lastBookedAt: number | undefined;
    let uncachedTokens = Math.max(0, isl - indexed * bs);
    let ttftTokens = msPerToken === undefined ? undefined : uncachedTokens;
    let stepMs = 0;
    // Claimed by decisions this router's books do not hold yet: queued ahead all the same, and
    // the prefix they share with this prompt is computed before it, as for a booked request.
    const unseen = claimed === undefined ? 0 : (claimed.tokens.get(e.key) ?? 0);
    if (seqs) {
      const heldHere = held[seqs.slot]!;
      let credited = Math.max(indexed, heldHere);
      if (unseen > 0) credited = Math.max(credited, claimed!.sharedBlocks.get(e.key) ?? 0);
      if (ctx.creditKeptPrefix) credited = seqs.keptWhenItStarts(seqHashes, credited);
      overlapBlocks = ctx.inflightOverlap ? credited : Math.min(indexed, credited);
      activePrefillTokens = seqs.activeTokens();
      activeDecodeBlocks = seqs.activeBlocks();
      activeRequests = seqs.activeRequests;
      prefillingRequests = seqs.prefillingRequests;
      lastBookedAt = seqs.lastBookedAt;
      uncachedTokens = seqs.newTokens(isl, credited);
      prefillTokens = seqs.newTokens(isl, overlapBlocks) + activePrefillTokens;
      decodeBlocks = n - heldHere + activeDecodeBlocks;
      ttftTokens =
        msPerToken === undefined
          ? undefined
          : ttft!.tokensBefore(seqs, msPerToken, uncachedTokens, now);
      if (ttft !== undefined) stepMs = ttft.stepMsOf(seqs, e.key);
    }
    if (unseen > 0) {
      activePrefillTokens += unseen;
      prefillTokens += unseen;
      if (ttftTokens !== undefined) ttftTokens += unseen;
    }
    const tracked = seqs !== undefined;
    let predictedTtftMs =
      ttftTokens === undefined
        ? undefined
        : latencyMs + msPerToken! * ttftTokens + decodeWeight * stepMs;
    // Part of what it would compute may come faster from its own tiers or a peer (kv-plan/).
    let kvPlan: KvPlan | undefined;
    if (planner !== undefined && seqs !== undefined && ttftTokens !== undefined) {
      kvPlan = planner.plan({
        key: e.key,
        worker: e.worker,
        creditedBlocks: overlapBlocks,
        uncachedTokens,
        msPerToken: msPerToken!,
      });
      if (kvPlan !== undefined) {
        uncachedTokens -= kvPlan.tokens;
        ttftTokens -= kvPlan.tokens;
        predictedTtftMs =
          latencyMs + msPerToken! * ttftTokens + decodeWeight * stepMs + kvPlan.transferMs;
        kvPlan.predictedTtftMs = predictedTtftMs;
      }
    }
    if (reused === undefined) {
      // A fresh object literal: building one is cheaper than filling a blank one.
      out[i] = {
        endpoint: e,
        key: e.key,
        overlapBlocks,
        treeSize,
        tracked,
        prefillTokens,
        decodeBlocks,
        activePrefillTokens,
        activeDecodeBlocks,
        activeRequests,
        prefillingRequests,
        lastBookedAt,
        uncachedTokens,
        predictedTtftMs,
        ttftTokens,
        msPerToken,
        stepMs,
        kvPlan,
        cost: 0,
      };
    } else {
      const c = reused[i]!;
      c.overlapBlocks = overlapBlocks;
      c.treeSize = treeSize;
      c.tracked = tracked;
      c.prefillTokens = prefillTokens;
      c.decodeBlocks = decodeBlocks;
      c.activePrefillTokens = activePrefillTokens;
      c.activeDecodeBlocks = activeDecodeBlocks;
      c.activeRequests = activeRequests;
      c.prefillingRequests = prefillingRequests;
      c.lastBookedAt = lastBookedAt;
      c.uncachedTokens = uncachedTokens;
      c.predictedTtftMs = predictedTtftMs;
      c.ttftTokens = ttftTokens;
      c.msPerToken = msPerToken;
      c.stepMs = stepMs;
      c.kvPlan = kvPlan;
      c.cost = 0;
    }
  }
  return out;
}
