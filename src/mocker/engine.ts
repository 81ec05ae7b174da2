/**
 * The simulated engine: dp ranks (each with its prefix cache, event log and scheduler), the
 * request lifecycle, LoRA adapters and sessions. It knows nothing of HTTP; time comes from an
 * injected Clock, so tests can run it on virtual time.
 *
 * Two schedulers (`--scheduler`). `v1` (the default): vLLM V1's steps, a token budget per step
 * that running decodes take first and prefill chunks share (step-scheduler.ts); the cached
 * prefix is looked up and pinned when a request is first scheduled, its blocks stored when its
 * last chunk ran. `fifo` (what earlier results were measured on): a request on a rank waits
 * for a running slot (max concurrency, FIFO) -> wait for the
 * rank's single prefill lane -> pin its cached prefix -> prefill the uncached tokens ->
 * store its blocks (KV events) -> first token -> one token per decode step, the step slowing
 * with the number of decoding sequences -> release slot and pins. A client that leaves at any
 * point ends it there, a running prefill included (its blocks are not stored, the lane is
 * free at once): a few huge prompts whose clients had left kept both engines busy for minutes
 * while their /health said fine.
 */
import { computeBlockHashes } from "../core/block-hash.ts";
import type { RouterEvent } from "../core/events.ts";
import type { WorkerId } from "../core/ids.ts";
import { engineBlockHashes } from "./engine-hash.ts";
import { fakeTextOffset, fakeToken } from "./fake-text.ts";
import { AbortedError, FifoSemaphore } from "./fifo.ts";
import type { RankTiers } from "./kv-tiers.ts";
import { LoraRegistry } from "./lora.ts";
import type { MockerConfig } from "./options.ts";
import { PrefillStats } from "./prefill-stats.ts";
import { type CommitResult, type KvLease, RankKv } from "./rank-kv.ts";
import { mulberry32 } from "../core/mulberry32.ts";
import { SessionRegistry } from "./sessions.ts";
import { StepScheduler } from "./step-scheduler.ts";
import { decodeStepMs, prefillMs, tierLoadMs } from "./timing.ts";

export interface Clock {
  /** Monotonic milliseconds. */
  now(): number;
  sleep(ms: number): Promise<void>;
}

/** Sleeps shorter than this are skipped (timers are ~1 ms coarse); the schedule is absolute, so no drift accumulates. */
const MIN_SLEEP_MS = 1;

export interface GenerateRequest {
  readonly tokens: Uint32Array;
  readonly maxTokens: number;
  /** The body's `seed`: the text then depends on it and each token's position only (fake-text.ts). */
  readonly seed?: number;
  /** A loaded adapter, or undefined for the base model. */
  readonly loraName?: string;
  readonly dpRank: number;
  readonly signal?: AbortSignal;
  /** The caller's x-request-id, for the request log (EngineDeps.onPrefilled). */
  readonly requestId?: string;
  /**
   * Disaggregated decode: brings the prompt's blocks [fromBlock, toBlock) (engine hashes)
   * from a prefill engine instead of computing them; resolves how many leading blocks of that
   * range arrived intact (0: compute them here). It never rejects. The time it takes is the
   * real copy's, not modelled.
   */
  readonly importKv?: (
    hashes: BigUint64Array,
    fromBlock: number,
    toBlock: number,
  ) => Promise<ImportedKv>;
}

interface TierLoad {
  readonly blocks: number;
  readonly ms: number;
}
const NO_TIER_LOAD: TierLoad = { blocks: 0, ms: 0 };

export interface ImportedKv {
  readonly blocks: number;
  readonly bytes: number;
}

export interface GenerateStart {
  readonly dpRank: number;
  readonly cachedTokens: number;
  readonly promptTokens: number;
}

export interface TokenSink {
  /** Prefill begins: the cached prefix is known. Called once, before any token. */
  start(info: GenerateStart): void;
  token(text: string, index: number): void;
}

export interface GenerateResult extends GenerateStart {
  readonly completionTokens: number;
  readonly text: string;
  /** Blocks and bytes pulled from a prefill engine (0 without importKv). */
  readonly transferredBlocks: number;
  readonly transferredBytes: number;
}

export interface RankState {
  readonly kv: RankKv;
  /** Running sequences (admitted), max concurrency permits. */
  readonly slots: FifoSemaphore;
  /** The one prefill lane. */
  readonly prefill: FifoSemaphore;
  decoding: number;
  /** When the prefill now computing ends (config.prefillStallsDecode: decode steps wait for it). */
  prefillBusyUntil: number;
  /** Finished requests' prefill time and computed tokens, as vLLM exports them (/metrics). */
  readonly prefillStats: PrefillStats;
  /** `--scheduler v1`: the rank's steps (slots, prefill and decoding are then unused). */
  readonly steps: StepScheduler | undefined;
  /** The rank's host (and disk) tiers with real bytes; null without --kv-host-blocks. */
  readonly tiers: RankTiers | null;
}

