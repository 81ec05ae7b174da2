/**
 * Scrapes every registered engine's `GET /metrics` every `intervalMs` (--engine-metrics-interval)
 * and keeps the last report per worker (engine-metrics.ts reads it). One scrape per worker
 * at a time, each with a deadline; a failed scrape keeps the error beside the last good
 * report, and a report older than `staleAfterMs` stops counting (busy decisions must not
 * rest on numbers from a dead engine). A page that carries the engine's KV capacity (vLLM's
 * `vllm:cache_config_info`) hands it to `onKvCapacity` for every rank, each scrape: an engine
 * restarted with another cache size is known again by the next one. A page that carries vLLM's
 * prefill counters hands each rank's prefill speed to `onPrefillSpeed` whenever enough was
 * prefilled since the last reading (prefill-speed.ts). It does not decide anything itself.
 */
import type { WorkerId, WorkerWithDpRank } from "../core/ids.ts";
import { capacityOfRank, type KvCapacityReading } from "./engine-capacity.ts";
import { readEngineLoad, type EngineLoad } from "./engine-metrics.ts";
import { PrefillSpeeds } from "./prefill-speed.ts";

export interface ScrapedWorker {
  readonly id: WorkerId;
  readonly url: string;
  readonly dpRanks: number;
}

export interface EngineMetricsScraperOptions {
  readonly workers: () => readonly ScrapedWorker[];
  readonly intervalMs: number;
  /** Per scrape (default min(intervalMs, 2000)). */
  readonly timeoutMs?: number;
  /** A report older than this is ignored (default 3 × intervalMs). */
  readonly staleAfterMs?: number;
  readonly fetch: (url: string, init: RequestInit) => Promise<Response>;
  /** Milliseconds. */
  readonly now: () => number;
  /** After each round of scrapes (busy sets, admission). */
  readonly onRound?: () => void;
  readonly warn?: (message: string) => void;
  /** The router's block size, with `onKvCapacity`: capacities are handed over in its blocks. */
  readonly blockSize?: number;
  /**
   * A rank's KV capacity as its engine's page says (undefined: a value no cache can have). Pages that
   * do not say leave it alone. It may come for a worker removed while its page was on the way: the
   * receiver drops what is not registered.
   */
  readonly onKvCapacity?: (worker: WorkerWithDpRank, blocks: number | undefined) => void;
  /**
   * A rank's prefill speed as its engine measures it (ms per prefilled token since the last
   * reading). Like onKvCapacity, it may come for a worker removed while its page was on the way.
   */
  readonly onPrefillSpeed?: (worker: WorkerWithDpRank, msPerToken: number) => void;
}

export interface EngineReport {
  readonly load?: EngineLoad;
  /** When `load` was read (ms, the scraper's clock). */
  readonly at?: number;
  /** The last scrape's failure, if it failed. */
  readonly error?: string;
}

