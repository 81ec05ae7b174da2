/**
 * One try of one worker, up to the first body byte, under the first-byte deadline and the
 * client's disconnect: the answer's head and first chunk, or why there is none. Whatever
 * ends the try early (deadline, client gone, a retryable status) closes the engine
 * connection, so the engine sees the cancel and stops computing the prompt. It does not
 * fence, retry or free bookings (forward.ts does).
 *
 * The worker may also be given up on by someone else while the try waits (a health check
 * failed, another request fenced it, outlier ejection, removal): nothing was sent to the
 * client yet, so the try ends at once and the request can go elsewhere, instead of waiting
 * out a deadline (600 s for an answer that is not streamed) on an engine known to be gone.
 */
import type { DeadlineKind } from "../../observe/names.ts";
import { ClientGoneError, DeadlineMissedError, type UpstreamDeadlines } from "./deadlines.ts";
import type { ChunkReader } from "./observe-stream.ts";
import type { UpstreamBody, UpstreamCall, UpstreamResponse } from "./upstream.ts";

/** Without a policy: the statuses that mean "this worker cannot serve now", not "this request is bad". */
const GATEWAY_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

export type FirstRead = Awaited<ReturnType<ChunkReader["read"]>>;

export type AttemptResult =
  /** The engine answered: head, and the first chunk when there is a body. */
  | {
      readonly kind: "answer";
      readonly res: UpstreamResponse;
      readonly first: FirstRead | undefined;
      readonly reader: UpstreamBody | undefined;
    }
  /** This worker failed the request before its first byte; another may serve it. */
  | {
      readonly kind: "failed";
      readonly reason: string;
      readonly deadline?: DeadlineKind;
      readonly status?: number;
      /** The deadline ran out while the router's own loop was held: not the worker's fault. */
      readonly routerLagged?: boolean;
    }
  /** The client left before the first byte. */
  | { readonly kind: "client_gone" }
  /** The router stopped sending this worker requests while the try waited (it is unhealthy already). */
  | { readonly kind: "worker_down"; readonly reason: string };

export interface AttemptInput {
  readonly call: UpstreamCall;
  readonly baseUrl: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
  /** The client's request signal (aborts when it disconnects); undefined where the runtime has none. */
  readonly clientSignal: AbortSignal | undefined;
  readonly deadlines: UpstreamDeadlines;
  /**
   * The client asked for a stream (`stream: true`): its first byte comes after the prefill.
   * Otherwise (or unknown) it comes with the whole answer, and the response deadline applies.
   */
  readonly stream: boolean | undefined;
  /** No worker left to try: a retryable status is answered as it is. */
  readonly last: boolean;
  /** Statuses tried again elsewhere (retry-policy.ts); default 502, 503, 504. */
  readonly retryOn?: ReadonlySet<number>;
  /** Asked before giving up on a retryable status (another worker to try, the retry budget); false: the answer is passed on. */
  readonly mayRetry?: (status: number) => boolean;
  /**
   * Subscribe to "this worker stopped taking requests" (WorkerRegistry.onUnavailable);
   * returns the unsubscribe. Without it the try waits for its deadlines only.
   */
  readonly watchWorker?: (onDown: (reason: string) => void) => () => void;
}

/** The worker was marked unhealthy, fenced, ejected or removed while its first byte was awaited. */
class WorkerDownError extends Error {
  override readonly name = "WorkerDownError";
}

export async function attemptUpstream(a: AttemptInput): Promise<AttemptResult> {
  const ctl = new AbortController();
  // What ends the try early rejects the wait in progress itself: the two waits below need no
  // abort listener of their own (an AbortSignal listener added and removed twice per request
  // was ~4 % of the router's CPU per proxied request in bench:proxy's profile).
  let failWait: ((why: unknown) => void) | undefined;
  const stop = (why: Error) => {
    ctl.abort(why);
    failWait?.(why);
  };
  const waitFor = <T>(p: Promise<T>): Promise<T> => {
    if (ctl.signal.aborted) return Promise.reject(ctl.signal.reason);
    return new Promise<T>((resolve, reject) => {
      failWait = reject;
      p.then(resolve, reject);
    });
  };
  const client = a.clientSignal;
  const onClientGone = () => stop(new ClientGoneError());
  if (client !== undefined) {
    if (client.aborted) return { kind: "client_gone" };
    client.addEventListener("abort", onClientGone, { once: true });
  }
  const kind = a.stream === true ? "first_byte" : "response";
  const limit = a.stream === true ? a.deadlines.firstByteMs : a.deadlines.responseMs;
  const timer =
    limit > 0 ? setTimeout(() => stop(new DeadlineMissedError(kind, limit)), limit) : undefined;
  const unwatch = a.watchWorker?.((reason) =>
    stop(
      new WorkerDownError(`worker became unavailable while its first byte was awaited (${reason})`),
    ),
  );
  let res: UpstreamResponse | undefined;
  let pending: Promise<UpstreamResponse> | undefined;
  try {
    pending = a.call(a.baseUrl, a.path, { headers: a.headers, body: a.body, signal: ctl.signal });
    res = await waitFor(pending);
    if (
      (a.retryOn ?? GATEWAY_STATUSES).has(res.status) &&
      !a.last &&
      (a.mayRetry?.(res.status) ?? true)
    ) {
      await res.body?.cancel().catch(() => {});
      return { kind: "failed", reason: `HTTP ${res.status}`, status: res.status };
    }
    const reader = res.body ?? undefined;
    // Read the first chunk before answering, so a body that breaks at once is retried.
    const first = reader ? await waitFor(reader.read()) : undefined;
    return { kind: "answer", res, first, reader };
  } catch (e) {
    // Close what was opened: the engine must see that nobody waits for this answer (a head
    // that lost the race to the abort included).
    if (res !== undefined) void res.body?.cancel().catch(() => {});
    else
      void pending?.then(
        (late) => late.body?.cancel().catch(() => {}),
        () => {},
      );
    const why = ctl.signal.aborted ? ctl.signal.reason : e;
    if (why instanceof ClientGoneError) return { kind: "client_gone" };
    if (why instanceof DeadlineMissedError)
      return why.routerLagMs === undefined
        ? { kind: "failed", reason: why.message, deadline: why.kind }
        : { kind: "failed", reason: why.message, deadline: why.kind, routerLagged: true };
    if (why instanceof WorkerDownError) return { kind: "worker_down", reason: why.message };
    return { kind: "failed", reason: (why as Error).message };
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    unwatch?.();
    client?.removeEventListener("abort", onClientGone);
  }
}
