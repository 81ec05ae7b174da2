/**
 * The vocabulary of the selection pipeline: filters narrow the candidates, weighted cost
 * terms price each one (lower is better), a picker chooses one. A new policy is a new
 * combination in registry.ts; a new idea is one new file under filters/, costs/ or pickers/.
 */
import type { UnseenClaims } from "../books/burst-claims.ts";
import type { RouterErrorCode } from "../../core/errors.ts";
import type { WorkerId, WorkerKey, WorkerWithDpRank } from "../../core/ids.ts";
import type { OverlapScores } from "../../core/overlap.ts";
import type { Rng } from "../../core/rng.ts";
import type { TtftPredictor } from "../books/ttft-predictor.ts";
import type { KvPlan, KvPlanner } from "../kv-plan/plan.ts";

/** One schedulable (worker, dp_rank) and its static facts, as the worker registry knows them. */
export interface Endpoint {
  readonly worker: WorkerWithDpRank;
  /** keyOf(worker), computed once by whoever builds the endpoint list. */
  readonly key: WorkerKey;
  /** Engine's max_num_batched_tokens, for the busy test (Dynamo's SchedulerQueue); unknown = never busy. */
  readonly maxNumBatchedTokens?: number;
  /** False when health checks fence the worker; absent = healthy. */
  readonly healthy?: boolean;
}

/** What the scheduler is asked to place. Hashing and indexing happened before. */
export interface SchedulingRequest {
  /** Prompt length in tokens; > 0. */
  readonly isl: number;
  /** Sequence hashes for active-block tracking (Dynamo's compute_seq_hashes_for_tracking); null when not tracked. */
  readonly seqHashes: BigUint64Array | null;
  /** Cached prefix depth per (worker, dp_rank), from the indexer. */
  readonly overlaps: OverlapScores;
  /** External routing: only these worker ids may be chosen. */
  readonly allowedWorkerIds?: ReadonlySet<WorkerId>;
  /** (worker, dp_rank)s the engines' own metrics report busy; skipped by the engine-busy filter. */
  readonly busyKeys?: ReadonlySet<WorkerKey>;
  /** Requests waiting in each rank's engine, as its metrics last said (the engine-waiting cost). */
  readonly engineWaiting?: ReadonlyMap<WorkerKey, number>;
  /** The client's session id (X-Session-ID), for policies that hash it (prodstack-session). */
  readonly sessionId?: string;
  /**
   * What other decisions have claimed on each rank that the tracker does not hold yet
   * (books/burst-claims.ts): their prefill counted as queued there, ahead of this request, and
   * the prefix they share with it as in flight there.
   */
  readonly unseen?: UnseenClaims;
}

/** Everything a plugin may read for one decision. Typed, not a bag. */
export interface SchedulingContext {
  readonly request: SchedulingRequest;
  readonly blockSize: number;
  /** SchedulerConfig.overlapScoreWeight. */
  readonly overlapScoreWeight: number;
  /** SchedulerConfig.temperature. */
  readonly temperature: number;
  /** See SchedulerConfig.inflightOverlap. */
  readonly inflightOverlap: boolean;
  /**
   * Credit a cached or in-flight prefix only as far as the rank's engine can still hold it when
   * this request starts (ActiveSequences.keptWhenItStarts; ranks of unknown capacity: all of it).
   * Set for the policies that predict TTFT, whose prediction is only as good as its uncached tokens.
   */
  readonly creditKeptPrefix?: boolean;
  readonly now: number;
  readonly rng: Rng;
  /** Predicts each candidate's TTFT from its books and learned speed; without it no candidate carries a prediction. */
  readonly ttft?: TtftPredictor;
  /**
   * Other live routers booking on these engines (the load sync's peers; 0 or absent: this one
   * alone). Their bookings reach these books a sync later, so decisions made in the same instant
   * all read the same books: the kv picker then draws among equal ranks instead of taking the
   * same one.
   */
  readonly otherRouters?: number;
  /**
   * The request's prefix group, set once the candidates are built (find-best-match.ts): the
   * sequence hash of the longest prefix of the prompt any endpoint holds or is computing, and that
   * depth in blocks (0 and undefined: none holds any of it, a new group).
   */
  groupKey?: bigint;
  groupDepth?: number;
  /**
   * Prices loads from a candidate's own tiers and pulls from peers (kv-plan/plan.ts), already
   * prepared with this request's overlaps; absent: every uncached token is computed.
   */
  readonly kvPlanner?: KvPlanner;
}

