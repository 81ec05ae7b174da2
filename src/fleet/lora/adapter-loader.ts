/**
 * Loading LoRA adapters where requests need them (Dynamo's LoRA filter and rendezvous placement,
 * without its allocation controller: adapters are loaded on demand instead): a request whose
 * `model` names an adapter may only go to workers that hold it; when none does, the adapter is
 * loaded on ONE worker chosen by rendezvous hashing over the workers with a free slot (so every
 * router picks the same one), and with `evict` on, a full cluster first unloads its least recently
 * used adapter.
 *
 * Several routers share the engines but not this tracker: another router may load or
 * unload adapters behind our back. So an engine's "already loaded" answer counts as
 * success (the other router won the race), and any other refusal re-reads the engine's
 * adapter list before placing again. Concurrent first requests for one adapter on this
 * router share one load (single flight).
 *
 * The router only loads names that are valid adapter names (adapter-name.ts: never a path
 * that climbs) and on the allowlist when one is set, and only evicts adapters on that
 * allowlist: a `model` comes from any client, so it must not choose what engines load.
 *
 * PURE: engine calls, the worker list, the clock and the base-model test are injected.
 */
import type { Logger } from "../../core/logger.ts";
import { RouterError } from "../../core/errors.ts";
import type { WorkerId, WorkerWithDpRank } from "../../core/ids.ts";
import { AdapterAllowlist, adapterNameProblem } from "./adapter-name.ts";
import { lruEvictionCandidate, placeAdapter } from "./placement.ts";
import type { LoraStateTracker } from "./state-tracker.ts";

/** What an engine answered to a load or unload. */
export type EngineAnswer =
  | { readonly ok: true }
  | { readonly ok: false; readonly status: number; readonly message: string };

/** The engine calls (vLLM's dynamic LoRA API), by worker base URL. */
export interface LoraEngineClient {
  /** POST {url}/v1/load_lora_adapter {lora_name, lora_path}. */
  load(url: string, name: string, path: string): Promise<EngineAnswer>;
  /** POST {url}/v1/unload_lora_adapter {lora_name}. */
  unload(url: string, name: string): Promise<EngineAnswer>;
  /** The adapters the engine holds now, and its slots when it says. */
  listLoaded(
    url: string,
  ): Promise<{ readonly loras: readonly string[]; readonly maxLoras?: number }>;
}

/** A worker as the loader needs it; adapters are engine-wide, so every rank holds them. */
export interface LoraWorker {
  readonly id: WorkerId;
  readonly url: string;
  readonly dpRanks: number;
}

export interface AdapterLoaderOptions {
  readonly tracker: LoraStateTracker;
  readonly engine: LoraEngineClient;
  /** The workers requests may go to now (healthy ones). */
  readonly workers: () => readonly LoraWorker[];
  /** Treat names no worker reports as adapters to load (else they are passed through). */
  readonly loadOnDemand: boolean;
  /** Whether `name` is a worker's base model (never an adapter). */
  readonly isBaseModel: (name: string) => boolean;
  /** lora_path for a load, e.g. "/models/loras/{name}". */
  readonly pathTemplate: string;
  /** No free slot anywhere: unload the least recently used adapter instead of refusing. */
  readonly evict: boolean;
  /** Names the router may load or evict (`--lora-allow`); absent or empty: any valid name. */
  readonly allow?: AdapterAllowlist;
  /** Milliseconds (last use, for LRU). */
  readonly now: () => number;
  readonly log?: Pick<Logger, "info" | "warn">;
}

export interface AdapterLoaderCounters {
  /** Loads this router asked for and the engine did. */
  loads: number;
  /** Loads answered "already loaded" (another router was first). */
  alreadyLoaded: number;
  unloads: number;
  /** Requests refused: no slot (and nothing to evict). */
  noCapacity: number;
  /** Engine refusals that made the router re-read an engine's adapters. */
  refusals: number;
}

/** vLLM's text for loading a loaded adapter: "The lora adapter 'x' has already been loaded." */
const ALREADY_LOADED = /already been loaded|already loaded/i;

const rank0 = (w: LoraWorker): WorkerWithDpRank => ({ workerId: w.id, dpRank: 0 });

export class AdapterLoader {
  readonly counters: AdapterLoaderCounters = {
    loads: 0,
    alreadyLoaded: 0,
    unloads: 0,
    noCapacity: 0,
    refusals: 0,
  };
  readonly #inflight = new Map<string, Promise<ReadonlySet<WorkerId>>>();