/** A rank's queues as its metrics report them, whichever scheduler runs it. */
export interface RankLoad {
  /** Requests scheduled and not finished (vLLM's num_requests_running). */
  readonly running: number;
  /** Requests not yet scheduled (vLLM's num_requests_waiting). */
  readonly waiting: number;
  /** Running requests past their prefill. */
  readonly decoding: number;
  /** Running requests whose prompt is not computed yet (fifo: those waiting for the prefill lane). */
  readonly prefilling: number;
}

export function rankLoad(r: RankState): RankLoad {
  if (r.steps !== undefined) {
    const decoding = r.steps.decoding;
    return {
      running: r.steps.running,
      waiting: r.steps.waiting,
      decoding,
      prefilling: r.steps.running - decoding,
    };
  }
  return {
    running: r.slots.held,
    waiting: r.slots.waiting,
    decoding: r.decoding,
    prefilling: r.prefill.waiting,
  };
}

export interface EngineCounters {
  requests: number;
  aborted: number;
  promptTokens: number;
  cachedTokens: number;
  completionTokens: number;
  /** Requests naming a model this engine does not serve (answered 404). */
  unknownModel: number;
}

/**
 * One request's way to its first token on a rank, as the request log writes it (--request-log):
 * what the engine really queued and computed, to hold a router's predictions against.
 */
export interface PrefillRecord {
  readonly requestId: string | undefined;
  readonly dpRank: number;
  /** Clock times (ms): when the engine took the request, when it got the rank's prefill lane, its first token. */
  readonly arrivedAt: number;
  readonly prefillStartedAt: number;
  readonly firstTokenAt: number;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  /** Tokens it prefilled (neither cached nor imported from a prefill engine). */
  readonly computedTokens: number;
}

export interface EngineDeps {
  readonly config: MockerConfig;
  readonly workerId: WorkerId;
  readonly clock: Clock;
  /** Every KV event, in id order per rank. */
  readonly emit?: (event: RouterEvent) => void;
  /** Each request's first token (the request log). Must not throw. */
  readonly onPrefilled?: (record: PrefillRecord) => void;
  /** One rank's lower tiers (absent: GPU cache only); `record` puts its events in the rank's log. */
  readonly makeTiers?: (dpRank: number, record: RankKv["recordTier"]) => RankTiers;
}

export class MockEngine {
  readonly config: MockerConfig;
  readonly workerId: WorkerId;
  readonly ranks: RankState[];
  readonly loras: LoraRegistry;
  readonly sessions = new SessionRegistry();
  readonly counters: EngineCounters = {
    requests: 0,
    aborted: 0,
    promptTokens: 0,
    cachedTokens: 0,
    completionTokens: 0,
    unknownModel: 0,
  };
  private readonly clock: Clock;
  private readonly onPrefilled: ((record: PrefillRecord) => void) | undefined;
  private nextRank = 0;

  constructor(deps: EngineDeps) {
    const c = deps.config;
    this.config = c;
    this.workerId = deps.workerId;
    this.clock = deps.clock;
    this.onPrefilled = deps.onPrefilled;
    this.loras = new LoraRegistry(c.maxLoras, c.model, c.loras);
    this.ranks = Array.from({ length: c.dpRanks }, (_, r) => {
      const kv = new RankKv({
        workerId: deps.workerId,
        dpRank: r,
        capacity: c.kvBlocks,
        bufferSize: c.eventBufferSize,
        emit: deps.emit,
        dropEvents:
          c.faultDropEvents > 0
            ? { share: c.faultDropEvents, random: mulberry32(c.seed * 31 + r + 1) }
            : undefined,
      });
      const tiers = deps.makeTiers?.(r, (data, medium) => kv.recordTier(data, medium)) ?? null;
      if (tiers !== null) kv.lowerTiers = () => tiers.held();
      return {
        kv,
        slots: new FifoSemaphore(c.maxConcurrency),
        prefill: new FifoSemaphore(1),
        decoding: 0,
        prefillBusyUntil: 0,
        prefillStats: new PrefillStats(),
        steps:
          c.scheduler === "v1"
            ? new StepScheduler(deps.clock, c, {
                maxNumBatchedTokens: c.maxNumBatchedTokens,
                maxRunning: c.maxConcurrency,
              })
            : undefined,
        tiers,
      };
    });
  }

