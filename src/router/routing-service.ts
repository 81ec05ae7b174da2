/**
 * One routing decision and the load it books (Dynamo's KvRouter::find_best_match, its push-router booking lifecycle and its sticky sessions): session binding if it
 * is still alive, else hash -> match -> schedule (the scheduler only chooses); then book the
 * request on the chosen (worker, dp_rank) through its lease (request-lease.ts), record the
 * decision in an approximate index, and bind the session.
 * The lifecycle that follows (prefill done, output blocks, free) is in request-lease.ts.
 * Web standards only: no Request/Response here, so the HTTP routes stay thin. Pure (src/router):
 * clock, rng, metrics and the router's identity are injected.
 */
import {
  computeBlockHashesWith,
  seqHasherOf,
  type BatchBlockHasher,
  type SeqHasher,
} from "../core/block-hash.ts";
import {
  routerIdHex,
  type RouterId,
  type WorkerId,
  type WorkerKey,
  type WorkerWithDpRank,
} from "../core/ids.ts";
import type { KvIndex } from "./kv-index/types.ts";
import type { OverlapScores } from "../core/overlap.ts";
import type { SchedulerConfig } from "./choose/config.ts";
import { endpoint } from "./choose/endpoints.ts";
import { CandidatePool } from "./choose/candidate-pool.ts";
import { findBestMatch } from "./choose/find-best-match.ts";
import { keepCandidates, type KeptCandidates } from "./choose/kept-candidates.ts";
import type { LoadTracker } from "./books/load-tracker.ts";
import type { Rng } from "../core/rng.ts";
import type { Candidate, Endpoint, Pipeline, Selection } from "./choose/types.ts";
import {
  claimPrefix,
  unseenClaims,
  type BurstClaim,
  type BurstClaims,
  type HeldClaim,
  type UnseenClaims,
} from "./books/burst-claims.ts";
import type { StickyRouter } from "./sessions/sticky.ts";
import type { RoutableWorkers, RoutingObserver } from "./ports.ts";
import { RequestLease } from "./books/request-lease.ts";
import type { PrefixTraffic } from "./books/prefix-traffic.ts";
import { learnFromFirstToken, type KvPlan, type KvPlanner } from "./kv-plan/plan.ts";
import type { FirstTokenHook } from "./books/request-lease.ts";
import {
  decodeSampler,
  firstTokenSampler,
  queueAtBooking,
  type TtftPredictor,
} from "./books/ttft-predictor.ts";
import {
  applySessionTurn,
  type EngineSessionOps,
  type SessionControl,
} from "./sessions/session-control.ts";
import type { AdmissionGate, AdmitOptions } from "./admission/admission-gate.ts";