/** Bodies larger than this are not metrics pages we want to parse. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

export class EngineMetricsScraper {
  readonly #reports = new Map<WorkerId, EngineReport>();
  readonly #inflight = new Set<WorkerId>();
  #timer: ReturnType<typeof setInterval> | undefined;
  readonly #warned = new Set<WorkerId>();
  /** The capacity problems last logged per worker: a bad value is logged when it appears, not every scrape. */
  readonly #capacityWarned = new Map<WorkerId, string>();
  readonly #prefill = new PrefillSpeeds();

  constructor(private readonly o: EngineMetricsScraperOptions) {}

  start(): void {
    if (this.#timer !== undefined) return;
    void this.scrapeAll();
    this.#timer = setInterval(() => void this.scrapeAll(), this.o.intervalMs);
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** One round: every registered worker not already being scraped; forgets removed ones. */
  async scrapeAll(): Promise<void> {
    const workers = this.o.workers();
    const live = new Set(workers.map((w) => w.id));
    for (const id of this.#reports.keys()) if (!live.has(id)) this.#reports.delete(id);
    for (const id of this.#capacityWarned.keys())
      if (!live.has(id)) this.#capacityWarned.delete(id);
    this.#prefill.keepOnly(live);
    await Promise.all(workers.filter((w) => !this.#inflight.has(w.id)).map((w) => this.#scrape(w)));
    this.o.onRound?.();
  }

  async #scrape(w: ScrapedWorker): Promise<void> {
    this.#inflight.add(w.id);
    const prev = this.#reports.get(w.id);
    try {
      const timeoutMs = this.o.timeoutMs ?? Math.min(this.o.intervalMs, 2_000);
      const res = await this.o.fetch(`${w.url}/metrics`, {
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (!res.ok) {
        await res.body?.cancel().catch(() => {});
        throw new Error(`HTTP ${res.status}`);
      }
      const length = Number(res.headers.get("content-length") ?? 0);
      if (length > MAX_BODY_BYTES) {
        await res.body?.cancel().catch(() => {});
        throw new Error(`metrics page of ${length} bytes is over ${MAX_BODY_BYTES}`);
      }
      const withCapacity = this.o.onKvCapacity !== undefined && this.o.blockSize !== undefined;
      const load = readEngineLoad(
        await res.text(),
        w.dpRanks,
        withCapacity ? this.o.blockSize : undefined,
      );
      if (this.#reports.has(w.id) || prev === undefined)
        this.#reports.set(w.id, { load, at: this.o.now() });
      if (load.kvCapacity !== undefined) this.#handCapacity(w, load.kvCapacity);
      if (this.o.onPrefillSpeed !== undefined) this.#handPrefillSpeeds(w, load);
      if (load.engine === undefined && !this.#warned.has(w.id)) {
        this.#warned.add(w.id);
        this.o.warn?.(
          `worker ${w.id} (${w.url}): /metrics has none of vLLM's or SGLang's load gauges; its own load is unknown`,
        );
      }
    } catch (e) {
      const error =
        (e as Error).name === "TimeoutError" ? "scrape timed out" : (e as Error).message;
      if (this.o.workers().some((x) => x.id === w.id)) this.#reports.set(w.id, { ...prev, error });
    } finally {
      this.#inflight.delete(w.id);
    }
  }

  #handCapacity(w: ScrapedWorker, reading: KvCapacityReading): void {
    const problems = reading.problems.join("; ");
    if (problems !== (this.#capacityWarned.get(w.id) ?? "")) {
      this.#capacityWarned.set(w.id, problems);
      for (const p of reading.problems)
        this.o.warn?.(`worker ${w.id} (${w.url}): KV capacity: ${reading.source} not taken: ${p}`);
    }
    for (let r = 0; r < w.dpRanks; r++)
      this.o.onKvCapacity!({ workerId: w.id, dpRank: r }, capacityOfRank(reading, r));
  }

  #handPrefillSpeeds(w: ScrapedWorker, load: EngineLoad): void {
    for (const r of load.ranks) {
      if (r.prefillSeconds === undefined || r.prefillTokens === undefined) continue;
      const ms = this.#prefill.update(w.id, r.dpRank, {
        seconds: r.prefillSeconds,
        tokens: r.prefillTokens,
      });
      if (ms !== undefined) this.o.onPrefillSpeed!({ workerId: w.id, dpRank: r.dpRank }, ms);
    }
  }

  /** The last report of a worker (stale or not), for GET /v1/workers. */
  report(id: WorkerId): EngineReport | undefined {
    return this.#reports.get(id);
  }

  /** Every worker's last load that is fresh enough to act on. */
  *freshLoads(): Generator<readonly [WorkerId, EngineLoad]> {
    const now = this.o.now();
    const stale = this.o.staleAfterMs ?? 3 * this.o.intervalMs;
    for (const [id, r] of this.#reports) {
      if (r.load !== undefined && r.at !== undefined && now - r.at <= stale)
        yield [id, r.load] as const;
    }
  }
}