  now(): number {
    return this.clock.now();
  }

  /** The requested rank if given (the router's choice), else round-robin. */
  pickRank(requested?: number): number {
    if (requested !== undefined) return requested;
    const r = this.nextRank;
    this.nextRank = (r + 1) % this.ranks.length;
    return r;
  }

  /**
   * Which adapter a request's `model` names: undefined for the base model (or no model),
   * the name for a loaded adapter, null when the model is unknown (a 404, like vLLM).
   */
  resolveModel(model: string | undefined): string | undefined | null {
    if (model === undefined || this.config.models.includes(model)) return undefined;
    return this.loras.has(model) ? model : null;
  }

  /** Run one request to completion (or abort). Rejects with AbortedError on abort. */
  async generate(req: GenerateRequest, sink: TokenSink): Promise<GenerateResult> {
    const rank = this.ranks[req.dpRank];
    if (rank === undefined)
      throw new RangeError(`dp rank ${req.dpRank} out of range 0..${this.ranks.length - 1}`);
    const c = this.config;
    // The faults salt what a router would compute otherwise (options.ts, --fault-*).
    const loraName =
      req.loraName !== undefined && c.faultLoraSalt !== undefined
        ? `${req.loraName}${c.faultLoraSalt}`
        : req.loraName;
    const local = computeBlockHashes(req.tokens, c.blockSize, {
      loraName,
      cacheNamespace: c.faultHashSeed,
    });
    const hashes = engineBlockHashes(local);
    const maxHit = maxHitBlocks(req.tokens.length, c.blockSize);
    const signal = req.signal;
    const arrivedAt = this.clock.now();
    this.counters.requests++;
    if (rank.steps !== undefined)
      return this.generateInSteps(req, sink, rank, rank.steps, local, hashes, arrivedAt);

    let admitted = false;
    let prefilling = false;
    let prefillDone = 0;
    let decoding = false;
    let lease: ReturnType<RankKv["begin"]> | undefined;
    try {
      await rank.slots.acquire(signal);
      admitted = true;
      let imported: ImportedKv = { blocks: 0, bytes: 0 };
      if (req.importKv !== undefined) {
        // A pull (and SGLang's wait for the prefill engine's room) computes nothing: it does
        // not take the prefill lane, so it never holds back this rank's other prefills.
        lease = rank.kv.begin(hashes, maxHit);
        if (lease.cachedBlocks < hashes.length)
          imported = await req.importKv(hashes, lease.cachedBlocks, hashes.length);
        if (signal?.aborted) throw new AbortedError();
      }
      await rank.prefill.acquire(signal);
      prefilling = true;
      const prefillStart = this.clock.now();

      lease ??= rank.kv.begin(hashes, maxHit);
      // Blocks right after the GPU prefix that a lower tier holds are loaded, not computed.
      const tier =
        rank.tiers !== null && imported.blocks === 0
          ? await this.loadFromTiers(rank.tiers, rank.kv, lease, hashes, local, maxHit)
          : NO_TIER_LOAD;
      const cachedTokens = (lease.cachedBlocks + tier.blocks) * c.blockSize;
      const info: GenerateStart = {
        dpRank: req.dpRank,
        cachedTokens,
        promptTokens: req.tokens.length,
      };
      this.counters.promptTokens += req.tokens.length;
      this.counters.cachedTokens += cachedTokens;
      sink.start(info);

      const computed = req.tokens.length - cachedTokens - imported.blocks * c.blockSize;
      prefillDone = this.clock.now() + tier.ms + prefillMs(computed, c);
      // Without chunked prefill a GPU runs this prefill instead of the rank's decode steps.
      if (c.prefillStallsDecode && computed > 0) rank.prefillBusyUntil = prefillDone;
      await this.sleepUntil(prefillDone, signal);
      const firstTokenAt = this.clock.now();
      this.onPrefilled?.({
        requestId: req.requestId,
        dpRank: req.dpRank,
        arrivedAt,
        prefillStartedAt: prefillStart,
        firstTokenAt,
        promptTokens: req.tokens.length,
        cachedTokens,
        computedTokens: computed,
      });
      const committed = rank.kv.commit(lease, hashes, local);
      if (rank.tiers !== null) await this.storeToTiers(rank.tiers, committed, hashes, lease.slots);
      rank.prefill.release();
      prefilling = false;
      if (signal?.aborted) throw new AbortedError();

      // The prefill step samples the first token; each decode step yields one more.
      rank.decoding++;
      decoding = true;
      const offset = fakeTextOffset(c.seed, req.tokens, req.seed);
      let text = "";
      let due = prefillDone;
      for (let i = 0; i < req.maxTokens; i++) {
        if (i > 0) {
          if (c.prefillStallsDecode && rank.prefillBusyUntil > due) due = rank.prefillBusyUntil;
          due += decodeStepMs(rank.decoding, c);
          await this.sleepUntil(due);
          if (signal?.aborted) throw new AbortedError();
        }
        const t = fakeToken(offset, i);
        text += t;
        this.counters.completionTokens++;
        sink.token(t, i);
      }
      // Recorded when the request finishes, as vLLM records it.
      rank.prefillStats.finished(firstTokenAt - prefillStart, computed);
      return {
        ...info,
        completionTokens: req.maxTokens,
        text,
        transferredBlocks: imported.blocks,
        transferredBytes: imported.bytes,
      };
    } catch (e) {
      if (e instanceof AbortedError) this.counters.aborted++;
      throw e;
    } finally {
      if (decoding) rank.decoding--;
      if (prefilling) {
        // Cut short: the GPU is not busy with it any more.
        if (rank.prefillBusyUntil === prefillDone)
          rank.prefillBusyUntil = Math.min(prefillDone, this.clock.now());
        rank.prefill.release();
      }
      if (lease !== undefined) rank.kv.release(lease);
      if (admitted) rank.slots.release();
    }
  }