export interface RoutingDeps {
  /** This router's identity: the prefix of its request ids. */
  readonly routerId: RouterId;
  readonly registry: RoutableWorkers;
  readonly index: KvIndex;
  readonly tracker: LoadTracker;
  readonly pipeline: Pipeline;
  readonly scheduler: SchedulerConfig;
  /** Block hasher; its sequence hasher (native when it brings one) is used too. */
  readonly hasher: BatchBlockHasher;
  readonly sticky: StickyRouter;
  readonly metrics: RoutingObserver;
  /** Milliseconds, monotonic enough for load decay and TTLs. */
  readonly now: () => number;
  /** High-resolution milliseconds for the phase timings (default: `now`). */
  readonly timer?: () => number;
  readonly rng: Rng;
  /** Approximate mode: the index learns from the router's own decisions. */
  readonly recordDecisions: boolean;
  /**
   * The index of prompts the router cannot tokenize as the engine does (text for a model
   * without a tokenizer): it learns only from this router's own decisions on such prompts,
   * as SGLang's router does, and never mixes with the engines' events. Without it they use `index`.
   */
  readonly approxIndex?: KvIndex;
  /**
   * The (worker, dp rank)s whose events the cache check (src/fleet/cache-truth) found false:
   * they are scored from `fallbackIndex`, the router's own decisions on them, instead of the
   * index their events built. Undefined: no check, and the decisions carry no check facts.
   */
  readonly distrusted?: () => ReadonlySet<WorkerKey>;
  readonly fallbackIndex?: KvIndex;
  readonly sessionTtlMs: number;
  /** Opens / closes engine-backed sessions (nvext.session_control); without it they are refused. */
  readonly engineSessions?: EngineSessionOps;
  /** Ranks the engines' own metrics report busy right now; undefined = none known. */
  readonly busyKeys?: () => ReadonlySet<WorkerKey> | undefined;
  /** Requests waiting in each rank's engine (engine metrics), for the engine-waiting cost; undefined = none known. */
  readonly engineWaiting?: () => ReadonlyMap<WorkerKey, number> | undefined;
  /**
   * Booked prefill tokens a rank may hold (its max_num_batched_tokens, --worker-capacity):
   * with --busy-threshold, a rank past threshold × this is busy. Undefined = unbounded.
   */
  readonly capacityTokens?: number;
  /** Where requests wait while every candidate is busy (routeOrWait); without it they get all_workers_busy at once. */
  readonly admission?: AdmissionGate;
  /** Predicts each candidate's TTFT (the kv policy's cost) and learns each engine's speed from the first tokens the leases report. */
  readonly ttft?: TtftPredictor;
  /** Other live routers booking on the same engines (the load sync's peers); without it: none. */
  readonly otherRouters?: () => number;
  /**
   * Where routers in front of the same engines claim their decisions (books/burst-claims.ts;
   * Redis, with --redis): the kv policy's choices are claimed, and made again counting the
   * prompts other decisions claimed that these books do not hold yet. Without it: no claims.
   */
  readonly claims?: BurstClaims;
  /** Prices loads from engines' tiers and pulls from peers, and learns their speeds (kv-plan/); without it: none. */
  readonly kvPlanner?: KvPlanner;
}

/** A prompt's block hashes, computed once per request and reused by its retries. */
export interface PromptHashes {
  readonly hashes: BigUint64Array;
  readonly seqHashes: BigUint64Array;
}

export interface RouteInput {
  readonly tokens: Uint32Array;
  /** The prompt's hashes from prepare() (retries reuse them); computed here when absent. */
  readonly prepared?: PromptHashes;
  /** The tokens are not the engine's (text without a tokenizer): match and learn in `approxIndex`. */
  readonly approximate?: boolean;
  readonly requestId: string;
  readonly loraName?: string;
  readonly sessionId?: string;
  /** nvext.session_control: an engine-backed session turn (takes the place of sessionId). */
  readonly sessionControl?: SessionControl;
  /** Only these workers may serve it (a LoRA request: the workers holding the adapter). */
  readonly allowedWorkerIds?: ReadonlySet<WorkerId>;
  /** Workers that already failed this request (retries). */
  readonly exclude?: ReadonlySet<WorkerId>;
  /**
   * Another worker computes the prompt (the decode half of a P/D pair): this worker's first token
   * comes after that prefill and the KV transfer, so it says nothing about this worker's prefill
   * speed, and the TTFT predictor does not learn from it.
   */
  readonly prefilledElsewhere?: boolean;
}

export interface RouteDecision {
  readonly worker: WorkerWithDpRank;
  readonly overlapBlocks: number;
  /** True when a live session binding chose the worker. */
  readonly sticky: boolean;
  /** The booking; release it exactly once (lease.free()). */
  readonly lease: RequestLease;
  /**
   * What the status page and traces explain the choice with: copies of the cheapest candidates
   * the policy weighed and of the chosen one, costs set (choose/kept-candidates.ts).
   */
  readonly candidates: readonly Candidate[];
  /** How many candidates the policy weighed. */
  readonly candidatesTotal: number;
  /** The most prompt blocks any candidate had cached. */
  readonly bestOverlapBlocks: number;
  /**
   * With the cache check on (RoutingDeps.distrusted): what the events' index matched on the chosen
   * rank (also when the fallback scored it), the leading blocks requests in flight there were
   * computing, and the blocks hashed. What the engine's reported cached tokens are checked against.
   */
  readonly check?: {
    readonly indexBlocks: number;
    readonly inFlightBlocks: number;
    readonly routedBlocks: number;
  };
  /**
   * The transfer the decision counted on (kv-plan/plan.ts): a load from the chosen engine's tiers,
   * or a pull from the peer the edge names to the engine. Its observed TTFT is filled in at the first token.
   */
  readonly kvPlan?: KvPlan;
}