  readonly #allow: AdapterAllowlist;

  constructor(private readonly o: AdapterLoaderOptions) {
    this.#allow = o.allow ?? new AdapterAllowlist();
  }

  /**
   * The adapter a request's `model` names, or undefined for the base model: a name some
   * worker holds, or (load on demand) any other name that is no worker's base model. With
   * load on demand, a name the router may not load is refused here: 400 when it is no
   * valid adapter name, 404 when it is not on the allowlist (both naming `model`).
   */
  adapterOf(model: unknown): string | undefined {
    if (typeof model !== "string" || model === "") return undefined;
    if (this.o.tracker.getLoadedWorkers(model).length > 0) return model;
    if (!this.o.loadOnDemand || this.o.isBaseModel(model)) return undefined;
    this.#checkLoadable(model);
    return model;
  }

  /** Throws RouterError unless the router may ask an engine to load `name`. */
  #checkLoadable(name: string): void {
    const problem = adapterNameProblem(name);
    if (problem !== undefined) {
      throw new RouterError(
        "invalid_request",
        `model: not a servable model, and as a LoRA adapter name it ${problem}`,
        "model",
      );
    }
    if (!this.#allow.allows(name)) {
      throw new RouterError(
        "not_found",
        `model: "${name}" is not served by any worker and is not an adapter this router may load (--lora-allow)`,
        "model",
      );
    }
  }

  /**
   * The workers that hold `name` (the request's only candidates), after loading it on one
   * when none does. Throws RouterError: lora_no_capacity (no free slot and nothing to
   * evict), no_endpoints (no worker), not_found (an engine with room refused the adapter).
   */
  ensure(name: string): Promise<ReadonlySet<WorkerId>> {
    const holders = this.#holders(name, this.o.workers());
    if (holders.size > 0) return Promise.resolve(holders);
    let p = this.#inflight.get(name);
    if (!p) {
      p = this.#load(name).finally(() => this.#inflight.delete(name));
      this.#inflight.set(name, p);
    }
    return p;
  }

  /** A request for `name` was routed to `worker` (LRU order for eviction). */
  used(name: string, worker: WorkerId): void {
    this.o.tracker.recordUse(name, { workerId: worker, dpRank: 0 }, this.o.now());
  }

  /** Adapters a worker holds, as far as this router knows. */
  loadedOn(worker: WorkerId): readonly string[] {
    return this.o.tracker.lorasOn({ workerId: worker, dpRank: 0 });
  }

  /** The engine said it does not have `name` (another router unloaded it): forget it there. */
  missing(name: string, worker: WorkerId): void {
    const w = this.o.workers().find((x) => x.id === worker);
    for (let r = 0; r < (w?.dpRanks ?? 1); r++)
      this.o.tracker.handleMdcRemoval({ workerId: worker, dpRank: r }, name);
  }

  #holders(name: string, workers: readonly LoraWorker[]): Set<WorkerId> {
    const out = new Set<WorkerId>();
    for (const w of workers) if (this.o.tracker.isLoaded(name, rank0(w))) out.add(w.id);
    return out;
  }

  async #load(name: string): Promise<ReadonlySet<WorkerId>> {
    this.#checkLoadable(name); // callers other than adapterOf get the same rules
    const refused = new Set<WorkerId>();
    // Each round either succeeds, or learns something (a worker's real adapter list, or a
    // worker that cannot take it); the bound only guards against engines that keep changing.
    const workersAtStart = this.o.workers().length;
    for (let round = 0; round <= 2 * workersAtStart + 1; round++) {
      const workers = this.o.workers().filter((w) => !refused.has(w.id));
      if (workers.length === 0) break;
      const holders = this.#holders(name, workers);
      if (holders.size > 0) return holders;
      const byId = new Map(workers.map((w) => [w.id, w]));
      const candidates = workers.map(rank0);

      let target = placeAdapter(name, this.o.tracker, candidates);
      if (!target) {
        // Only adapters the router may manage are evicted; others were loaded by the operator.
        const isPinned = (victimName: string) =>
          !this.#allow.allows(victimName) || adapterNameProblem(victimName) !== undefined;
        const victim = this.o.evict
          ? lruEvictionCandidate(name, this.o.tracker, candidates, { isPinned })
          : undefined;
        if (!victim) throw this.#noCapacity(name, workers);
        const w = byId.get(victim.worker.workerId)!;
        const r = await this.o.engine.unload(w.url, victim.evict);
        if (!r.ok && r.status !== 404) {
          this.o.log?.warn(`lora: worker ${w.id} refused to unload adapter "${victim.evict}"`, {
            status: r.status,
            message: r.message,
          });
          await this.#refresh(w);
          refused.add(w.id);
          continue;
        }
        this.counters.unloads++;
        this.o.log?.info(
          `lora: unloaded least recently used adapter "${victim.evict}" from worker ${w.id} to make room for "${name}"`,
        );
        for (let r = 0; r < w.dpRanks; r++)
          this.o.tracker.handleMdcRemoval({ workerId: w.id, dpRank: r }, victim.evict);
        target = victim.worker;
      }

      const w = byId.get(target.workerId)!;
      const answer = await this.o.engine.load(
        w.url,
        name,
        this.o.pathTemplate.replaceAll("{name}", name),
      );
      if (answer.ok || (answer.status === 400 && ALREADY_LOADED.test(answer.message))) {
        if (answer.ok) this.counters.loads++;
        else this.counters.alreadyLoaded++;
        this.#record(w, name);
        if (answer.ok)
          this.o.log?.info(`lora: loaded adapter "${name}" on worker ${w.id}`, { url: w.url });
        return new Set([w.id]);
      }
      // Refused: our picture of that engine is stale (another router filled its slots), or
      // it cannot load this adapter at all. Its own list tells which.
      this.counters.refusals++;
      const fresh = await this.#refresh(w);
      if (fresh?.includes(name)) return new Set([w.id]);
      if (fresh !== undefined && this.o.tracker.freeSlots(rank0(w)) > 0) {
        // The engine's answer goes to the log, not to the client (it may name paths or hosts).
        this.o.log?.warn(`lora: worker ${w.id} refused to load adapter "${name}"`, {
          status: answer.status,
          message: answer.message,
        });
        throw new RouterError(
          "not_found",
          `LoRA adapter "${name}" could not be loaded on worker ${w.id} (the router's log has the engine's answer)`,
          "model",
        );
      }
      if (fresh === undefined) refused.add(w.id);
    }
    throw this.#noCapacity(
      name,
      this.o.workers().filter((w) => !refused.has(w.id)),
    );
  }

  /** Re-read one engine's adapters into the tracker; undefined when it did not answer. */
  async #refresh(w: LoraWorker): Promise<readonly string[] | undefined> {
    let listed: { readonly loras: readonly string[]; readonly maxLoras?: number };
    try {
      listed = await this.o.engine.listLoaded(w.url);
    } catch {
      return undefined;
    }
    const t = this.o.tracker;
    for (let r = 0; r < w.dpRanks; r++) {
      const worker = { workerId: w.id, dpRank: r };
      if (listed.maxLoras !== undefined) t.setWorkerCapacity(worker, listed.maxLoras);
      for (const old of t.lorasOn(worker))
        if (!listed.loras.includes(old)) t.handleMdcRemoval(worker, old);
      for (const name of listed.loras)
        if (!t.isLoaded(name, worker))
          t.handleMdcAddition(worker, { name, maxGpuLoraCount: t.capacity(worker) });
    }
    return listed.loras;
  }

  #record(w: LoraWorker, name: string): void {
    for (let r = 0; r < w.dpRanks; r++) {
      const worker = { workerId: w.id, dpRank: r };
      this.o.tracker.handleMdcAddition(worker, {
        name,
        maxGpuLoraCount: this.o.tracker.capacity(worker),
      });
    }
  }

  #noCapacity(name: string, workers: readonly LoraWorker[]): RouterError {
    this.counters.noCapacity++;
    if (workers.length === 0)
      return new RouterError("no_endpoints", `no healthy worker to load LoRA adapter "${name}" on`);
    const slots = workers.map((w) => {
      const c = this.o.tracker.capacity(rank0(w));
      return c === undefined
        ? `${w.id}: slots unknown`
        : `${w.id}: ${this.o.tracker.loadedCount(rank0(w))}/${c}`;
    });
    const hint = this.o.evict
      ? "and no adapter can be unloaded"
      : "(start the router with --lora-evict to unload the least recently used one)";
    return new RouterError(
      "lora_no_capacity",
      `no worker has a free LoRA slot for adapter "${name}" ${hint}; slots in use: ${slots.join(", ")}`,
      "model",
    );
  }
}
