/**
 * List, then watch, the pods a label selector matches in one namespace, with the API
 * server's semantics ("efficient detection of changes"):
 * - list → every pod and the list's resourceVersion; the sink replaces what it knew with it
 *   (pods missing from a new list were deleted while nobody watched);
 * - watch from that version with bookmarks; each ADDED / MODIFIED / DELETED goes to the sink
 *   and moves the version on, a BOOKMARK only moves the version;
 * - 410 Gone (an ERROR event whose Status says code 410, or an HTTP 410): the version left the
 *   server's history; list again at once;
 * - the server ending the watch (timeoutSeconds, asked for at 5-10 min like client-go, so
 *   routers do not all reconnect together) → watch again from the last version at once;
 * - a cut connection, an HTTP error, an unreadable line, or nothing at all for `idleMs` (a
 *   half-open connection sends nothing; bookmarks arrive about once a minute) → watch again
 *   from the last version after a capped, jittered, exponential backoff (a list again when
 *   there is no version yet). Meanwhile the sink is not touched, so during an API server
 *   outage the last known fleet keeps routing.
 * A watch that ends within a second of starting counts as a failure, so a server that closes
 * every watch at once is not hammered. Timers and randomness are injected.
 */
import type { Logger } from "../../core/logger.ts";
import type { DiscoveryMetrics, RelistReason, WatchRestartReason } from "./discovery-metrics.ts";
import { KubeApiError, type KubeApi } from "./kube-api.ts";

export interface PodSink {
  replaceAll(pods: readonly unknown[]): void;
  upsert(pod: unknown): void;
  delete(pod: unknown): void;
}

export interface Timers {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export interface PodWatchOptions {
  readonly api: Pick<KubeApi, "listPods" | "watchPods">;
  readonly namespace: string;
  readonly selector: string;
  readonly sink: PodSink;
  readonly timers: Timers;
  readonly rng: () => number;
  /** Milliseconds, monotonic. */
  readonly now: () => number;
  readonly log: Pick<Logger, "info" | "warn" | "error">;
  readonly metrics?: DiscoveryMetrics;
  /** Backoff after failures: base × 2^(n-1), capped, then jittered into [½, 1] of it (ms). */
  readonly backoffBaseMs?: number;
  readonly backoffMaxMs?: number;
  /** Nothing received for this long: the connection is taken for dead (ms; default 150000). */
  readonly idleMs?: number;
  /** The watch's timeoutSeconds (default 300-600, random per watch). */
  readonly watchTimeoutSeconds?: () => number;
}

/** A list not answered by then is a failure (a hung API server must not stall discovery for good). */
const LIST_DEADLINE_MS = 60_000;
/** A watch shorter than this that ends counts as a failure (ms). */
const MIN_HEALTHY_WATCH_MS = 1_000;

/** The resource version left the server's history: list again. */
class Expired extends Error {}

export class PodWatch {
  readonly #o: PodWatchOptions;
  readonly #abort = new AbortController();
  #rv: string | undefined;
  #loop: Promise<void> | undefined;
  /** The kind of failure last logged, so an outage is logged once, not every retry. */
  #failing: string | undefined;

  constructor(o: PodWatchOptions) {
    this.#o = o;
  }

  /** The last resource version seen (list, event or bookmark). */
  get resourceVersion(): string | undefined {
    return this.#rv;
  }

  /** Start the loop; resolves once the first list got through, or failed once. */
  start(): Promise<void> {
    let first!: () => void;
    const listed = new Promise<void>((r) => (first = r));
    this.#loop = this.#run(first).finally(first);
    return listed;
  }