function planSampler(
  planner: KvPlanner,
  plan: KvPlan,
  bookedAt: number,
  compute: FirstTokenHook | undefined,
): FirstTokenHook {
  return (at) => {
    learnFromFirstToken(planner.rates, plan, at - bookedAt);
    compute?.(at - plan.transferMs);
  };
}

/** How routeOrWait waits, and what the caller sees of its tries. */
export interface RouteWaitOptions extends AdmitOptions<RouteDecision> {
  /**
   * Wraps every routing attempt (the first, and each re-try from the admission queue), so the
   * caller can time them with its own clock: the last attempt is the decision, the time before
   * it the wait (the access log's admission wait and the trace's route span come from this).
   */
  readonly eachAttempt?: (attempt: () => Promise<RouteDecision>) => () => Promise<RouteDecision>;
}

export class RoutingService {
  #endpointsFor: readonly WorkerWithDpRank[] | undefined;
  #endpoints: Endpoint[] = [];
  #seq = 0;
  /**
   * The router's id, not the start time: a request id then names one request across every
   * router (load-sync messages, POST /v1/route answers, logs), even for routers started in
   * the same millisecond.
   */
  readonly #prefix: string;
  readonly #seqHasher: SeqHasher;

  /** Candidate objects reused decision after decision: nothing of them outlives route() but the kept copies. */
  readonly #candidatePool = new CandidatePool();

  constructor(private readonly d: RoutingDeps) {
    this.#prefix = `${routerIdHex(d.routerId)}-`;
    this.#seqHasher = seqHasherOf(d.hasher);
  }

  /** A request id unique within this router's life and across routers, cheap to make. */
  nextRequestId(): string {
    return this.#prefix + (this.#seq++).toString(36);
  }

