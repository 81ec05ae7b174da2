/**
 * The cache check's parts for one router (src/fleet/cache-truth): the tracker, and what it hands
 * the router (the distrusted ranks, the live events), the proxy (each answer's usage) and the
 * admin views (/v1/workers). Off under --policy approx, which uses no engine events to check.
 */
import type { RouterEvent } from "../../core/events.ts";
import { workerKey, type DpRank, type WorkerId, type WorkerKey } from "../../core/ids.ts";
import type { Logger } from "../../core/logger.ts";
import { CacheTruth } from "../../fleet/cache-truth/tracker.ts";
import type { CacheCheck } from "../../edge/proxy/cache-check.ts";
import type { MetricsRegistry } from "../../observe/registry.ts";
import { METRIC_PREFIX } from "../../observe/names.ts";
import { runCanary, type CanaryResult, type CanaryUsage } from "../../fleet/cache-truth/canary.ts";
import type { KvIndex, PromptHashes } from "../../router/index.ts";
import { HEADER_ENGINE_DP_RANK } from "../../edge/proxy/headers.ts";
import { readBodyLimited } from "../../edge/body.ts";

export interface CacheTruthParts {
  readonly truth: CacheTruth;
  readonly routerPorts: {
    readonly distrusted: () => ReadonlySet<WorkerKey>;
    readonly onLiveEvents: (events: readonly RouterEvent[]) => void;
    readonly onRestart: (workerId: WorkerId, dpRank: DpRank) => void;
    readonly onOrphanEvent: (workerId: WorkerId, dpRank: DpRank) => void;
  };
  readonly cacheCheck: CacheCheck;
  /** Set once the router exists (canaries()): run at registration and after a restart (with --canary), on demand. */
  canary: ((id: WorkerId, only?: DpRank) => Promise<CanaryResult[]>) | undefined;
  /** --canary: the canary runs by itself at registration and after a restart. */
  readonly autoCanary: boolean;
}

export function cacheTruthParts(o: {
  policy: string;
  cacheCheck: boolean;
  canary: boolean;
  blockSize: number;
  now: () => number;
  log: Logger;
  registry: MetricsRegistry;
  /** The router's index, once it exists (the check reads it at an answer's end). */
  index: () => Pick<KvIndex, "findMatches"> | undefined;
}): CacheTruthParts | undefined {
  if (o.policy === "approx" || !o.cacheCheck) return undefined;
  const truth = new CacheTruth({ now: o.now, log: o.log });
  truth.bindMetrics(o.registry, METRIC_PREFIX);
  const parts: CacheTruthParts = {
    truth,
    routerPorts: {
      distrusted: () => truth.distrusted,
      onLiveEvents: (events) => truth.eventsApplied(events),
      onOrphanEvent: (w, r) => truth.orphanEvent(w, r),
      onRestart: (w, r) => {
        o.log.info(
          `cache truth: worker ${w} dp rank ${r} restarted (its event ids went back)${o.canary ? "; canary" : ""}`,
          { worker_id: String(w), dp_rank: r },
        );
        if (o.canary) void parts.canary?.(w, r);
      },
    },
    cacheCheck: {
      blockSize: o.blockSize,
      answer: (w: WorkerId, r: DpRank, f) => truth.answer(w, r, f),
      indexedBlocks: (hashes, w, r) =>
        o.index()?.findMatches(hashes).scores.get(workerKey(w, r)) ?? 0,
      removalsSeen: (w, r) => truth.removalsSeen(w, r),
    },
    canary: undefined,
    autoCanary: o.canary,
  };
  return parts;
}

/** /v1/workers' extra fields with each worker's cache truth per dp rank (`cache_truth`). */
export function withCacheTruth(
  details: ((id: WorkerId) => Record<string, unknown>) | undefined,
  truth: CacheTruth | undefined,
): ((id: WorkerId) => Record<string, unknown>) | undefined {
  if (truth === undefined) return details;
  return (id) => ({ ...details?.(id), cache_truth: truth.view(id) });
}

/** The longest one canary call to an engine may take (a prompt of 256 tokens, 1,025 at 512-token blocks; one token out). */
const CANARY_CALL_TIMEOUT_MS = 10_000;
/** The most of a canary's answer read (a one-token completion with usage is well under 1 KiB). */
const CANARY_ANSWER_MAX_BYTES = 64 * 1024;