  /** Stop the loop (the open watch is aborted); resolves once it ended. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#loop;
  }

  get #stopped(): boolean {
    return this.#abort.signal.aborted;
  }

  async #run(firstAttemptOver: () => void): Promise<void> {
    const { api, namespace, selector, sink, log, metrics } = this.#o;
    let failures = 0;
    /** Why the next list is needed; a failed attempt does not change it. */
    let relistReason: RelistReason = "start";
    while (!this.#stopped) {
      if (this.#rv === undefined) {
        try {
          const list = await this.#list();
          this.#recovered();
          metrics?.relisted(relistReason);
          log.info(
            `discovery: ${list.items.length} pods match ${JSON.stringify(selector)} in namespace ${namespace}`,
            { resource_version: list.resourceVersion, reason: relistReason },
          );
          sink.replaceAll(list.items);
          this.#rv = list.resourceVersion;
          firstAttemptOver();
        } catch (e) {
          if (this.#stopped) break;
          firstAttemptOver();
          failures++;
          this.#failed("list", e);
          await this.#backoff(failures);
          continue;
        }
      }
      const started = this.#o.now();
      let reason: WatchRestartReason | "expired" = "timeout";
      // Set by the idle timer (a closure the compiler cannot follow into `reason`).
      const idle = { fired: false };
      const ctl = new AbortController();
      const cancel = () => ctl.abort();
      this.#abort.signal.addEventListener("abort", cancel);
      let idleTimer: unknown;
      const idleMs = this.#o.idleMs ?? 150_000;
      const resetIdle = () => {
        this.#o.timers.clear(idleTimer);
        idleTimer = this.#o.timers.set(() => {
          idle.fired = true;
          ctl.abort();
        }, idleMs);
      };
      try {
        resetIdle();
        const timeoutSeconds =
          this.#o.watchTimeoutSeconds?.() ?? Math.floor(300 + this.#o.rng() * 300);
        const events = await api.watchPods(
          namespace,
          { labelSelector: selector, resourceVersion: this.#rv!, timeoutSeconds },
          ctl.signal,
        );
        this.#recovered();
        for await (const ev of events) {
          resetIdle();
          if (ev.type === "ERROR") throw statusError(ev.object);
          const rv = resourceVersionOf(ev.object);
          if (ev.type === "ADDED" || ev.type === "MODIFIED") sink.upsert(ev.object);
          else if (ev.type === "DELETED") sink.delete(ev.object);
          if (rv !== undefined) this.#rv = rv;
        }
        if (idle.fired) throw new Error(`nothing received for ${idleMs / 1000} s`);
      } catch (e) {
        if (this.#stopped) break;
        if (idle.fired) {
          reason = "idle";
          log.info(
            `discovery: no event or bookmark for ${idleMs / 1000} s; watching again from resource version ${this.#rv}`,
          );
        } else if (isExpired(e)) {
          reason = "expired";
          log.info(
            `discovery: resource version ${this.#rv} is gone from the API server's history (410); listing again`,
          );
          this.#rv = undefined;
          relistReason = "expired";
        } else {
          reason = "error";
          if (isTooLarge(e)) {
            // The server went back in time (etcd restored from a backup): start over.
            this.#rv = undefined;
            relistReason = "error";
          }
          this.#failed("watch", e);
        }
      } finally {
        this.#o.timers.clear(idleTimer);
        this.#abort.signal.removeEventListener("abort", cancel);
      }
      if (this.#stopped) break;
      if (reason !== "expired") metrics?.watchRestarted(reason);
      const lived = this.#o.now() - started;
      if (reason === "error") failures = lived >= MIN_HEALTHY_WATCH_MS ? 1 : failures + 1;
      else failures = lived >= MIN_HEALTHY_WATCH_MS ? 0 : failures + 1;
      if (failures > 0) await this.#backoff(failures);
    }
  }

  /** One list under a deadline, aborted by stop(). */
  async #list(): ReturnType<PodWatchOptions["api"]["listPods"]> {
    const ctl = new AbortController();
    const cancel = () => ctl.abort();
    this.#abort.signal.addEventListener("abort", cancel);
    const h = this.#o.timers.set(
      () => ctl.abort(new Error(`no answer in ${LIST_DEADLINE_MS / 1000} s`)),
      LIST_DEADLINE_MS,
    );
    try {
      return await this.#o.api.listPods(this.#o.namespace, this.#o.selector, ctl.signal);
    } finally {
      this.#o.timers.clear(h);
      this.#abort.signal.removeEventListener("abort", cancel);
    }
  }

  /**
   * Log the first failure of an outage, and a new kind of failure (an HTTP status after
   * refused connections: RBAC changed, say), not every retry.
   */
  #failed(what: string, e: unknown): void {
    this.#o.metrics?.apiUp(false);
    const message = `${what}: ${describe(e)}`;
    const kind = e instanceof KubeApiError ? `http ${e.status}` : "connection";
    if (kind === this.#failing) return;
    this.#failing = kind;
    const hint =
      e instanceof KubeApiError && (e.status === 401 || e.status === 403)
        ? ` (the router's service account needs get, list and watch on pods in namespace ${this.#o.namespace})`
        : "";
    this.#o.log.error(
      `discovery: the Kubernetes API failed (${message})${hint}; the last known workers keep routing, retrying with backoff`,
    );
  }

  #recovered(): void {
    this.#o.metrics?.apiUp(true);
    if (this.#failing === undefined) return;
    this.#failing = undefined;
    this.#o.log.info("discovery: the Kubernetes API answers again");
  }

  /** base × 2^(n-1), capped, jittered into [½, 1] of it; ends early on stop. */
  #backoff(failures: number): Promise<void> {
    const base = this.#o.backoffBaseMs ?? 250;
    const max = this.#o.backoffMaxMs ?? 10_000;
    const d = Math.min(max, base * 2 ** Math.min(failures - 1, 30));
    const ms = d / 2 + this.#o.rng() * (d / 2);
    return new Promise((resolve) => {
      if (this.#stopped) return resolve();
      const done = () => {
        this.#o.timers.clear(h);
        this.#abort.signal.removeEventListener("abort", done);
        resolve();
      };
      const h = this.#o.timers.set(done, ms);
      this.#abort.signal.addEventListener("abort", done);
    });
  }
}

function resourceVersionOf(obj: Record<string, unknown>): string | undefined {
  const rv = (obj.metadata as { resourceVersion?: unknown } | undefined)?.resourceVersion;
  return typeof rv === "string" && rv !== "" ? rv : undefined;
}

/** An ERROR event's Status object → the error it stands for. */
function statusError(st: Record<string, unknown>): Error {
  const code = typeof st.code === "number" ? st.code : 0;
  const message = typeof st.message === "string" ? st.message : JSON.stringify(st).slice(0, 200);
  if (code === 410) return new Expired(message);
  return new KubeApiError(
    code,
    typeof st.reason === "string" ? st.reason : undefined,
    `watch ERROR ${code}: ${message}`,
  );
}

function isExpired(e: unknown): boolean {
  return e instanceof Expired || (e instanceof KubeApiError && e.status === 410);
}

function isTooLarge(e: unknown): boolean {
  return e instanceof KubeApiError && /too large resource version/i.test(e.message);
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
