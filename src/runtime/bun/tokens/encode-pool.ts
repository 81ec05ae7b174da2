/**
 * Large encodes off the event loop (Bun): a small pool of Workers (encode-worker.ts), each
 * holding the model's pure encoder, so a first-sight 128k-token prompt (~15-50 ms of BPE)
 * does not stall every other request. `offloadLargeEncodes` wraps the in-thread
 * TokenizerLibrary: texts (or a request's batch of pieces) of at least `minChars` UTF-16
 * units go to the pool, smaller ones stay in-thread (a hop costs more than they do).
 *
 * Bounded: at most `maxQueuedChars` characters wait or run in the pool; beyond that, and for
 * a job not done within `timeoutMs`, the call fails with RouterError "unavailable" (HTTP 503
 * + Retry-After) naming the bound. A worker that dies fails its job and is replaced.
 * Workers are unref'd: they never keep the process alive. Bun only (the pure path for
 * Deno/workerd encodes in-thread).
 */
import { existsSync } from "node:fs";
import { RouterError } from "../../../core/errors.ts";
import type { TokenizerLibrary } from "../../../tokens/engine-tokenizer.ts";
import type { EncodeJob, WorkerInit, WorkerReply } from "../../../tokens/encode-protocol.ts";

export interface EncodePoolOptions {
  /** Workers (default: the cores less one, at least 1, at most 4). */
  workers?: number;
  /** Texts (or a batch of pieces) of at least this many UTF-16 units go to the pool (default 32 Ki ≈ 8k tokens). */
  minChars?: number;
  /** Characters waiting or being encoded in the pool at most; beyond: 503 (default 16 Mi ≈ 32 prompts of 128k tokens). */
  maxQueuedChars?: number;
  /** A pooled encode not done within this many ms fails with 503 (default 30 000). */
  timeoutMs?: number;
  /** Use the byte-level BPE where it qualifies, as the main thread does (default false: @huggingface/tokenizers). */
  byteLevelBpe?: boolean;
  /** The worker script (default: encode-worker.ts beside this file, or embedded in a compiled binary). */
  workerUrl?: string;
}

export const ENCODE_POOL_DEFAULTS = {
  minChars: 32 * 1024,
  maxQueuedChars: 16 * 1024 * 1024,
  timeoutMs: 30_000,
} as const;

export function defaultEncodeWorkers(): number {
  const cores = typeof navigator !== "undefined" ? navigator.hardwareConcurrency : 2;
  return Math.max(1, Math.min(4, cores - 1));
}

/** Compiled binary: the worker embedded at its path under the build root (see runtime/bun/zmq/worker-url.ts). */
const COMPILED_PATHS = [
  "runtime/bun/tokens/encode-worker.js",
  "src/runtime/bun/tokens/encode-worker.js",
  "encode-worker.js",
];

export function defaultEncodeWorkerUrl(metaUrl: string = import.meta.url): string {
  const beside = new URL("./encode-worker.ts", metaUrl);
  if (!decodeURIComponent(beside.pathname).includes("/$bunfs/")) return beside.href;
  const root = new URL(".", metaUrl);
  for (const rel of COMPILED_PATHS) {
    const candidate = new URL(rel, root);
    if (existsSync(decodeURIComponent(candidate.pathname))) return candidate.href;
  }
  throw new Error(
    "this binary has no embedded tokenizer encode worker: build it with `bun build --compile src/main.ts src/runtime/bun/zmq/recv-worker.ts src/runtime/bun/tokens/encode-worker.ts …`, or run with --tokenizer-workers 0",
  );
}

interface Pending {
  readonly job: EncodeJob;
  readonly chars: number;
  readonly resolve: (ids: Uint32Array[]) => void;
  readonly reject: (e: Error) => void;
  timer: ReturnType<typeof setTimeout> | undefined;
  settled: boolean;
}

interface Slot {
  worker: Worker;
  busy: Pending | undefined;
}

export interface EncodePoolStats {
  readonly workers: number;
  readonly queuedJobs: number;
  /** Characters waiting or being encoded. */
  readonly heldChars: number;
  readonly done: number;
  /** Refused because the pool held maxQueuedChars. */
  readonly refused: number;
  readonly timedOut: number;
}

export class EncodePool {
  private readonly slots: Slot[] = [];
  private readonly queue: Pending[] = [];
  private heldChars = 0;
  private nextId = 1;
  private closed = false;
  private counts = { done: 0, refused: 0, timedOut: 0 };
  private readonly maxQueuedChars: number;
  private readonly timeoutMs: number;
  private readonly url: string;
  /** Resolves when every worker has loaded the tokenizer (rejects with the first load error). */
  readonly ready: Promise<void>;

  constructor(
    private readonly dir: string,
    private readonly opts: EncodePoolOptions = {},
  ) {
    this.maxQueuedChars = opts.maxQueuedChars ?? ENCODE_POOL_DEFAULTS.maxQueuedChars;
    this.timeoutMs = opts.timeoutMs ?? ENCODE_POOL_DEFAULTS.timeoutMs;
    this.url = opts.workerUrl ?? defaultEncodeWorkerUrl();
    const n = opts.workers ?? defaultEncodeWorkers();
    if (!(Number.isInteger(n) && n >= 1))
      throw new Error(`encode pool: workers must be an integer >= 1 (got ${n})`);
    const loads: Promise<void>[] = [];
    for (let i = 0; i < n; i++) loads.push(this.spawn(i));
    this.ready = Promise.all(loads).then(() => undefined);
  }

