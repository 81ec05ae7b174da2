/**
 * Builds the per-request view of each endpoint: its cache overlap (from the indexer's
 * OverlapScores) and its current and potential load (from the LoadTracker). For an
 * endpoint the tracker does not know, Dynamo's fallbacks apply: prefill = isl,
 * decode = floor(isl / blockSize), no active load.
 *
 * With `inflightOverlap`, a tracked endpoint's overlap is the longer of the index's and the
 * prefix its in-flight requests hold: sequence hashes chain the whole prefix, so the
 * request's blocks an endpoint holds are always a leading run of it.
 */
import type { LoadTracker } from "../books/load-tracker.ts";
import type { Candidate, Endpoint, SchedulingContext } from "./types.ts";

export function buildCandidates(ctx: SchedulingContext, endpoints: readonly Endpoint[], tracker: LoadTracker): Candidate[] {
  const { isl, seqHashes, overlaps } = ctx.request;
  const bs = ctx.blockSize;
  const held = tracker.heldCounts(seqHashes);
  const n = seqHashes?.length ?? 0;
  const out: Candidate[] = new Array(endpoints.length);
  for (let i = 0; i < endpoints.length; i++) {
    const e = endpoints[i]!;
    const indexed = overlaps.scores.get(e.key) ?? 0;
    const treeSize = overlaps.treeSizes.get(e.key) ?? 0;
    const seqs = tracker.slotOf(e.key);
    if (seqs) {
      const overlapBlocks = ctx.inflightOverlap ? Math.max(indexed, held[seqs.slot]!) : indexed;
      const activePrefillTokens = seqs.activeTokens();
      const activeDecodeBlocks = seqs.activeBlocks();
      out[i] = {
        endpoint: e,
        key: e.key,
        overlapBlocks,
        treeSize,
        tracked: true,
        prefillTokens: seqs.newTokens(isl, overlapBlocks) + activePrefillTokens,
        decodeBlocks: n - held[seqs.slot]! + activeDecodeBlocks,
        activePrefillTokens,
        activeDecodeBlocks,
        activeRequests: seqs.activeRequests,
        cost: 0,
      };
    } else {
      out[i] = {
        endpoint: e,
        key: e.key,
        overlapBlocks: indexed,
        treeSize,
        tracked: false,
        prefillTokens: isl,
        decodeBlocks: Math.floor(isl / bs),
        activePrefillTokens: 0,
        activeDecodeBlocks: 0,
        activeRequests: 0,
        cost: 0,
      };
    }
  }
  return out;
}