export interface CanaryWiring {
  readonly truth: CacheTruth;
  readonly blockSize: number;
  readonly router: {
    readonly routing: { prepare(tokens: Uint32Array, loraName: string | undefined): PromptHashes };
    readonly index: Pick<KvIndex, "findMatches">;
    /** The recovery driver: whether a rank's index restore runs (its live events held until it ends). */
    readonly recovery?: { isRecovering(id: WorkerId, dpRank: DpRank): boolean };
  };
  readonly fleet: {
    readonly registry: {
      get(id: WorkerId): { readonly url: string; readonly dpRanks: number } | undefined;
    };
    /** Adapters loaded on the worker (the canary runs once more with the first, for its salt). */
    readonly adapters: { loadedOn(id: WorkerId): readonly string[] };
    readonly toEngines: (url: string, init?: RequestInit) => Promise<Response>;
  };
  readonly now: () => number;
  readonly log: Logger;
  /**
   * The router's shortest deadline on an engine (--first-byte-timeout, --stream-idle-timeout;
   * 0 = none), when shorter than the canary's own: a canary waits no longer on a hung or
   * stalled engine than a client's request would, so it does not hold the engine's
   * connections past the point where the router gave up on the clients'.
   */
  readonly engineDeadlinesMs?: readonly number[];
}

/**
 * The canary for a worker's ranks (and its first adapter on rank 0), results to the tracker.
 * At most one run per worker at a time: a restart seen on every rank asks once.
 */
export function canaries(
  w: CanaryWiring,
): (id: WorkerId, only?: DpRank) => Promise<CanaryResult[]> {
  const running = new Map<WorkerId, Promise<CanaryResult[]>>();
  const callTimeoutMs = Math.min(
    CANARY_CALL_TIMEOUT_MS,
    ...(w.engineDeadlinesMs ?? []).filter((ms) => ms > 0),
  );
  const deps = {
    blockSize: w.blockSize,
    complete: async (
      url: string,
      dpRank: DpRank,
      prompt: readonly number[],
      model: string | undefined,
    ): Promise<CanaryUsage | undefined> => {
      const res = await w.fleet.toEngines(`${url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", [HEADER_ENGINE_DP_RANK]: String(dpRank) },
        body: JSON.stringify({
          ...(model !== undefined ? { model } : {}),
          prompt,
          max_tokens: 1,
          temperature: 0,
        }),
        signal: AbortSignal.timeout(callTimeoutMs),
      });
      if (!res.ok) {
        await res.body?.cancel().catch(() => {});
        throw new Error(`the engine answered HTTP ${res.status}`);
      }
      // Bounded: one token's answer is a few hundred bytes; an engine must not make the router hold more.
      const bytes = await readBodyLimited(
        res,
        CANARY_ANSWER_MAX_BYTES,
        "the canary's answer bound",
      );
      const u = (
        JSON.parse(new TextDecoder().decode(bytes)) as {
          usage?: {
            prompt_tokens?: number;
            prompt_tokens_details?: { cached_tokens?: number } | null;
          };
        }
      ).usage;
      if (u === undefined || typeof u.prompt_tokens !== "number") return undefined;
      return {
        promptTokens: u.prompt_tokens,
        cachedTokens: u.prompt_tokens_details?.cached_tokens,
      };
    },
    indexedBlocks: (
      tokens: Uint32Array,
      id: WorkerId,
      dpRank: DpRank,
      loraName: string | undefined,
    ) =>
      w.router.index
        .findMatches(w.router.routing.prepare(tokens, loraName).hashes)
        .scores.get(workerKey(id, dpRank)) ?? 0,
    eventsSeen: (id: WorkerId, dpRank: DpRank) => w.truth.eventsSeen(id, dpRank),
    removalsSeen: (id: WorkerId, dpRank: DpRank) => w.truth.removalsSeen(id, dpRank),
    speaksCached: (id: WorkerId, dpRank: DpRank) => w.truth.speaksCached(id, dpRank),
    restoring: (id: WorkerId, dpRank: DpRank) =>
      w.router.recovery?.isRecovering(id, dpRank) === true,
    sleep: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)),
    now: w.now,
    random: Math.random,
  };
  const runAll = async (id: WorkerId, only: DpRank | undefined): Promise<CanaryResult[]> => {
    const rec = w.fleet.registry.get(id);
    if (rec === undefined) return [];
    const out: CanaryResult[] = [];
    const ranks = only !== undefined ? [only] : Array.from({ length: rec.dpRanks }, (_, r) => r);
    const targets = ranks.map(
      (r) =>
        ({ workerId: id, url: rec.url, dpRank: r }) as {
          workerId: WorkerId;
          url: string;
          dpRank: DpRank;
          model?: string;
          loraName?: string;
        },
    );
    const lora = w.fleet.adapters.loadedOn(id)[0];
    if (lora !== undefined)
      targets.push({ workerId: id, url: rec.url, dpRank: ranks[0]!, model: lora, loraName: lora });
    for (const t of targets) {
      try {
        const r = await runCanary(deps, t);
        w.truth.canaryResult(id, t.dpRank, r.ok, r.cause, r.evidence, r.inconclusive === true);
        out.push(r);
      } catch (e) {
        w.log.warn(
          `cache truth: canary could not run on worker ${id} dp rank ${t.dpRank}: ${(e as Error).message}`,
          { worker_id: String(id) },
        );
      }
    }
    return out;
  };
  return (id, only) => {
    const busy = running.get(id);
    if (busy !== undefined) return busy;
    const p = runAll(id, only).finally(() => running.delete(id));
    running.set(id, p);
    return p;
  };
}
