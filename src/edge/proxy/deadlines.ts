/**
 * The deadlines of one upstream call, and the errors that say which one was missed.
 *
 * - connect: TCP connection to the engine (socket client only; through fetch the connect is
 *   part of the first-byte wait, fetch gives no separate hook).
 * - first byte: from sending a streamed request to the first body byte. Prefill of a long
 *   prompt takes tens of seconds, so its default is long (see config/schema.ts).
 * - response: the same wait for a request that is not streamed, whose first byte comes only
 *   with the whole answer (prefill and every output token), so it is longer still.
 * - stream idle: between two body chunks once the answer streams.
 *
 * Before the first byte reached the client a missed deadline is a failure of that worker
 * (fenced, the request goes to the next one); after it, the stream ends with an error event
 * (observe-stream.ts).
 * 0 means "no deadline".
 */
import type { DeadlineKind } from "../../observe/names.ts";

export interface UpstreamDeadlines {
  /** Milliseconds; 0 = none. */
  readonly connectMs: number;
  /** Milliseconds; 0 = none. Streamed requests. */
  readonly firstByteMs: number;
  /** Milliseconds; 0 = none. Requests not known to be streamed: their first byte is the whole answer. */
  readonly responseMs: number;
  /** Milliseconds; 0 = none. */
  readonly streamIdleMs: number;
}

/** No deadline at all (tests, embedders that bring their own). */
export const NO_DEADLINES: UpstreamDeadlines = {
  connectMs: 0,
  firstByteMs: 0,
  responseMs: 0,
  streamIdleMs: 0,
};

/**
 * A deadline passed before the engine answered (or while it streamed). With `routerLagMs`, the
 * wait ran out mostly while the router's own event loop was held (judgeDeadline's "excused"):
 * the engine is not blamed for it (no fence, no failure towards ejection).
 */
export class DeadlineMissedError extends Error {
  override readonly name = "DeadlineMissedError";
  constructor(
    readonly kind: DeadlineKind,
    readonly ms: number,
    readonly routerLagMs?: number,
  ) {
    super(
      routerLagMs === undefined
        ? `${kind.replace("_", " ")} deadline of ${ms / 1000} s missed`
        : `${kind.replace("_", " ")} deadline of ${ms / 1000} s ran out while the router's event loop was held for ${Math.round(routerLagMs)} ms of the wait; not counted against the worker`,
    );
  }
}

/**
 * A wait's deadline is stretched for the router's own lag up to this many times its length;
 * past that it ends, excused, so every wait keeps a bound.
 */
export const LAG_STRETCH_LIMIT = 3;

export type DeadlineVerdict =
  /** The engine had the whole deadline of time the router could watch: a miss, the engine's. */
  | { readonly kind: "missed" }
  /** The router's event loop was held for part of the wait: wait `ms` more, then judge again. */
  | { readonly kind: "wait"; readonly ms: number }
  /** Stretched to the limit and still short of a whole deadline of watched time: ended, not the engine's fault. */
  | { readonly kind: "excused"; readonly lagMs: number };

/**
 * A deadline's timer fired after `elapsedMs` of waiting, `lagMs` of which the router's event loop
 * was held (a starved CPU, a long task): time the router could not see the engine's answer in,
 * so it does not count. An engine that answers on loopback in microseconds looks like one that
 * missed a 5 s connect deadline when the router itself could not run for 5 s; fencing it then
 * sends its requests to the others, on the same starved router, and they go the same way.
 * Pure: the clock and the lag are the caller's.
 */
export function judgeDeadline(limitMs: number, elapsedMs: number, lagMs: number): DeadlineVerdict {
  const watched = elapsedMs - Math.max(0, lagMs);
  if (watched >= limitMs) return { kind: "missed" };
  const more = Math.max(1, Math.ceil(limitMs - watched));
  if (elapsedMs + more <= limitMs * LAG_STRETCH_LIMIT) return { kind: "wait", ms: more };
  return { kind: "excused", lagMs };
}

/**
 * The client took no byte of the answer for the stream-idle deadline (its socket stayed full):
 * its connection is cut, so a client that stops reading cannot hold the engine's answer.
 */
export class ClientStalledError extends Error {
  override readonly name = "ClientStalledError";
  constructor(readonly ms: number) {
    super(`the client took nothing of the answer for ${ms / 1000} s`);
  }
}

/** The client went away before the answer started: nothing to retry, nobody to answer. */
export class ClientGoneError extends Error {
  override readonly name = "ClientGoneError";
  constructor() {
    super("the client closed its connection");
  }
}
