/**
 * The candidate builder as it was before the allocation-free one (src/router/choose/candidates.ts),
 * kept verbatim as the reference the differential test compares it with: every field of every
 * candidate must come out the same, over seeded random fleets.
 *
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
 * first token (books/ttft-predictor.ts) and the uncached tokens that prediction assumed.
 */
import type { WorkerKey } from "../../../../src/core/ids.ts";
import type { ActiveSequences } from "../../../../src/router/books/active-sequences.ts";
import type { LoadTracker } from "../../../../src/router/books/load-tracker.ts";
import type {
  EngineSpeed,
  TtftPrediction,
  TtftPredictor,
} from "../../../../src/router/books/ttft-predictor.ts";
import type {
  Candidate,
  Endpoint,
  SchedulingContext,
} from "../../../../src/router/choose/types.ts";

interface SlotList {
  readonly tracker: LoadTracker;
  readonly version: number;
  readonly seqs: readonly (ActiveSequences | undefined)[];
}
/**
 * Each endpoint list's tracker slots, resolved once per list and tracker slot set: the list is
 * reused by every request until membership changes, and a string-keyed lookup per endpoint per
 * request was a tenth of a 1,024-worker decision.
 */
const slotLists = new WeakMap<readonly Endpoint[], SlotList>();

function slotsOf(
  endpoints: readonly Endpoint[],
  tracker: LoadTracker,
): readonly (ActiveSequences | undefined)[] {
  const cached = slotLists.get(endpoints);
  if (cached !== undefined && cached.tracker === tracker && cached.version === tracker.slotsVersion)
    return cached.seqs;
  const seqs = endpoints.map((e) => tracker.slotOf(e.key));
  slotLists.set(endpoints, { tracker, version: tracker.slotsVersion, seqs });
  return seqs;
}

export function referenceCandidates(
  ctx: SchedulingContext,
  endpoints: readonly Endpoint[],
  tracker: LoadTracker,
): Candidate[] {
  const { isl, seqHashes, overlaps } = ctx.request;
  const bs = ctx.blockSize;
  // Sequence hashes chain the prefix: the blocks of it a slot holds are a leading run.
  const held = tracker.heldPrefixCounts(seqHashes);
  const n = seqHashes?.length ?? 0;
  const slots = slotsOf(endpoints, tracker);
  // Usually only a few workers hold any of the prompt: skip the per-endpoint lookups when none does.
  const scores = overlaps.scores.size > 0 ? overlaps.scores : undefined;
  const treeSizes = overlaps.treeSizes.size > 0 ? overlaps.treeSizes : undefined;
  const out: Candidate[] = new Array(endpoints.length);
  for (let i = 0; i < endpoints.length; i++) {
    const e = endpoints[i]!;
    const indexed = scores === undefined ? 0 : (scores.get(e.key) ?? 0);
    const treeSize = treeSizes === undefined ? 0 : (treeSizes.get(e.key) ?? 0);
    const seqs = slots[i];
    if (seqs) {
      let credited = Math.max(indexed, held[seqs.slot]!);
      if (ctx.creditKeptPrefix) credited = seqs.keptWhenItStarts(seqHashes, credited);
      const overlapBlocks = ctx.inflightOverlap ? credited : Math.min(indexed, credited);
      const activePrefillTokens = seqs.activeTokens();
      const activeDecodeBlocks = seqs.activeBlocks();
      const uncachedTokens = seqs.newTokens(isl, credited);
      const p = referencePredict(ctx.ttft, seqs, e.key, uncachedTokens, ctx.now);
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
        prefillingRequests: seqs.prefillingRequests,
        lastBookedAt: seqs.lastBookedAt,
        uncachedTokens,
        predictedTtftMs: p?.ms,
        ttftTokens: p?.tokens,
        cost: 0,
      };
    } else {
      const uncachedTokens = Math.max(0, isl - indexed * bs);
      const p = referencePredict(ctx.ttft, undefined, e.key, uncachedTokens, ctx.now);
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
        uncachedTokens,
        predictedTtftMs: p?.ms,
        ttftTokens: p?.tokens,
        cost: 0,
      };
    }
  }
  return out;
}

/** TtftPredictor.predict as it was: speed(key) and prefillHead() objects, read per candidate. */
function referencePredict(
  ttft: TtftPredictor | undefined,
  seqs: ActiveSequences | undefined,
  key: WorkerKey,
  uncachedTokens: number,
  now: number,
): TtftPrediction | undefined {
  if (ttft === undefined) return undefined;
  const sp = ttft.speed(key);
  const tokens = (seqs === undefined ? 0 : tokensAhead(seqs, sp, now)) + uncachedTokens;
  return { ms: sp.latencyMs + sp.msPerToken * tokens, tokens };
}

function tokensAhead(seqs: ActiveSequences, sp: EngineSpeed, now: number): number {
  if (seqs.prefillingRequests === 0) return 0;
  const total = seqs.activeTokens();
  const head = seqs.prefillHead();
  if (head === undefined || !(sp.msPerToken > 0)) return total;
  const started = Math.max(head.bookedAt, seqs.lastPrefillDoneAt);
  const done = Math.min(head.tokens, Math.max(0, now - started) / sp.msPerToken);
  return total - done;
}
