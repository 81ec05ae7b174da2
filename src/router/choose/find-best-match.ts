/**
 * One scheduling decision (spec §4.2 step 4 and §4.3 `schedule`): build candidates from
 * the endpoints, the caller's overlaps and the tracker's load; run the policy pipeline;
 * and, with `updateStates`, book the request on the chosen worker. No hashing or indexing
 * happens here (the caller passes overlaps and sequence hashes), so it stays a pure,
 * testable function. Queueing when all workers are busy is the caller's business.
 */
import { RouterError } from "../../core/errors.ts";
import type { WorkerId, WorkerKey } from "../../core/ids.ts";
import type { OverlapScores } from "../../core/overlap.ts";
import { buildCandidates } from "./candidates.ts";
import { resolveOverlapWeight, resolveSharedCacheMultiplier, resolveTemperature, type SchedulerConfig } from "./config.ts";
import type { LoadTracker } from "../books/load-tracker.ts";
import { runPipeline } from "./pipeline.ts";
import type { SharedCacheHits } from "./shared-cache.ts";
import type { Endpoint, Pipeline, RouterConfigOverride, Rng, SchedulingContext, SchedulingRequest, Selection } from "./types.ts";

export interface FindBestMatchInput {
  /** Cached prefix per (worker, dp_rank), from the indexer. */
  readonly overlaps: OverlapScores;
  /** Sequence hashes for block tracking (§2.5); null when not tracked. */
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
  /** Required when updateStates is true. */
  readonly requestId?: string;
  /** Book the request on the chosen worker (false for query-only requests). */
  readonly updateStates: boolean;
  readonly overrides?: RouterConfigOverride;
  readonly allowedWorkerIds?: ReadonlySet<WorkerId>;
  readonly expectedOutputTokens?: number;
  readonly loraName?: string;
  /** Expected prefill duration, booked with the request so its prefill load decays. */
  readonly expectedPrefillMs?: number;
  /** Blocks an external shared KV pool holds for this prompt (§1.9). */
  readonly sharedCacheHits?: SharedCacheHits;
  /** Ranks the engines report busy (engine metrics); the engine-busy filter skips them. */
  readonly busyKeys?: ReadonlySet<WorkerKey>;
  /** Requests waiting in each rank's engine (engine metrics), for the engine-waiting cost. */
  readonly engineWaiting?: ReadonlyMap<WorkerKey, number>;
  /** The client's session id, for policies that hash it. */
  readonly sessionId?: string;
}

export function findBestMatch(input: FindBestMatchInput): Selection {
  const { isl, config, tracker } = input;
  if (!(isl > 0)) throw new RouterError("invalid_request", "the prompt must have at least one token", "isl");
  if (input.updateStates && !input.requestId) {
    throw new RouterError("invalid_request", "a request id is needed to book the request", "requestId");
  }
  const request: SchedulingRequest = {
    isl,
    seqHashes: input.seqHashes,
    overlaps: input.overlaps,
    requestId: input.requestId,
    allowedWorkerIds: input.allowedWorkerIds,
    overrides: input.overrides,
    expectedOutputTokens: input.expectedOutputTokens,
    loraName: input.loraName,
    sharedCacheHits: input.sharedCacheHits,
    busyKeys: input.busyKeys,
    engineWaiting: input.engineWaiting,
    sessionId: input.sessionId,
  };
  const ctx: SchedulingContext = {
    request,
    blockSize: config.blockSize,
    overlapScoreWeight: resolveOverlapWeight(config, input.overrides),
    temperature: resolveTemperature(config, input.overrides),
    sharedCacheMultiplier: resolveSharedCacheMultiplier(config, input.overrides),
    inflightOverlap: input.pipeline.inflightOverlap ?? config.inflightOverlap,
    now: input.now,
    rng: input.rng,
  };
  const { chosen, candidates } = runPipeline(input.pipeline, ctx, buildCandidates(ctx, input.endpoints, tracker));
  const worker = chosen.endpoint.worker;
  if (input.updateStates) {
    // The chosen endpoint is schedulable, so the tracker should know it; register it when
    // the worker list and the tracker are momentarily out of step.
    if (!chosen.tracked) tracker.addWorkers([worker]);
    tracker.addRequest(
      {
        requestId: input.requestId!,
        worker,
        seqHashes: input.seqHashes,
        isl,
        overlap: chosen.overlapBlocks,
        expectedOutputTokens: input.expectedOutputTokens,
        loraName: input.loraName,
        expectedPrefillMs: input.expectedPrefillMs,
      },
      input.now,
    );
  }
  return {
    worker,
    key: chosen.key,
    overlapBlocks: chosen.overlapBlocks,
    requiredBlocks: Math.ceil(isl / config.blockSize),
    candidates,
  };
}