  /**
   * Hash a prompt once per request (block hashes + sequence hashes); pass the result to
   * route(). Only its first MAX_ROUTED_BLOCKS blocks: matching, booking and recording a
   * decision all touch every hashed block, and past that depth no cached prefix changes where
   * the prompt is cheapest (the whole length still counts as its prefill load).
   */
  prepare(tokens: Uint32Array, loraName: string | undefined): PromptHashes {
    const bs = this.d.scheduler.blockSize;
    const routed =
      tokens.length > MAX_ROUTED_BLOCKS * bs ? tokens.subarray(0, MAX_ROUTED_BLOCKS * bs) : tokens;
    const hashes = computeBlockHashesWith(this.d.hasher, routed, bs, { loraName });
    return { hashes, seqHashes: this.#seqHasher(hashes) };
  }

  /**
   * Route and book now or, while every candidate is busy, wait in the admission gate until one
   * frees up (priority order; 429 queue_full / queue_timeout; a client that leaves is taken
   * out, and a decision it left behind goes to `abandon`). The one call the HTTP edge makes,
   * so the gate's retries stay inside the router.
   */
  routeOrWait(input: RouteInput, wait: RouteWaitOptions = {}): Promise<RouteDecision> {
    const gate = this.d.admission;
    const once = () => this.route(input);
    const attempt = wait.eachAttempt !== undefined ? wait.eachAttempt(once) : once;
    return gate === undefined ? attempt() : gate.admit(attempt, wait);
  }

  /** Route and book. Throws RouterError (no_endpoints, duplicate_request, ...). */
  async route(input: RouteInput): Promise<RouteDecision> {
    const d = this.d;
    const timer = d.timer ?? d.now;
    const t0 = timer();
    const bs = d.scheduler.blockSize;
    const { hashes, seqHashes } = input.prepared ?? this.prepare(input.tokens, input.loraName);
    const t1 = timer();
    const approx = input.approximate === true && d.approxIndex !== undefined;
    const index = approx ? d.approxIndex! : d.index;
    const indexed = index.findMatches(hashes);
    const distrusted = approx ? undefined : d.distrusted?.();
    const overlaps =
      distrusted !== undefined && distrusted.size > 0 && d.fallbackIndex !== undefined
        ? withFallback(indexed, d.fallbackIndex.findMatches(hashes), distrusted)
        : indexed;
    const t2 = timer();

    const sc = input.sessionControl;
    const sessionId = sc?.sessionId ?? input.sessionId;
    // Open and close turns only peek: the binding changes with this turn anyway.
    const pinned =
      sessionId !== undefined
        ? await this.#liveBinding(sessionId, sc?.action === undefined, input)
        : undefined;
    const t3 = timer();
    const endpoints = pinned
      ? [endpoint(pinned.workerId, pinned.dpRank)]
      : this.#schedulable(input.exclude);
    const choose = (now: number, unseen?: UnseenClaims) =>
      findBestMatch({
        overlaps,
        seqHashes,
        isl: input.tokens.length,
        endpoints,
        tracker: d.tracker,
        pipeline: d.pipeline,
        config: d.scheduler,
        now,
        rng: d.rng,
        allowedWorkerIds: input.allowedWorkerIds,
        busyKeys: d.busyKeys?.(),
        engineWaiting: d.engineWaiting?.(),
        sessionId,
        ttft: d.ttft,
        otherRouters: d.otherRouters?.(),
        candidatePool: this.#candidatePool,
        unseen,
        kvPlanner: d.kvPlanner,
      });
    let now = d.now();
    let sel = choose(now);
    // The pool's candidates are rewritten by the next decision, which can run while this
    // request awaits its claim or its session below: what the page and traces read is copied now.
    let kept = keepCandidates(sel.candidates, sel.key);
    // With several routers, the kv policy's choice is claimed first (books/burst-claims.ts), and
    // made again, counting them, when another decision claimed prompts these books do not hold yet.
    let unseen: UnseenClaims | undefined;
    let claimMs = 0;
    if (d.claims !== undefined && d.pipeline.predictsTtft === true) {
      const tc = timer();
      const claimed = await this.#claim(sel, input, seqHashes, choose);
      claimMs = timer() - tc;
      if (claimed !== undefined) ({ sel, kept, unseen } = claimed);
      // Booked now, after the round trip: the sample times the engine from here, so a slow
      // answer from Redis is not taken for a slow engine (the prediction is a trip older).
      now = d.now();
    }
    // The scheduler only chose; the lease books (and later frees) the load, and hands the
    // first token's time to the predictor, which learns the engine's speed from it.
    // The rank's queue is read here, before this request is booked there: the sample's hindsight count starts from it.
    const plan = input.prefilledElsewhere === true ? undefined : sel.kvPlan;
    const transferMs = plan?.transferMs ?? 0;
    const computeSample =
      d.ttft && sel.ttftTokens !== undefined && input.prefilledElsewhere !== true
        ? firstTokenSampler(
            d.ttft,
            {
              key: sel.key,
              bookedAt: now,
              tokens: sel.ttftTokens,
              ownTokens: sel.uncachedTokens,
              predictedMs:
                sel.predictedTtftMs === undefined ? undefined : sel.predictedTtftMs - transferMs,
              stepMs: sel.stepMs,
              queue: queueAtBooking(d.tracker.slotOf(sel.key), unseen?.tokens.get(sel.key)),
            },
            (e) => d.metrics.ttftPredictionError?.observe(e),
          )
        : undefined;
    // With a transfer planned, the first token teaches its rate; the compute speed learns from the
    // time less the transfer's predicted part.
    const sample =
      plan === undefined || d.kvPlanner === undefined
        ? computeSample
        : planSampler(d.kvPlanner, plan, now, computeSample);
    if (plan?.kind === "pull")
      d.kvPlanner?.rates.startPull(plan.fromKey!, now, plan.transferMs - plan.queuedMs);
    // The prefix group's arrival and, when the booking goes, the request's time there and its decode gaps: the group's traffic and the rank's step time.
    if (d.ttft) countTraffic(d.ttft.traffic, sel, now, seqHashes?.length ?? 0);
    const ended =
      d.ttft && input.prefilledElsewhere !== true
        ? decodeSampler(d.ttft, sel.key, now, d.tracker.slotOf(sel.key))
        : undefined;
    // Read before this request is booked there: the prefixes others were computing on that rank
    // (not read when the index matched every routed block: no hit can be unexpected then, so 0).
    const indexBlocks =
      d.distrusted !== undefined && !approx ? (indexed.scores.get(sel.key) ?? 0) : 0;
    const check =
      d.distrusted !== undefined && !approx
        ? {
            indexBlocks,
            // A load from the engine's own tiers is reported cached (vLLM counts a connector's hits in
            // num_cached_tokens): blocks the router expected there, not an index that lied.
            inFlightBlocks: Math.max(
              indexBlocks >= hashes.length ? 0 : inFlightBlocks(d.tracker, sel.key, seqHashes),
              plan?.kind === "load" ? plan.fromBlock + plan.blocks : 0,
            ),
            routedBlocks: hashes.length,
          }
        : undefined;
    const lease = RequestLease.book(
      d.tracker,
      {
        requestId: input.requestId,
        worker: sel.worker,
        seqHashes,
        isl: input.tokens.length,
        overlap: sel.overlapBlocks,
        loraName: input.loraName,
      },
      now,
      bs,
      d.now,
      d.rng,
      sample,
      ended,
    );
    if (approx || d.recordDecisions) index.recordDecision(hashes, seqHashes, sel.worker, now);
    else if (distrusted?.has(sel.key) === true)
      d.fallbackIndex?.recordDecision(hashes, seqHashes, sel.worker, now);
    const t4 = timer();

    const m = d.metrics;
    m.phases.hash.observe((t1 - t0) / 1000);
    m.phases.match.observe((t2 - t1) / 1000);
    // The waits for the session store and the claim are Redis round trips, not routing work.
    m.phases.schedule.observe((t4 - t3 - claimMs) / 1000);
    m.phases.total.observe((t4 - t0 - (t3 - t2) - claimMs) / 1000);
    m.overlap.observe(sel.overlapBlocks);

    if (sc) await applySessionTurn(sc, sel.worker, lease, d.sticky, d.engineSessions);
    else if (input.sessionId !== undefined && !pinned)
      await d.sticky.bindRouterOnly(input.sessionId, sel.worker, d.sessionTtlMs);
    return {
      worker: sel.worker,
      overlapBlocks: sel.overlapBlocks,
      sticky: pinned !== undefined,
      lease,
      candidates: kept.candidates,
      candidatesTotal: kept.total,
      bestOverlapBlocks: kept.bestOverlapBlocks,
      check,
      kvPlan: plan,
    };
  }

  /**
   * Claim `sel` and, when earlier claims hold prompts these books do not, choose again with them
   * counted (and move the claim if the choice moved). Undefined: keep `sel` as it was chosen (no
   * unseen claims, or the store failed: the router decides on its own books, as without claims).
   */
  async #claim(
    sel: Selection,
    input: RouteInput,
    seqHashes: BigUint64Array | null,
    choose: (now: number, unseen: UnseenClaims) => Selection,
  ): Promise<{ sel: Selection; kept: KeptCandidates; unseen: UnseenClaims } | undefined> {
    const d = this.d;
    const claims = d.claims!;
    const mine: BurstClaim = {
      routerId: d.routerId,
      requestId: input.requestId,
      worker: sel.worker,
      tokens: this.#newTokens(input, sel),
      prefix: claimPrefix(seqHashes),
    };
    let held: HeldClaim;
    let unseen: UnseenClaims | undefined;
    try {
      const r = await claims.claim(mine);
      held = r.held;
      unseen = unseenClaims(r.earlier, d.tracker, mine, seqHashes);
    } catch {
      d.metrics.burstClaim?.("failed");
      return undefined;
    }
    if (unseen === undefined) {
      d.metrics.burstClaim?.("clear");
      return undefined;
    }
    const again = choose(d.now(), unseen);
    // Copied before anything else can run: the pool's candidates are the next decision's.
    const kept = keepCandidates(again.candidates, again.key);
    if (again.key === sel.key) {
      d.metrics.burstClaim?.("counted");
      // The same rank, predicted with the claimed prompts ahead of it.
      return { sel: again, kept, unseen };
    }
    d.metrics.burstClaim?.("moved");
    const moved: BurstClaim = {
      ...mine,
      worker: again.worker,
      tokens: this.#newTokens(input, again),
    };
    // Awaited (a second round trip, for moved decisions only): until the claim moves, later
    // claimers read this prompt at its old place, and all move away from it alike.
    try {
      await claims.claim(moved, held);
    } catch {
      d.metrics.burstClaim?.("failed");
    }
    return { sel: again, kept, unseen };
  }

