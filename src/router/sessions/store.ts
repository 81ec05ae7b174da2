/**
 * Where sticky-session bindings live (Dynamo's sticky sessions). Async so a Redis store fits the same shape.
 * Time is the store's concern: the in-memory store is given a clock, Redis uses its own.
 */
import type { WorkerWithDpRank } from "../../core/ids.ts";

export type AffinityKind = "router-only" | "engine-backed";

export interface Binding {
  readonly worker: WorkerWithDpRank;
  /** Sliding TTL in milliseconds. */
  readonly ttlMs: number;
  readonly kind: AffinityKind;
  /** Absolute expiry, in the store's clock (ms). */
  readonly expiresAt: number;
}

export interface AffinityStore {
  /** The binding, with its TTL slid forward (expiresAt = now + ttl); undefined if none/expired. */
  get(sessionId: string): Promise<Binding | undefined>;
  /** The binding without touching its TTL. */
  peek(sessionId: string): Promise<Binding | undefined>;
  /** Create or overwrite a binding. */
  put(
    sessionId: string,
    worker: WorkerWithDpRank,
    ttlMs: number,
    kind: AffinityKind,
  ): Promise<void>;
  /** Remove and return the binding, if there was one. */
  remove(sessionId: string): Promise<Binding | undefined>;
  /** Stop timers and connections. */
  close(): Promise<void>;
}

/** Called once per expired engine-backed binding, so the engine's session can be closed. */
export type OnExpire = (sessionId: string, binding: Binding) => void;

/** How often stores sweep for expired bindings by default (Dynamo's REAPER_INTERVAL). */
export const REAPER_INTERVAL_MS = 30_000;

/**
 * Time as a store sees it: a clock (ms) and a repeating timer. Injected, so tests drive
 * both with a fake clock and pure stores own no timers.
 */
export interface StoreClock {
  now(): number;
  /** Call `fn` every `ms` milliseconds until the returned function is called. */
  every(ms: number, fn: () => void): () => void;
}
