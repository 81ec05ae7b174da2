/**
 * A hung Redis (SIGSTOP, a stalled network, an overloaded server) must cost a request a
 * short bounded wait, once, and then nothing until Redis answers again. This wraps any
 * RedisConnection (RESP or Upstash REST):
 *   up    every command gets `timeoutMs` (default 50 ms); one that times out marks the
 *         connection down (errors that come back in time — a refused connection, a Redis
 *         error reply — are passed on and change nothing: they cost no wait);
 *   down  commands fail at once (RedisUnavailableError) while one probe at a time sends
 *         PING with a longer deadline (`probeTimeoutMs`), every `probeIntervalMs` (25 ms)
 *         doubling to 1 s; the first PING that answers brings the connection back up.
 * So during a hang each caller waits at most `timeoutMs` (those already waiting when it
 * trips), and the store/sync layers above degrade as they do for a Redis that is away.
 * The timer is injected so tests drive it; the default is setTimeout.
 */
import type { RedisConnection } from "./redis-connection.ts";

/** The wait a request may pay for a hung Redis before the store is treated as down. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 50;
/** A probe PING may take this long: generous, it is off the request path. */
export const DEFAULT_PROBE_TIMEOUT_MS = 1_000;
/** First probe soon: a false alarm (a slow answer, not a hang) then costs affinity for ~25 ms only. */
const DEFAULT_PROBE_INTERVAL_MS = 25;
const MAX_PROBE_INTERVAL_MS = 1_000;

/** A command that did not answer within its deadline. */
export class RedisTimeoutError extends Error {
  override readonly name = "RedisTimeoutError";
}

/** Refused without trying: the connection is marked down until a probe answers. */
export class RedisUnavailableError extends Error {
  override readonly name = "RedisUnavailableError";
}

export interface HangGuardOptions {
  readonly timeoutMs?: number;
  readonly probeTimeoutMs?: number;
  readonly probeIntervalMs?: number;
  /** Run `fn` after `ms` (default setTimeout). */
  readonly after?: (ms: number, fn: () => void) => void;
  /** Told when the connection goes down (a timeout) and comes back (a probe answered). */
  readonly onChange?: (up: boolean) => void;
}

export interface HangGuardStats {
  readonly up: boolean;
  /** Commands that hit the timeout. */
  readonly timeouts: number;
  /** Commands refused at once while down. */
  readonly refused: number;
  /** Times the connection went down. */
  readonly trips: number;
}

/**
 * Reject with RedisTimeoutError if `p` takes longer than `ms`. When the timer fires late
 * (this process's event loop was busy, so a reply may be sitting unread in the socket) it
 * is re-armed once for `ms`: a busy router must not take its own stall for a hung Redis.
 */
export function withDeadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const armedAt = performance.now();
  const timeout = new Promise<never>((_, reject) => {
    const fire = (rearmed: boolean) => {
      const late = performance.now() - armedAt - ms;
      if (!rearmed && late > ms / 2) {
        timer = setTimeout(() => fire(true), ms);
        return;
      }
      reject(new RedisTimeoutError(`${what} timed out after ${ms} ms`));
    };
    timer = setTimeout(() => fire(false), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** A timeout from us, from AbortSignal.timeout (fetch), or Bun's own. */
export function isTimeout(e: unknown): boolean {
  const name = (e as { name?: unknown } | null)?.name;
  return e instanceof RedisTimeoutError || name === "TimeoutError" || name === "RedisTimeoutError";
}

export class HangGuardConnection implements RedisConnection {
  readonly kind: RedisConnection["kind"];
  readonly #inner: RedisConnection;
  readonly #timeoutMs: number;
  readonly #probeTimeoutMs: number;
  readonly #probeIntervalMs: number;
  readonly #after: (ms: number, fn: () => void) => void;
  readonly #onChange: ((up: boolean) => void) | undefined;
  #up = true;
  #probeDelayMs: number;
  #probing = false;
  #closed = false;
  #timeouts = 0;
  #refused = 0;
  #trips = 0;

  constructor(inner: RedisConnection, opts: HangGuardOptions = {}) {
    this.kind = inner.kind;
    this.#inner = inner;
    this.#timeoutMs = opts.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    this.#probeTimeoutMs = opts.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
    this.#probeIntervalMs = opts.probeIntervalMs ?? DEFAULT_PROBE_INTERVAL_MS;
    this.#probeDelayMs = this.#probeIntervalMs;
    this.#after = opts.after ?? ((ms, fn) => void setTimeout(fn, ms));
    this.#onChange = opts.onChange;
  }

  get up(): boolean {
    return this.#up;
  }

  stats(): HangGuardStats {
    return { up: this.#up, timeouts: this.#timeouts, refused: this.#refused, trips: this.#trips };
  }

  eval(script: string, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    return this.#run(() => this.#inner.eval(script, keys, args), "redis EVAL");
  }

  evalsha(sha1: string, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    return this.#run(() => this.#inner.evalsha(sha1, keys, args), "redis EVALSHA");
  }

  command(args: readonly string[]): Promise<unknown> {
    return this.#run(() => this.#inner.command(args), `redis ${args[0] ?? ""}`);
  }

  close(): Promise<void> {
    this.#closed = true;
    return this.#inner.close();
  }

  #run(op: () => Promise<unknown>, what: string): Promise<unknown> {
    if (!this.#up) {
      this.#refused++;
      return Promise.reject(
        new RedisUnavailableError(
          `${what}: Redis did not answer in time; treated as down until it answers a probe`,
        ),
      );
    }
    let started: Promise<unknown>;
    try {
      started = op();
    } catch (e) {
      return Promise.reject(e);
    }
    return withDeadline(started, this.#timeoutMs, what).catch((e: unknown) => {
      if (isTimeout(e)) {
        this.#timeouts++;
        this.#trip();
      }
      throw e;
    });
  }

  #trip(): void {
    if (!this.#up) return;
    this.#up = false;
    this.#trips++;
    this.#probeDelayMs = this.#probeIntervalMs;
    this.#onChange?.(false);
    this.#scheduleProbe();
  }

  #scheduleProbe(): void {
    if (this.#probing || this.#closed) return;
    this.#probing = true;
    const delay = this.#probeDelayMs;
    this.#probeDelayMs = Math.min(MAX_PROBE_INTERVAL_MS, this.#probeDelayMs * 2);
    this.#after(delay, () => void this.#probe());
  }

  async #probe(): Promise<void> {
    if (this.#closed) return;
    let ok = false;
    try {
      await withDeadline(this.#inner.command(["PING"]), this.#probeTimeoutMs, "redis PING (probe)");
      ok = true;
    } catch {
      ok = false;
    }
    this.#probing = false;
    if (ok) {
      this.#up = true;
      this.#onChange?.(true);
    } else {
      this.#scheduleProbe();
    }
  }
}