  /** `--scheduler v1`: the request runs in the rank's steps (step-scheduler.ts). */
  private async generateInSteps(
    req: GenerateRequest,
    sink: TokenSink,
    rank: RankState,
    steps: StepScheduler,
    local: BigUint64Array,
    hashes: BigUint64Array,
    arrivedAt: number,
  ): Promise<GenerateResult> {
    const c = this.config;
    const signal = req.signal;
    let lease: ReturnType<RankKv["begin"]> | undefined;
    let imported: ImportedKv = { blocks: 0, bytes: 0 };
    let tier = NO_TIER_LOAD;
    let info: GenerateStart | undefined;
    let computed = 0;
    let prefillStart = 0;
    let firstTokenAt = 0;
    let text = "";
    const offset = fakeTextOffset(c.seed, req.tokens, req.seed);
    try {
      if (req.importKv !== undefined) {
        // vLLM's WAITING_FOR_REMOTE_KVS: the pull happens before the request is scheduled.
        lease = rank.kv.begin(hashes, maxHitBlocks(req.tokens.length, this.config.blockSize));
        if (lease.cachedBlocks < hashes.length)
          imported = await req.importKv(hashes, lease.cachedBlocks, hashes.length);
        if (signal?.aborted) throw new AbortedError();
      }
      if (rank.tiers !== null && imported.blocks === 0) {
        // The OffloadingConnector's load, also before scheduling: the request waits for its
        // blocks to arrive at the modelled bandwidth while the rank's steps go on.
        const maxHit = maxHitBlocks(req.tokens.length, c.blockSize);
        lease ??= rank.kv.begin(hashes, maxHit);
        tier = await this.loadFromTiers(rank.tiers, rank.kv, lease, hashes, local, maxHit);
        await this.sleepUntil(this.clock.now() + tier.ms, signal);
      }
      await steps.submit({
        maxTokens: req.maxTokens,
        signal,
        begin: () => {
          prefillStart = this.clock.now();
          lease ??= rank.kv.begin(hashes, maxHitBlocks(req.tokens.length, this.config.blockSize));
          const cachedTokens = (lease.cachedBlocks + tier.blocks) * c.blockSize;
          info = { dpRank: req.dpRank, cachedTokens, promptTokens: req.tokens.length };
          this.counters.promptTokens += req.tokens.length;
          this.counters.cachedTokens += cachedTokens;
          sink.start(info);
          computed = req.tokens.length - cachedTokens - imported.blocks * c.blockSize;
          return computed;
        },
        prefilled: () => {
          firstTokenAt = this.clock.now();
          this.onPrefilled?.({
            requestId: req.requestId,
            dpRank: req.dpRank,
            arrivedAt,
            prefillStartedAt: prefillStart,
            firstTokenAt,
            promptTokens: req.tokens.length,
            cachedTokens: info!.cachedTokens,
            computedTokens: computed,
          });
          const committed = rank.kv.commit(lease!, hashes, local);
          // Inside a step (no waiting here): the copies run on the tiers' own lane, in order.
          if (rank.tiers !== null)
            void this.storeToTiers(rank.tiers, committed, hashes, lease!.slots);
        },
        token: (i) => {
          const t = fakeToken(offset, i);
          text += t;
          this.counters.completionTokens++;
          sink.token(t, i);
        },
      });
      rank.prefillStats.finished(firstTokenAt - prefillStart, computed);
      return {
        ...info!,
        completionTokens: req.maxTokens,
        text,
        transferredBlocks: imported.blocks,
        transferredBytes: imported.bytes,
      };
    } catch (e) {
      if (e instanceof AbortedError) this.counters.aborted++;
      throw e;
    } finally {
      if (lease !== undefined) rank.kv.release(lease);
    }
  }