  /** The prefill tokens booking `sel` adds to its rank's queue, as the rank's books count them (0 for a rank not tracked, which cannot be booked). */
  #newTokens(input: RouteInput, sel: Selection): number {
    return this.d.tracker.slotOf(sel.key)?.newTokens(input.tokens.length, sel.overlapBlocks) ?? 0;
  }

  /** The session's (worker, rank) if it is bound, registered, healthy, allowed and not excluded (`slide`: TTL slides). */
  async #liveBinding(
    sessionId: string,
    slide: boolean,
    input: RouteInput,
  ): Promise<WorkerWithDpRank | undefined> {
    const w = slide ? await this.d.sticky.resolve(sessionId) : await this.d.sticky.peek(sessionId);
    if (w === undefined || input.exclude?.has(w.workerId)) return undefined;
    if (input.allowedWorkerIds && !input.allowedWorkerIds.has(w.workerId)) return undefined;
    return this.d.registry.isRoutable(w.workerId, w.dpRank) ? w : undefined;
  }

  /** Healthy endpoints, rebuilt only when membership or health changed. */
  #schedulable(exclude: ReadonlySet<WorkerId> | undefined): readonly Endpoint[] {
    const targets = this.d.registry.healthyTargets();
    if (targets !== this.#endpointsFor) {
      const facts = { maxNumBatchedTokens: this.d.capacityTokens };
      this.#endpoints = targets.map((t) => endpoint(t.workerId, t.dpRank, facts));
      this.#endpointsFor = targets;
    }
    if (exclude === undefined || exclude.size === 0) return this.#endpoints;
    return this.#endpoints.filter((e) => !exclude.has(e.worker.workerId));
  }
}