/** One endpoint as seen by this request: its cache overlap and load, then its cost. */
export interface Candidate {
  readonly endpoint: Endpoint;
  readonly key: WorkerKey;
  /** Prompt blocks cached there (overlaps.scores ?? 0). */
  readonly overlapBlocks: number;
  /** Blocks it has in the index (overlaps.treeSizes ?? 0): the tie-breaker. */
  readonly treeSize: number;
  /** Whether the load tracker knows this endpoint (else the loads below are Dynamo's fallbacks). */
  readonly tracked: boolean;
  /** Prefill tokens if this request went there: uncached prompt + active prefill. */
  readonly prefillTokens: number;
  /** Blocks it would hold if this request went there: new blocks + active blocks. */
  readonly decodeBlocks: number;
  readonly activePrefillTokens: number;
  readonly activeDecodeBlocks: number;
  readonly activeRequests: number;
  /** Requests whose prefill is still booked there (queued or running). */
  readonly prefillingRequests?: number;
  /** When a request was last booked there (ms; −Infinity: never; undefined: untracked): how cold its cache is. */
  readonly lastBookedAt?: number;
  /**
   * Prompt tokens the engine would compute for this request there: what is neither cached
   * nor being computed by a request ahead of it (in-flight prefixes always count here, whatever
   * the policy's own view, because the engine will find them cached when it gets to this one).
   */
  readonly uncachedTokens?: number;
  /** Predicted time to first token there (ms), when the context has a predictor. */
  readonly predictedTtftMs?: number;
  /** The prefill tokens that prediction counted before this request's first token (queued ahead + uncached). */
  readonly ttftTokens?: number;
  /** The rank's prefill ms per token that prediction used, so the costs need not look its speed up again. */
  readonly msPerToken?: number;
  /** The rank's decode step time at its running decodes (ms; 0: none running or none learned), as the prediction met it. */
  readonly stepMs?: number;
  /** The transfer its prediction counts (a load from its tiers or a pull from a peer), when one beats computing. */
  readonly kvPlan?: KvPlan;
  /** Σ weight·term, set by the pipeline. Lower is better. */
  cost: number;
}

export interface Filter {
  readonly type: string;
  /** Error code when this filter leaves no candidate (default no_endpoints). */
  readonly whenEmpty?: RouterErrorCode;
  /** Return the survivors; return the same array when nothing is removed. */
  filter(ctx: SchedulingContext, candidates: readonly Candidate[]): readonly Candidate[];
}

export interface CostTerm {
  readonly type: string;
  /** Once per decision, before any candidate is priced (a term that reads the whole set). */
  prepare?(ctx: SchedulingContext, candidates: readonly Candidate[]): void;
  cost(ctx: SchedulingContext, candidate: Candidate): number;
}

/** A cost term always comes with its weight (llm-d refuses a scorer without one). */
export interface WeightedCost {
  readonly term: CostTerm;
  readonly weight: number;
}

export interface Picker {
  readonly type: string;
  /** Choose one of a non-empty list whose costs are set. */
  pick(ctx: SchedulingContext, candidates: readonly Candidate[]): Candidate;
}

export interface Pipeline {
  readonly name: string;
  readonly filters: readonly Filter[];
  readonly costs: readonly WeightedCost[];
  readonly picker: Picker;
  /** Overrides SchedulerConfig.inflightOverlap for this policy (a peer's policy that has no such idea). */
  readonly inflightOverlap?: boolean;
  /** Its costs read predicted TTFTs: without a predictor from the router, one that knows only its prior is used. */
  readonly predictsTtft?: boolean;
}

/** The decision (Dynamo `WorkerSelectionResult` plus the priced candidates for debugging). */
export interface Selection {
  readonly worker: WorkerWithDpRank;
  readonly key: WorkerKey;
  /** Prompt blocks cached on the chosen worker. */
  readonly overlapBlocks: number;
  /** ceil(isl / blockSize). */
  readonly requiredBlocks: number;
  /** The chosen candidate's predicted TTFT (ms) and the prefill tokens it counted, when predicted. */
  readonly predictedTtftMs?: number;
  readonly ttftTokens?: number;
  readonly uncachedTokens?: number;
  /** The chosen rank's decode step time the prediction met (the TTFT sample's, for the decode weight). */
  readonly stepMs?: number;
  /**
   * The request's prefix group: the sequence hash of the longest prefix of it some candidate holds
   * or is computing (undefined: none, a new group). The routing service counts the arrival under it.
   */
  readonly groupKey?: bigint;
  /** That prefix's depth in blocks (0: none). */
  readonly groupDepth?: number;
  /** The chosen candidate's transfer plan, if any. */
  readonly kvPlan?: KvPlan;
  /** The candidates that survived the filters, with their costs. */
  readonly candidates: readonly Candidate[];
}
