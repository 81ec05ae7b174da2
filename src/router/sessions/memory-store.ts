/**
 * The embedded AffinityStore (Dynamo's `InMemoryAffinityStore`): one map with a
 * sliding TTL per binding, swept by a reaper every `reaperIntervalMs`.
 *
 * An expired binding disappears either at the next sweep or at the lookup that finds it,
 * whichever comes first; either way an engine-backed one is reported to `onExpire` exactly
 * once (router-only bindings expire silently). Time and the sweep timer come from the
 * injected clock, so this file owns no timer and reads no wall clock.
 *
 * The map is bounded (`maxSessions`): clients choose session ids, so without a bound one
 * client can make the router hold any number of them (36,000 ids of 15 KB took
 * RSS from 70 to 591 MB). The map's order is least recently used first (a lookup that
 * slides a binding moves it to the end), so the binding dropped to make room is the one
 * idle longest; an engine-backed one is reported to `onExpire` like an expiry, so its
 * engine session is closed, and every drop is counted (`evicted`).
 */
import type { Logger } from "../../core/logger.ts";
import type { WorkerWithDpRank } from "../../core/ids.ts";
import {
  REAPER_INTERVAL_MS,
  type AffinityKind,
  type AffinityStore,
  type Binding,
  type OnExpire,
  type StoreClock,
} from "./store.ts";

export interface MemoryAffinityStoreOptions {
  readonly clock: StoreClock;
  /** Called for each expired engine-backed binding, so the engine's session can be closed. */
  readonly onExpire?: OnExpire;
  /** Sweep period; 0 turns the timer off (lookups and reapExpired() still expire). */
  readonly reaperIntervalMs?: number;
  /** Where the store reports trouble it absorbs (an on-expire callback that threw). */
  readonly logger?: Pick<Logger, "warn">;
  /** Bindings held at most; a new one past it drops the least recently used (default 100,000). */
  readonly maxSessions?: number;
}

export const DEFAULT_MAX_SESSIONS = 100_000;

export class MemoryAffinityStore implements AffinityStore {
  readonly #map = new Map<string, Binding>();
  readonly #clock: StoreClock;
  readonly #onExpire: OnExpire | undefined;
  readonly #logger: Pick<Logger, "warn"> | undefined;
  readonly #maxSessions: number;
  #stopReaper: (() => void) | undefined;
  #evicted = 0;

  constructor(opts: MemoryAffinityStoreOptions) {
    this.#clock = opts.clock;
    this.#maxSessions = opts.maxSessions ?? DEFAULT_MAX_SESSIONS;
    if (!(this.#maxSessions >= 1))
      throw new RangeError(`maxSessions must be >= 1, got ${opts.maxSessions}`);
    this.#onExpire = opts.onExpire;
    this.#logger = opts.logger;
    const interval = opts.reaperIntervalMs ?? REAPER_INTERVAL_MS;
    if (interval > 0) this.#stopReaper = opts.clock.every(interval, () => this.reapExpired());
  }

  async get(sessionId: string): Promise<Binding | undefined> {
    return this.#lookup(sessionId, true);
  }

  async peek(sessionId: string): Promise<Binding | undefined> {
    return this.#lookup(sessionId, false);
  }

  async put(
    sessionId: string,
    worker: WorkerWithDpRank,
    ttlMs: number,
    kind: AffinityKind,
  ): Promise<void> {
    // Delete first so the binding moves to the most recently used end.
    const replaced = this.#map.delete(sessionId);
    if (!replaced) this.#makeRoom();
    this.#map.set(sessionId, { worker, ttlMs, kind, expiresAt: this.#clock.now() + ttlMs });
  }

  /** Bindings dropped to stay within `maxSessions` since the store was made. */
  get evicted(): number {
    return this.#evicted;
  }

  /** Before adding one binding: drop the least recently used ones until there is room. */
  #makeRoom(): void {
    while (this.#map.size >= this.#maxSessions) {
      const oldest = this.#map.entries().next();
      if (oldest.done) return;
      const [sessionId, binding] = oldest.value;
      this.#map.delete(sessionId);
      this.#evicted++;
      this.#expired(sessionId, binding);
    }
  }

  async remove(sessionId: string): Promise<Binding | undefined> {
    const binding = this.#map.get(sessionId);
    this.#map.delete(sessionId);
    return binding;
  }

  async close(): Promise<void> {
    this.#stopReaper?.();
    this.#stopReaper = undefined;
  }

  /** One reaper sweep at `now`: drop every expired binding. Returns how many were dropped. */
  reapExpired(now: number = this.#clock.now()): number {
    let dropped = 0;
    for (const [sessionId, binding] of this.#map) {
      if (binding.expiresAt > now) continue;
      this.#map.delete(sessionId); // deleting the current entry while iterating a Map is safe
      dropped++;
      this.#expired(sessionId, binding);
    }
    return dropped;
  }

  /**
   * Remove `stale` if it is still the session's binding (same worker, same expiry) and has
   * expired. A binding made or refreshed since `stale` was read is left alone and no
   * callback fires. True if it removed something.
   */
  removeExpiredIfCurrent(sessionId: string, stale: Binding): boolean {
    const current = this.#map.get(sessionId);
    if (
      !current ||
      current.worker.workerId !== stale.worker.workerId ||
      current.worker.dpRank !== stale.worker.dpRank ||
      current.expiresAt !== stale.expiresAt ||
      current.expiresAt > this.#clock.now()
    ) {
      return false;
    }
    this.#map.delete(sessionId);
    this.#expired(sessionId, current);
    return true;
  }

  /** Bindings held, expired ones not yet swept included. */
  get size(): number {
    return this.#map.size;
  }

  #lookup(sessionId: string, refresh: boolean): Binding | undefined {
    const binding = this.#map.get(sessionId);
    if (!binding) return undefined;
    const now = this.#clock.now();
    if (binding.expiresAt <= now) {
      this.removeExpiredIfCurrent(sessionId, binding);
      return undefined;
    }
    if (!refresh) return binding;
    const refreshed = { ...binding, expiresAt: now + binding.ttlMs };
    this.#map.delete(sessionId); // to the most recently used end
    this.#map.set(sessionId, refreshed);
    return refreshed;
  }

  #expired(sessionId: string, binding: Binding): void {
    if (binding.kind !== "engine-backed" || !this.#onExpire) return;
    try {
      this.#onExpire(sessionId, binding);
    } catch (error) {
      // One failing close must not stop the sweep or the lookup that found it.
      this.#logger?.warn("session on-expire callback threw", { sessionId, error: String(error) });
    }
  }
}