  /**
   * The lower-tier hits after the GPU prefix (up to `maxHit` blocks in all, as a GPU hit):
   * stored into the GPU cache (their slots, evicting as needed, evictions copied down first),
   * copied up and checked; blocks that fail the check are computed (their content written as a
   * prefill would). Returns the blocks loaded intact and the time their transfer takes at the
   * modelled bandwidths. On the tiers' lane.
   */
  private loadFromTiers(
    tiers: RankTiers,
    kv: RankKv,
    lease: KvLease,
    hashes: BigUint64Array,
    local: BigUint64Array,
    maxHit: number,
  ): Promise<TierLoad> {
    return tiers.exclusive(async () => {
      const from = lease.cachedBlocks;
      const hits = tiers.match(hashes, from, maxHit);
      if (hits.length === 0) return NO_TIER_LOAD;
      const c = this.config;
      let placed = 0;
      try {
        const res = kv.commit(lease, hashes, local, from + hits.length);
        placed = Math.max(0, lease.pinned - from);
        await tiers.offload(res.evicted);
      } catch (e) {
        tiers.unpin(hashes, from, hits);
        throw e;
      }
      if (placed < hits.length) tiers.unpin(hashes, from + placed, hits.slice(placed));
      const good = await tiers.load(hashes, from, hits.slice(0, placed), lease.slots);
      if (good < placed) {
        const rest: number[] = [];
        for (let i = from + good; i < from + placed; i++) rest.push(i);
        tiers.writeComputed(hashes, rest, lease.slots);
      }
      let fromDisk = 0;
      for (let k = 0; k < good; k++) if (hits[k]!.medium === "disk") fromDisk++;
      const ms =
        tierLoadMs((good - fromDisk) * c.blockSize, c.kvHostGbps, c) +
        tierLoadMs(fromDisk * c.blockSize, c.kvDiskGbps, c);
      return { blocks: good, ms };
    });
  }

  /**
   * After a commit: the evicted blocks copied down (before their slots are overwritten), then
   * the new blocks' content written to their slots. On the tiers' lane, so a later eviction of
   * these blocks copies their content, not the old one. Failures are counted, never thrown.
   */
  private async storeToTiers(
    tiers: RankTiers,
    committed: CommitResult,
    hashes: BigUint64Array,
    slots: Int32Array,
  ): Promise<void> {
    try {
      await tiers.exclusive(async () => {
        await tiers.offload(committed.evicted);
        tiers.writeComputed(hashes, committed.stored, slots);
      });
    } catch {
      tiers.stats.failures++;
    }
  }

  /** Wait until `t`; with a signal, reject with AbortedError as soon as it aborts. */
  private async sleepUntil(t: number, signal?: AbortSignal): Promise<void> {
    const wait = t - this.clock.now();
    if (wait < MIN_SLEEP_MS) return;
    if (signal === undefined) return this.clock.sleep(wait);
    if (signal.aborted) throw new AbortedError();
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(new AbortedError());
      signal.addEventListener("abort", onAbort, { once: true });
      void this.clock.sleep(wait).then(() => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      });
    });
  }

  /** Drop every cached block of one rank (or all), each emitting `Cleared`. */
  clearCache(dpRank?: number): void {
    for (const [r, rank] of this.ranks.entries()) {
      if (dpRank !== undefined && dpRank !== r) continue;
      rank.tiers?.clear();
      rank.kv.clear();
    }
  }

  /** Simulated restart of every rank: empty caches, event ids from 0. */
  restartEvents(): void {
    for (const rank of this.ranks) {
      rank.tiers?.clear();
      rank.kv.restart();
    }
  }

  /** Frees the tiers' native pools (the disk tier's file too). */
  close(): void {
    for (const rank of this.ranks) rank.tiers?.close();
  }
}

/** A prompt's deepest cache hit in blocks: vLLM recomputes at least its last token (rank-kv.ts `begin`). */
function maxHitBlocks(promptTokens: number, blockSize: number): number {
  return Math.max(0, Math.floor((promptTokens - 1) / blockSize));
}
