/**
 * Subscribe to one vLLM engine's KV events over ZeroMQ (vLLM `--kv-events-config`; the wire
 * format is in vllm-decode.ts) and hand RouterEvents to `onEvents`, in order, in batches.
 *
 * The receive worker (recv-worker.ts) owns the sockets, orders batches by ZMQ seq and
 * replays gaps from the engine's ROUTER socket when `replayEndpoint` is given; this side
 * decodes payloads (vllm-decode.ts) and numbers the events.
 *
 * Event ids. vLLM numbers *batches* (seq, +1 per batch) and a batch holds any number of events,
 * while the router's recovery cursor (src/router/recovery) treats ids as dense per event: two
 * events sharing a seq would make the second "stale". So, like Dynamo's newer worker-side publisher
 * (+1 per accepted event, one publisher per dp rank), ids here are a dense counter per subscriber,
 * starting at 0, advanced in seq order — derived from seq in the sense that id order is seq order
 * and every seq gap the replay could not fill shows up as an id gap of the same size (a lost batch
 * counts as one id; a payload that fails to decode, too). An engine restart (seq went back) yields
 * a synthetic Cleared before the new process's first events: its cache is empty. Ids restart at 0
 * with a new subscriber.
 */
import type { Logger } from "../../../core/logger.ts";
import type { RouterEvent } from "../../../core/events.ts";
import type { BatchBlockHasher } from "../../../core/block-hash.ts";
import type { DpRank, EventId, WorkerId } from "../../../core/ids.ts";
import { libzmqPath } from "./libzmq.ts";
import {
  decodeVllmBatch,
  newVllmDecodeCounters,
  VllmDecodeError,
  type VllmDecodeCounters,
} from "./vllm-decode.ts";
import {
  CONTROL_INFLIGHT,
  CONTROL_STOP,
  CONTROL_WORDS,
  FLAG_RESTART,
  type WorkerBatch,
  type WorkerCounters,
  type WorkerStart,
  type WorkerToMain,
} from "./worker-protocol.ts";
import { defaultRecvWorkerUrl } from "./worker-url.ts";

export interface VllmKvSubscriberOptions {
  /** The engine's PUB endpoint, e.g. "tcp://10.0.0.5:5557" (the subscriber connects). */
  readonly endpoint: string;
  /** The engine's ROUTER replay endpoint; without it gaps are only counted. */
  readonly replayEndpoint?: string;
  readonly workerId: WorkerId;
  /** The worker's KV block size. */
  readonly blockSize: number;
  /** Rank used when a batch carries none (default 0). */
  readonly dpRank?: DpRank;
  /** Subscription prefix (vLLM's `topic`, default ""). */
  readonly topic?: string;
  /** Called with every decoded event, in id order; never with an empty array. */
  readonly onEvents: (events: RouterEvent[]) => void;
  readonly log?: Pick<Logger, "info" | "warn">;
  /** tokens_hash hasher (default: portable TypeScript; src/runtime/bun.ts passes the router's own). */
  readonly hasher?: BatchBlockHasher;
  readonly libzmqPath?: string;
  /** Give up starting after this long (default 5000 ms). */
  readonly startTimeoutMs?: number;
  /** Stop latency bound: the worker's receive timeout (default 100 ms). */
  readonly pollMs?: number;
  /** Wait this long for each replay answer message (default 2000 ms). */
  readonly replayTimeoutMs?: number;
  /** Messages per hand-off from the worker (default 512). */
  readonly maxBatch?: number;
  /**
   * Largest message taken from the publisher (default 64 MiB, ZMQ_MAXMSGSIZE); a longer one
   * ends that session, and a new one is subscribed.
   */
  readonly maxMessageBytes?: number;
  /** Disconnected this long with no reconnect attempt from libzmq: subscribe again (default 2000 ms). */
  readonly deadSessionMs?: number;
  /**
   * The receive worker's script (recv-worker.ts, or its bundled form). Default: found by
   * worker-url.ts, next to this file from source or embedded in a compiled binary.
   */
  readonly recvWorkerUrl?: string | URL;
}

export interface VllmKvSubscriberStats extends WorkerCounters {
  /** Batches decoded (live and replayed). */
  readonly batches: number;
  /** RouterEvents delivered (synthetic restart Cleared events included). */
  readonly events: number;
  /** Payloads that were not a readable KVEventBatch. */
  readonly decodeErrors: number;
  /** Worker → main hand-offs. */
  readonly handoffs: number;
  /** The id the next event will get. */
  readonly nextEventId: EventId;
  readonly decode: Readonly<VllmDecodeCounters>;
}

export interface VllmKvSubscriber {
  /** Stop the worker, close the sockets; resolves when it is gone. Idempotent. */
  stop(): Promise<void>;
  stats(): VllmKvSubscriberStats;
  /** The receive worker runs (started, not stopped, no fatal error). */
  running(): boolean;
  /** The live socket's session as libzmq's monitor last told it, and how often it was subscribed again. */
  session(): {
    readonly state: "connecting" | "connected" | "disconnected";
    readonly resubscribes: number;
  };
  readonly libzmqVersion: string;
}

