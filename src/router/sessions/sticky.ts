/**
 * Session affinity policy (Dynamo's `StickySessionRouter`): keeps every turn of a
 * session on one (worker, dp_rank), where its prefix stays warm. It only reads and writes
 * bindings; opening and closing sessions on the engine is the caller's job.
 */
import { RouterError } from "../../core/errors.ts";
import type { WorkerWithDpRank } from "../../core/ids.ts";
import type { AffinityKind, AffinityStore, Binding } from "./store.ts";

/** `session_control.timeout` when a request does not give one (seconds). */
export const DEFAULT_SESSION_TIMEOUT_S = 300;
/**
 * The engine keeps a session this much longer than the router's TTL, so the router's expiry
 * (which closes the engine session) normally comes first.
 */
export const SESSION_TIMEOUT_FALLBACK_BUFFER_S = 30;

/** Longest session id accepted by default (characters); UUIDs and the like are far shorter. */
export const DEFAULT_MAX_SESSION_ID_LENGTH = 256;

export interface StickyOptions {
  /** Longest session id accepted (characters); longer ids are refused with a 400 naming `field`. */
  readonly maxSessionIdLength?: number;
}

export class StickyRouter {
  readonly maxSessionIdLength: number;

  constructor(
    readonly store: AffinityStore,
    opts: StickyOptions = {},
  ) {
    this.maxSessionIdLength = opts.maxSessionIdLength ?? DEFAULT_MAX_SESSION_ID_LENGTH;
  }

  /**
   * Throws a 400 naming `field` when the id is longer than the limit. Clients choose
   * session ids and every store keeps them as keys, so their length is bounded at every
   * edge (the header, session_control, /v1/route); the methods below check again, for
   * callers that did not.
   */
  checkSessionId(sessionId: string, field = "session_id"): void {
    if (sessionId.length > this.maxSessionIdLength) {
      throw new RouterError(
        "invalid_request",
        `${field}: session id is ${sessionId.length} characters; the limit is ${this.maxSessionIdLength} (--max-session-id-length)`,
        field,
      );
    }
  }

  /** The session's worker, sliding its TTL forward (a middle turn). */
  async resolve(sessionId: string): Promise<WorkerWithDpRank | undefined> {
    this.checkSessionId(sessionId);
    return (await this.store.get(sessionId))?.worker;
  }

  /** The session's worker without extending it (open/close turns, until the engine agrees). */
  async peek(sessionId: string): Promise<WorkerWithDpRank | undefined> {
    this.checkSessionId(sessionId);
    return (await this.store.peek(sessionId))?.worker;
  }

  /** Affinity the router keeps by itself; its expiry closes nothing on the engine. */
  bindRouterOnly(sessionId: string, worker: WorkerWithDpRank, ttlMs: number): Promise<void> {
    return this.#bind(sessionId, worker, ttlMs, "router-only");
  }

  /** Affinity to a session opened on the engine; its expiry must close that session. */
  bindEngineSession(sessionId: string, worker: WorkerWithDpRank, ttlMs: number): Promise<void> {
    return this.#bind(sessionId, worker, ttlMs, "engine-backed");
  }

  /** Forget the session; returns what it was bound to, if anything. */
  unbind(sessionId: string): Promise<Binding | undefined> {
    return this.store.remove(sessionId);
  }

  async #bind(
    sessionId: string,
    worker: WorkerWithDpRank,
    ttlMs: number,
    kind: AffinityKind,
  ): Promise<void> {
    this.checkSessionId(sessionId);
    if (!(ttlMs > 0) || !Number.isFinite(ttlMs)) {
      throw new RouterError(
        "invalid_request",
        `session timeout must be positive, got ${ttlMs} ms`,
        "session_control.timeout",
      );
    }
    await this.store.put(sessionId, worker, ttlMs, kind);
  }
}