/**
 * Blocks of a prompt the router routes on: 16,384 is 256k tokens at block size 16, twice the
 * longest prompts the router is built for. Without a bound one 15 MB text prompt routed
 * approximately (one token per byte, ~940k blocks) held the event loop ~1.2 s in route()
 * and ~0.6 s more when its booking was freed.
 */
export const MAX_ROUTED_BLOCKS = 16_384;

/** The overlaps with the distrusted ranks' taken from the fallback index (their own decisions). */
function withFallback(
  indexed: OverlapScores,
  fallback: OverlapScores,
  distrusted: ReadonlySet<WorkerKey>,
): OverlapScores {
  const scores = new Map(indexed.scores);
  const treeSizes = new Map(indexed.treeSizes);
  for (const key of distrusted) {
    scores.delete(key);
    treeSizes.delete(key);
    const s = fallback.scores.get(key);
    if (s !== undefined) scores.set(key, s);
    const t = fallback.treeSizes.get(key);
    if (t !== undefined) treeSizes.set(key, t);
  }
  return { ...indexed, scores, treeSizes };
}

/** Leading blocks of the prompt that requests in flight on `key` hold in the books. */
function inFlightBlocks(
  tracker: LoadTracker,
  key: WorkerKey,
  seqHashes: BigUint64Array | null,
): number {
  const slot = tracker.slotOf(key);
  if (slot === undefined || seqHashes === null || seqHashes.length === 0) return 0;
  return tracker.heldPrefixCounts(seqHashes)[slot.slot] ?? 0;
}

/**
 * The prefix traffic of one decision (`blocks`: the prompt's full blocks): its group's arrival on
 * the chosen rank, named on its first arrival by the ranks that hold its prefix; a request no
 * engine held any of starts a new prefix. A prompt sent again whole (a client's warm-up, a retry)
 * names no group: its siblings, if any, will name the part they share, and a second name for the
 * same traffic would read its engine as holding two groups.
 */
export function countTraffic(
  traffic: PrefixTraffic,
  sel: Selection,
  now: number,
  blocks: number,
): void {
  if (sel.groupKey === undefined) {
    traffic.startedPrefix(sel.key, now);
    return;
  }
  let holders: WorkerKey[] | undefined;
  if (!traffic.knows(sel.groupKey)) {
    if ((sel.groupDepth ?? 0) >= blocks) return;
    holders = [];
    const depth = sel.groupDepth ?? 0;
    for (const c of sel.candidates) if (c.overlapBlocks >= depth) holders.push(c.key);
  }
  traffic.arrive(sel.groupKey, now, sel.key, holders);
}