/**
 * maxMessageBytes: 64 MiB is far past a vLLM step's batch (a step storing 128k tokens at
 * block size 16 is ~1 MB of msgpack) and bounds what one frame can make the router allocate.
 */
const DEFAULTS = {
  startTimeoutMs: 5_000,
  pollMs: 100,
  replayTimeoutMs: 2_000,
  maxBatch: 512,
  maxInflight: 8,
  rcvHwm: 100_000,
  maxMessageBytes: 64 * 1024 * 1024,
  deadSessionMs: 2_000,
};

/** Log at most one decode error per this many, so a broken engine cannot flood the log. */
const DECODE_ERROR_LOG_EVERY = 1000;

export async function startVllmKvSubscriber(
  opts: VllmKvSubscriberOptions,
): Promise<VllmKvSubscriber> {
  if (!(opts.blockSize > 0)) throw new Error(`blockSize must be > 0, got ${opts.blockSize}`);
  const control = new Int32Array(new SharedArrayBuffer(CONTROL_WORDS * 4));
  const worker = new Worker(String(opts.recvWorkerUrl ?? defaultRecvWorkerUrl()));
  const decoder = new BatchDecoder(opts);
  // Listening before the start message, so no message of the worker is missed.
  const link = listen(worker, control, decoder, opts);
  const start = startMessage(opts, control);
  worker.postMessage(start);

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    Atomics.store(control, CONTROL_STOP, 1);
    Atomics.notify(control, CONTROL_INFLIGHT);
    await Promise.race([link.workerGone, Bun.sleep(start.pollMs + start.replayTimeoutMs + 1_000)]);
    worker.terminate();
  };

  const version = await readyWithin(link, opts, stop);
  opts.log?.info("subscribed to vLLM KV events", {
    endpoint: opts.endpoint,
    replay: opts.replayEndpoint ?? null,
    worker_id: String(opts.workerId),
    libzmq: version,
  });

  return {
    libzmqVersion: version,
    stop,
    running: () => !stopped && !link.gone,
    session: () => link.session,
    stats: () => ({ ...link.counters, ...decoder.stats() }),
  };
}

/**
 * The worker's batches turned into RouterEvents with dense ids, in the order they arrive
 * (seq order: the worker orders them), and handed to `onEvents`.
 */
class BatchDecoder {
  readonly #opts: VllmKvSubscriberOptions;
  readonly #decode = newVllmDecodeCounters();
  #nextId = 0n;
  #batches = 0;
  #events = 0;
  #decodeErrors = 0;
  #handoffs = 0;
  #lastRank: DpRank;

  constructor(opts: VllmKvSubscriberOptions) {
    this.#opts = opts;
    this.#lastRank = opts.dpRank ?? 0;
  }

  handle(b: WorkerBatch): void {
    const opts = this.#opts;
    this.#handoffs++;
    const out: RouterEvent[] = [];
    for (let i = 0; i < b.count; i++) {
      this.#batches++;
      if ((b.flags[i]! & FLAG_RESTART) !== 0) {
        opts.log?.warn("vLLM KV publisher restarted (seq went back): clearing its blocks", {
          endpoint: opts.endpoint,
          seq: b.seqs[i],
        });
        out.push({
          workerId: opts.workerId,
          event: { eventId: this.#nextId++, dpRank: this.#lastRank, data: { type: "cleared" } },
        });
      }
      const lost = b.lost[i]!;
      if (lost > 0) {
        opts.log?.warn("vLLM KV batches lost (not replayable)", {
          endpoint: opts.endpoint,
          lost,
          before_seq: b.seqs[i],
        });
        this.#nextId += BigInt(lost);
      }
      this.#decodeOne(b.bytes.subarray(b.offsets[i]!, b.offsets[i + 1]!), b.seqs[i], out);
    }
    this.#events += out.length;
    if (out.length > 0) {
      try {
        opts.onEvents(out);
      } catch (e) {
        opts.log?.warn(`KV event handler threw: ${(e as Error).message}`, {
          endpoint: opts.endpoint,
        });
      }
    }
  }

  /** One payload's events appended to `out`; an undecodable one is an id gap, as a lost batch is. */
  #decodeOne(payload: Uint8Array, seq: number | undefined, out: RouterEvent[]): void {
    const opts = this.#opts;
    try {
      const d = decodeVllmBatch(
        payload,
        {
          workerId: opts.workerId,
          blockSize: opts.blockSize,
          dpRank: opts.dpRank,
          firstEventId: this.#nextId,
          hasher: opts.hasher,
        },
        this.#decode,
      );
      this.#lastRank = d.dpRank;
      this.#nextId += BigInt(d.events.length);
      for (const e of d.events) out.push(e);
    } catch (e) {
      if (!(e instanceof VllmDecodeError)) throw e;
      if (this.#decodeErrors++ % DECODE_ERROR_LOG_EVERY === 0) {
        opts.log?.warn(`undecodable vLLM KV batch: ${e.message}`, {
          endpoint: opts.endpoint,
          seq,
          errors: this.#decodeErrors,
        });
      }
      this.#nextId += 1n;
    }
  }

