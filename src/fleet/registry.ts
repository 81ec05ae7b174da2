/**
 * The workers this router sends requests to: id, base URL, data-parallel ranks, health.
 * It knows nothing of the index or of load; membership.ts keeps those in step with it.
 */
import type { DpRank, WorkerId, WorkerWithDpRank } from "../core/ids.ts";

export interface WorkerRecord {
  readonly id: WorkerId;
  /** Base URL without a trailing slash, e.g. http://10.0.0.5:8000 */
  readonly url: string;
  /** Ranks 0..dpRanks-1 are routable. */
  readonly dpRanks: number;
  healthy: boolean;
  /** Why it is unhealthy (last failed check or fence), for /v1/workers and logs. */
  reason: string | undefined;
  /** The base model it serves, when it said (engine info or registration). */
  readonly model?: string;
}

/** Told why a worker stopped taking requests (unhealthy, fenced, ejected or removed). */
export type UnavailableListener = (reason: string) => void;

export class WorkerRegistry {
  readonly #byId = new Map<WorkerId, WorkerRecord>();
  /** Which worker each base URL is registered as: one engine, one worker. */
  readonly #byUrl = new Map<string, WorkerId>();
  readonly #watchers = new Map<WorkerId, Set<UnavailableListener>>();
  readonly #drainWatchers = new Map<WorkerId, Set<UnavailableListener>>();
  #targets: WorkerWithDpRank[] | undefined;
  #healthyIds: Set<WorkerId> | undefined;
  #models: Set<string> | undefined;

  /** Adds a worker; returns false (and changes nothing) when the id is already registered. */
  add(id: WorkerId, url: string, dpRanks: number, healthy = true, model?: string): boolean {
    if (this.#byId.has(id)) return false;
    const base = url.replace(/\/+$/, "");
    this.#byId.set(id, {
      id,
      url: base,
      dpRanks,
      healthy,
      reason: healthy ? undefined : "not checked yet",
      model,
    });
    this.#byUrl.set(base, id);
    this.#invalidate();
    return true;
  }

  remove(id: WorkerId): WorkerRecord | undefined {
    const rec = this.#byId.get(id);
    if (rec) {
      this.#byId.delete(id);
      if (this.#byUrl.get(rec.url) === id) this.#byUrl.delete(rec.url);
      this.#invalidate();
      this.#tellUnavailable(id, "removed");
    }
    return rec;
  }

  /** The worker registered with this base URL (as registered: no trailing slash), if any. */
  idOfUrl(url: string): WorkerId | undefined {
    return this.#byUrl.get(url.replace(/\/+$/, ""));
  }

  get(id: WorkerId): WorkerRecord | undefined {
    return this.#byId.get(id);
  }

  has(id: WorkerId): boolean {
    return this.#byId.has(id);
  }

  list(): WorkerRecord[] {
    return [...this.#byId.values()];
  }

  get size(): number {
    return this.#byId.size;
  }

  /** Returns true when the health state changed. */
  setHealthy(id: WorkerId, healthy: boolean, reason?: string, finishInFlight = false): boolean {
    const rec = this.#byId.get(id);
    if (!rec) return false;
    rec.reason = healthy ? undefined : (reason ?? "unhealthy");
    const changed = rec.healthy !== healthy;
    if (changed) {
      rec.healthy = healthy;
      this.#invalidate();
    }
    // A worker given up on tells the requests still waiting for its first byte, even when it
    // was out of rotation already (a held worker that then fails). One taken out to drain
    // (`finishInFlight`: a pod not ready or terminating) keeps them: its engine still serves.
    if (!healthy && !finishInFlight) this.#tellUnavailable(id, rec.reason ?? "unhealthy");
    if (!healthy && finishInFlight) this.#tellDraining(id, rec.reason ?? "draining");
    return changed;
  }

  /**
   * Call `listener` once when this worker stops taking requests (marked unhealthy, unless
   * only to drain, or removed). A request still waiting for the worker's first byte uses it to go elsewhere at
   * once instead of waiting out its deadline on an engine the router already gave up on.
   * Returns the unsubscribe.
   */
  onUnavailable(id: WorkerId, listener: UnavailableListener): () => void {
    let set = this.#watchers.get(id);
    if (set === undefined) this.#watchers.set(id, (set = new Set()));
    set.add(listener);
    return () => {
      const s = this.#watchers.get(id);
      if (s === undefined) return;
      s.delete(listener);
      if (s.size === 0) this.#watchers.delete(id);
    };
  }

  /**
   * Call `listener` once when this worker is taken out of rotation to drain (a pod not ready or
   * terminating: its engine still serves what it has). A stream on it may then move elsewhere
   * before the pod goes (edge/proxy/migration, --migrate-after). Returns the unsubscribe.
   */
  onDraining(id: WorkerId, listener: UnavailableListener): () => void {
    let set = this.#drainWatchers.get(id);
    if (set === undefined) this.#drainWatchers.set(id, (set = new Set()));
    set.add(listener);
    return () => {
      const s = this.#drainWatchers.get(id);
      if (s === undefined) return;
      s.delete(listener);
      if (s.size === 0) this.#drainWatchers.delete(id);
    };
  }

  #tellDraining(id: WorkerId, reason: string): void {
    const set = this.#drainWatchers.get(id);
    if (set === undefined) return;
    this.#drainWatchers.delete(id);
    for (const listener of set) listener(reason);
  }

  #tellUnavailable(id: WorkerId, reason: string): void {
    const set = this.#watchers.get(id);
    if (set === undefined) return;
    this.#watchers.delete(id);
    for (const listener of set) listener(reason);
  }

  /** Is this (worker, rank) registered, healthy and in range? */
  isRoutable(id: WorkerId, dpRank: DpRank): boolean {
    const rec = this.#byId.get(id);
    return rec !== undefined && rec.healthy && dpRank >= 0 && dpRank < rec.dpRanks;
  }

  /** Every (worker, rank) of every healthy worker; cached until membership or health changes. */
  healthyTargets(): readonly WorkerWithDpRank[] {
    if (this.#targets === undefined) {
      const out: WorkerWithDpRank[] = [];
      for (const rec of this.#byId.values()) {
        if (!rec.healthy) continue;
        for (let r = 0; r < rec.dpRanks; r++) out.push({ workerId: rec.id, dpRank: r });
      }
      this.#targets = out;
    }
    return this.#targets;
  }

  /** Is `name` the base model of some registered worker? */
  isBaseModel(name: string): boolean {
    if (this.#models === undefined) {
      this.#models = new Set();
      for (const rec of this.#byId.values())
        if (rec.model !== undefined) this.#models.add(rec.model);
    }
    return this.#models.has(name);
  }

  /** Ids of healthy workers; cached like healthyTargets. */
  healthyIds(): ReadonlySet<WorkerId> {
    if (this.#healthyIds === undefined) {
      this.#healthyIds = new Set(
        [...this.#byId.values()].filter((r) => r.healthy).map((r) => r.id),
      );
    }
    return this.#healthyIds;
  }

  #invalidate(): void {
    this.#targets = undefined;
    this.#healthyIds = undefined;
    this.#models = undefined;
  }
}
