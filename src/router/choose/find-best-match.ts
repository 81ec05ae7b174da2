/**
 * One scheduling decision (Dynamo's KvRouter::find_best_match and SchedulerQueue::schedule): build candidates from
 * the endpoints, the caller's overlaps and the tracker's load; run the policy pipeline.
 * It only chooses: booking the chosen worker is the request's lease (books/request-lease.ts),
 * so a decision has no side effects. No hashing or indexing happens here (the caller passes
 * overlaps and sequence hashes), so it stays a pure, testable function. Queueing when all
 * workers are busy is the caller's business.
 */
import { RouterError } from "../../core/errors.ts";
import type { WorkerId, WorkerKey } from "../../core/ids.ts";
import type { OverlapScores } from "../../core/overlap.ts";
import type { CandidatePool } from "./candidate-pool.ts";
import { buildCandidates } from "./candidates.ts";
import type { SchedulerConfig } from "./config.ts";
import type { LoadTracker } from "../books/load-tracker.ts";
import { TtftPredictor } from "../books/ttft-predictor.ts";
import type { UnseenClaims } from "../books/burst-claims.ts";
import { groupOf } from "./costs/group-decodes.ts";
import { runPipeline } from "./pipeline.ts";
import type { Rng } from "../../core/rng.ts";
import type { KvPlanner } from "../kv-plan/plan.ts";
import type {
  Endpoint,
  Pipeline,
  SchedulingContext,
  SchedulingRequest,
  Selection,
} from "./types.ts";

export interface FindBestMatchInput {
  /** Cached prefix per (worker, dp_rank), from the indexer. */
  readonly overlaps: OverlapScores;
  /** Sequence hashes for block tracking (Dynamo's compute_seq_hashes_for_tracking); null when not tracked. */
  readonly seqHashes: BigUint64Array | null;
  /** Prompt length in tokens; must be > 0. */
  readonly isl: number;
  /** The schedulable (worker, dp_rank)s (see endpoints.ts). */
  readonly endpoints: readonly Endpoint[];
  readonly tracker: LoadTracker;
  readonly pipeline: Pipeline;
  readonly config: SchedulerConfig;
  readonly now: number;
  readonly rng: Rng;
  readonly allowedWorkerIds?: ReadonlySet<WorkerId>;
  /** Ranks the engines report busy (engine metrics); the engine-busy filter skips them. */
  readonly busyKeys?: ReadonlySet<WorkerKey>;
  /** Requests waiting in each rank's engine (engine metrics), for the engine-waiting cost. */
  readonly engineWaiting?: ReadonlyMap<WorkerKey, number>;
  /** The client's session id, for policies that hash it. */
  readonly sessionId?: string;
  /** What other decisions claimed per rank that the tracker does not hold yet (SchedulingRequest.unseen). */
  readonly unseen?: UnseenClaims;
  /** Predicts each candidate's TTFT (the kv policy's cost; the others' decisions carry it for the metric). */
  readonly ttft?: TtftPredictor;
  /** Other live routers booking on these engines (SchedulingContext.otherRouters); absent: none. */
  readonly otherRouters?: number;
  /**
   * Reuse these candidate objects (candidate-pool.ts): the Selection's candidates are then valid
   * only until the next decision on the same endpoint list, so a caller that keeps any copies them.
   */
  readonly candidatePool?: CandidatePool;
  /** Prices loads from tiers and pulls from peers for the policies that predict TTFT (kv-plan/); absent: none. */
  readonly kvPlanner?: KvPlanner;
}

/**
 * The prior-only predictors, one per block size. Nothing here teaches them (the scheduler only
 * reads speeds and predictions), so one can serve every such decision; building one per
 * decision cost a 10 kB scratch array each time.
 */
const priorPredictors = new Map<number, TtftPredictor>();
function priorPredictor(blockSize: number): TtftPredictor {
  let p = priorPredictors.get(blockSize);
  if (p === undefined) priorPredictors.set(blockSize, (p = new TtftPredictor({ blockSize })));
  return p;
}

export function findBestMatch(input: FindBestMatchInput): Selection {
  const { isl, config, tracker } = input;
  if (!(isl > 0))
    throw new RouterError("invalid_request", "the prompt must have at least one token", "isl");
  const request: SchedulingRequest = {
    isl,
    seqHashes: input.seqHashes,
    overlaps: input.overlaps,
    allowedWorkerIds: input.allowedWorkerIds,
    busyKeys: input.busyKeys,
    engineWaiting: input.engineWaiting,
    sessionId: input.sessionId,
    unseen: input.unseen,
  };
  const ctx: SchedulingContext = {
    request,
    blockSize: config.blockSize,
    overlapScoreWeight: config.overlapScoreWeight,
    temperature: config.temperature,
    inflightOverlap: input.pipeline.inflightOverlap ?? config.inflightOverlap,
    creditKeptPrefix: input.pipeline.predictsTtft === true,
    now: input.now,
    rng: input.rng,
    // A caller without a router's predictor (a bench, a test) still gets predictions: the
    // prior speed on every engine, which orders candidates by prefill tokens queued and uncached.
    ttft:
      input.ttft ?? (input.pipeline.predictsTtft ? priorPredictor(config.blockSize) : undefined),
    otherRouters: input.otherRouters,
    // Only where a tier holds some of the prompt: otherwise no candidate can load or pull any of it.
    kvPlanner:
      input.kvPlanner !== undefined &&
      input.pipeline.predictsTtft === true &&
      input.kvPlanner.prepare(input.overlaps, config.blockSize, input.now)
        ? input.kvPlanner
        : undefined,
  };
  const built = buildCandidates(ctx, input.endpoints, tracker, input.candidatePool);
  // Every endpoint's, before the filters: a group is where its prefix is, even on a rank that cannot take this request.
  const group = ctx.ttft === undefined ? undefined : groupOf(input.seqHashes, built);
  ctx.groupKey = group?.key;
  ctx.groupDepth = group?.depth ?? 0;
  const { chosen, candidates } = runPipeline(input.pipeline, ctx, built);
  return {
    worker: chosen.endpoint.worker,
    key: chosen.key,
    overlapBlocks: chosen.overlapBlocks,
    requiredBlocks: Math.ceil(isl / config.blockSize),
    predictedTtftMs: chosen.predictedTtftMs,
    ttftTokens: chosen.ttftTokens,
    uncachedTokens: chosen.uncachedTokens,
    stepMs: chosen.stepMs,
    groupKey: ctx.groupKey,
    groupDepth: ctx.groupDepth,
    kvPlan: chosen.kvPlan,
    candidates,
  };
}