  stats(): Omit<VllmKvSubscriberStats, keyof WorkerCounters> {
    return {
      batches: this.#batches,
      events: this.#events,
      decodeErrors: this.#decodeErrors,
      handoffs: this.#handoffs,
      nextEventId: this.#nextId,
      decode: { ...this.#decode },
    };
  }
}

/** What the main side knows of its receive worker, kept up to date by the worker's messages. */
interface WorkerLink {
  counters: WorkerCounters;
  session: ReturnType<VllmKvSubscriber["session"]>;
  /** The worker stopped, failed or reported a fatal error. */
  gone: boolean;
  readonly workerGone: Promise<void>;
  /** The worker's libzmq version once its sockets are up; rejected by a fatal error before. */
  readonly whenReady: Promise<string>;
  /** Set once ready (or given up on): later failures no longer concern the start. */
  started: { resolve: (v: string) => void; reject: (e: Error) => void } | undefined;
}

/** The worker's messages handled: batches decoded (then the in-flight slot given back), readiness, logs, session, end. */
function listen(
  worker: Worker,
  control: Int32Array,
  decoder: BatchDecoder,
  opts: VllmKvSubscriberOptions,
): WorkerLink {
  let resolveWorkerGone!: () => void;
  let started: WorkerLink["started"];
  const whenReady = new Promise<string>((resolve, reject) => (started = { resolve, reject }));
  const link: WorkerLink = {
    counters: {
      live: 0,
      replayed: 0,
      gaps: 0,
      lostBatches: 0,
      restarts: 0,
      replayRequests: 0,
      replayFailures: 0,
      lastSeq: -1,
      malformedFrames: 0,
    },
    session: { state: "connecting", resubscribes: 0 },
    gone: false,
    workerGone: new Promise<void>((r) => (resolveWorkerGone = r)),
    whenReady,
    started,
  };
  const resolveStopped = () => {
    link.gone = true;
    resolveWorkerGone();
  };
  worker.onmessage = (e: MessageEvent<WorkerToMain>) => {
    const m = e.data;
    switch (m.type) {
      case "batch":
        try {
          link.counters = m.counters;
          decoder.handle(m);
        } finally {
          Atomics.sub(control, CONTROL_INFLIGHT, 1);
          Atomics.notify(control, CONTROL_INFLIGHT);
        }
        return;
      case "ready":
        link.started?.resolve(m.version);
        return;
      case "fatal":
        link.started?.reject(new Error(m.message));
        opts.log?.warn(`vLLM KV subscriber stopped: ${m.message}`, { endpoint: opts.endpoint });
        resolveStopped();
        return;
      case "log":
        opts.log?.[m.level](m.message, { endpoint: opts.endpoint });
        return;
      case "session":
        link.session = { state: m.state, resubscribes: m.resubscribes };
        return;
      case "stopped":
        link.counters = m.counters;
        resolveStopped();
        return;
    }
  };
  worker.onerror = (e) => {
    link.started?.reject(new Error(`vLLM KV receive worker failed: ${e.message}`));
    opts.log?.warn(`vLLM KV receive worker failed: ${e.message}`, { endpoint: opts.endpoint });
    resolveStopped();
  };
  return link;
}

/** The receive worker's start message: the sockets' settings, defaults filled in. */
function startMessage(opts: VllmKvSubscriberOptions, control: Int32Array): WorkerStart {
  return {
    type: "start",
    endpoint: opts.endpoint,
    replayEndpoint: opts.replayEndpoint,
    topic: opts.topic ?? "",
    libzmqPath: opts.libzmqPath ?? libzmqPath(),
    pollMs: opts.pollMs ?? DEFAULTS.pollMs,
    replayTimeoutMs: opts.replayTimeoutMs ?? DEFAULTS.replayTimeoutMs,
    maxBatch: opts.maxBatch ?? DEFAULTS.maxBatch,
    maxInflight: DEFAULTS.maxInflight,
    rcvHwm: DEFAULTS.rcvHwm,
    maxMessageBytes: opts.maxMessageBytes ?? DEFAULTS.maxMessageBytes,
    deadSessionMs: opts.deadSessionMs ?? DEFAULTS.deadSessionMs,
    control: control.buffer as SharedArrayBuffer,
  };
}

/** The worker's libzmq version once it is ready, within the start deadline; else stopped and the reason thrown. */
async function readyWithin(
  link: WorkerLink,
  opts: VllmKvSubscriberOptions,
  stop: () => Promise<void>,
): Promise<string> {
  const startTimeoutMs = opts.startTimeoutMs ?? DEFAULTS.startTimeoutMs;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const version = await Promise.race([
      link.whenReady,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new Error(
                `vLLM KV subscriber for ${opts.endpoint} did not start within ${startTimeoutMs} ms`,
              ),
            ),
          startTimeoutMs,
        );
      }),
    ]);
    link.started = undefined;
    return version;
  } catch (e) {
    await stop();
    throw e;
  } finally {
    clearTimeout(timer);
  }
}