  get size(): number {
    return this.slots.length;
  }

  stats(): EncodePoolStats {
    return {
      workers: this.slots.length,
      queuedJobs: this.queue.length,
      heldChars: this.heldChars,
      ...this.counts,
    };
  }

  /** Encode `texts` in a worker; rejects with RouterError "unavailable" when the pool is full or the deadline passes. */
  run(texts: readonly string[], addSpecialTokens: boolean): Promise<Uint32Array[]> {
    if (this.closed) return Promise.reject(new Error("encode pool: closed"));
    let chars = 0;
    for (const t of texts) chars += t.length;
    if (this.heldChars + chars > this.maxQueuedChars) {
      this.counts.refused++;
      return Promise.reject(
        new RouterError(
          "unavailable",
          `the tokenizer is busy: ${this.heldChars} characters of prompts are waiting to be tokenized (at most ${this.maxQueuedChars}); retry shortly`,
          undefined,
          1,
        ),
      );
    }
    return new Promise((resolve, reject) => {
      const p: Pending = {
        job: { type: "encode", id: this.nextId++, texts, addSpecialTokens },
        chars,
        resolve,
        reject,
        timer: undefined,
        settled: false,
      };
      this.heldChars += chars;
      p.timer = setTimeout(() => {
        this.counts.timedOut++;
        const at = this.queue.indexOf(p);
        if (at >= 0) this.queue.splice(at, 1);
        this.settle(
          p,
          new RouterError(
            "unavailable",
            `the tokenizer did not finish a prompt of ${chars} characters within ${this.timeoutMs} ms; retry shortly`,
            undefined,
            1,
          ),
        );
      }, this.timeoutMs);
      this.queue.push(p);
      this.dispatch();
    });
  }

  /** Terminate the workers; pending calls fail. */
  close(): void {
    this.closed = true;
    for (const p of this.queue.splice(0)) this.settle(p, new Error("encode pool: closed"));
    for (const s of this.slots) {
      if (s.busy) this.settle(s.busy, new Error("encode pool: closed"));
      s.worker.terminate();
    }
  }

  private settle(p: Pending, result: Uint32Array[] | Error): void {
    if (p.settled) return;
    p.settled = true;
    clearTimeout(p.timer);
    this.heldChars -= p.chars;
    if (result instanceof Error) p.reject(result);
    else {
      this.counts.done++;
      p.resolve(result);
    }
  }

  private dispatch(): void {
    for (const s of this.slots) {
      if (s.busy !== undefined) continue;
      let p = this.queue.shift();
      while (p !== undefined && p.settled) p = this.queue.shift();
      if (p === undefined) return;
      s.busy = p;
      s.worker.postMessage(p.job);
    }
  }

  private spawn(index: number): Promise<void> {
    const worker = new Worker(this.url);
    worker.unref();
    const slot: Slot = { worker, busy: undefined };
    this.slots[index] = slot;
    return new Promise((resolve, reject) => {
      worker.onmessage = (e: MessageEvent<WorkerReply>) => {
        const m = e.data;
        if (m.type === "ready") resolve();
        else if (m.type === "init-failed")
          reject(
            new Error(`${this.dir}: an encode worker could not load the tokenizer (${m.message})`),
          );
        else {
          const p = slot.busy;
          slot.busy = undefined;
          if (p !== undefined && p.job.id === m.id) {
            this.settle(p, m.type === "done" ? m.ids : new Error(`tokenizer worker: ${m.message}`));
          }
          this.dispatch();
        }
      };
      worker.onerror = (e: ErrorEvent) => {
        // A crashed worker: fail its job, replace it (it reloads the tokenizer), carry on.
        reject(new Error(`${this.dir}: an encode worker failed (${e.message})`));
        const p = slot.busy;
        slot.busy = undefined;
        if (p !== undefined) this.settle(p, new Error(`tokenizer worker failed: ${e.message}`));
        worker.terminate();
        if (!this.closed) {
          this.spawn(index).catch(() => undefined);
          this.dispatch();
        }
      };
      const init: WorkerInit = {
        type: "init",
        dir: this.dir,
        byteLevelBpe: this.opts.byteLevelBpe === true,
      };
      worker.postMessage(init);
    });
  }
}

/**
 * `inner` with encodes of at least `minChars` characters (one text, or the pieces of one
 * request together) run in `pool`; smaller ones stay in this thread.
 */
export function offloadLargeEncodes(
  inner: TokenizerLibrary,
  pool: EncodePool,
  minChars: number = ENCODE_POOL_DEFAULTS.minChars,
): TokenizerLibrary {
  return {
    implementation: `${inner.implementation}; encodes of ${minChars}+ characters in ${pool.size} worker(s)`,
    encode: async (text, addSpecialTokens) =>
      text.length >= minChars
        ? (await pool.run([text], addSpecialTokens))[0]!
        : await inner.encode(text, addSpecialTokens),
    encodeMany: async (texts) => {
      let chars = 0;
      for (const t of texts) chars += t.length;
      if (chars >= minChars) return await pool.run(texts, false);
      return inner.encodeMany !== undefined
        ? await inner.encodeMany(texts)
        : await Promise.all(texts.map((t) => inner.encode(t, false)));
    },
    decode: (ids) => inner.decode(ids),
  };
}
