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

export type DeadlineKind = "connect" | "first_byte" | "response" | "stream_idle";

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
export const NO_DEADLINES: UpstreamDeadlines = { connectMs: 0, firstByteMs: 0, responseMs: 0, streamIdleMs: 0 };

/** A deadline passed before the engine answered (or while it streamed). */
export class DeadlineMissedError extends Error {
  override readonly name = "DeadlineMissedError";
  constructor(
    readonly kind: DeadlineKind,
    readonly ms: number,
  ) {
    super(`${kind.replace("_", " ")} deadline of ${ms / 1000} s missed`);
  }
}

/** The client went away before the answer started: nothing to retry, nobody to answer. */
export class ClientGoneError extends Error {
  override readonly name = "ClientGoneError";
  constructor() {
    super("the client closed its connection");
  }
}

/**
 * Resolve with `p`, or reject with the signal's reason as soon as it aborts (whichever
 * comes first). The loser is left to settle on its own; the caller closes what it opened.
 */
export function raceAbort<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return p;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}
