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
