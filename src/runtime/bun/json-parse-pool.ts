/**
 * Large client bodies parsed off the event loop (Bun): one Worker (json-parse-worker.ts) that
 * decodes, parses and checks the prompt size of a body of OFF_LOOP_MIN_BYTES or more, so a
 * 13 MB prompt refused for its size costs the loop a hand-off, not a parse. The bytes travel
 * both ways by transfer (no copy). Jobs run one at a time in arrival order.
 *
 * Bounded: at most `maxHeldBytes` of bodies wait or run in the pool; beyond that, and for a
 * job not done within `timeoutMs`, the request fails with RouterError "unavailable" (503 +
 * Retry-After) naming the bound. A worker that dies fails its job and is replaced. The worker
 * is unref'd: it never keeps the process alive.
 */
import { existsSync } from "node:fs";
import { RouterError, type RouterErrorCode } from "../../core/errors.ts";
import type { OffLoopJsonParser } from "../../edge/request-json.ts";

export interface ParseJob {
  readonly id: number;
  readonly body: Uint8Array;
  readonly promptFields: readonly string[];
  readonly maxPromptChars: number | undefined;
}

export type ParseReply =
  | {
      readonly id: number;
      readonly ok: true;
      readonly body: Uint8Array;
      readonly json: Record<string, unknown>;
    }
  | {
      readonly id: number;
      readonly ok: false;
      readonly code: RouterErrorCode;
      readonly message: string;
      readonly param?: string;
    };

export const JSON_POOL_DEFAULTS = { maxHeldBytes: 128 * 1024 * 1024, timeoutMs: 10_000 } as const;

/** Compiled binary: the worker embedded at its path under the build root (see runtime/bun/zmq/worker-url.ts). */
const COMPILED_PATHS = [
  "runtime/bun/json-parse-worker.js",
  "src/runtime/bun/json-parse-worker.js",
  "json-parse-worker.js",
];

function workerUrl(metaUrl: string = import.meta.url): string | undefined {
  const beside = new URL("./json-parse-worker.ts", metaUrl);
  if (!decodeURIComponent(beside.pathname).includes("/$bunfs/")) return beside.href;
  const root = new URL(".", metaUrl);
  for (const rel of COMPILED_PATHS) {
    const candidate = new URL(rel, root);
    if (existsSync(decodeURIComponent(candidate.pathname))) return candidate.href;
  }
  return undefined;
}

interface Pending {
  readonly job: ParseJob;
  /** The body's size, kept: the view is detached once transferred. */
  readonly bytes: number;
  readonly resolve: (r: { body: Uint8Array; json: Record<string, unknown> }) => void;
  readonly reject: (e: Error) => void;
  readonly timer: ReturnType<typeof setTimeout>;
}

export class JsonParsePool {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private heldBytes = 0;
  private nextId = 1;

  constructor(
    private readonly url: string,
    private readonly o: { maxHeldBytes: number; timeoutMs: number } = JSON_POOL_DEFAULTS,
  ) {}

  private spawn(): Worker {
    const w = new Worker(this.url);
    w.unref();
    w.onmessage = (e: MessageEvent<ParseReply>) => {
      const r = e.data;
      const p = this.take(r.id);
      if (p === undefined) return;
      if (r.ok) p.resolve({ body: r.body, json: r.json });
      else p.reject(new RouterError(r.code, r.message, r.param));
    };
    w.onerror = (e) => {
      // Every job it held fails; the next job gets a new worker.
      this.worker = undefined;
      for (const id of [...this.pending.keys()])
        this.take(id)?.reject(new Error(`the JSON parse worker died: ${e.message}`));
    };
    return w;
  }

  private take(id: number): Pending | undefined {
    const p = this.pending.get(id);
    if (p === undefined) return undefined;
    this.pending.delete(id);
    clearTimeout(p.timer);
    this.heldBytes -= p.bytes;
    return p;
  }

  /** Bytes of bodies waiting or being parsed. */
  get held(): number {
    return this.heldBytes;
  }

  readonly parse: OffLoopJsonParser = (body, promptFields, maxPromptChars) => {
    if (this.heldBytes + body.length > this.o.maxHeldBytes) {
      return Promise.reject(
        new RouterError(
          "unavailable",
          `the router is busy reading large requests: ${this.heldBytes} bytes are waiting to be parsed (at most ${this.o.maxHeldBytes}); retry shortly`,
          undefined,
          1,
        ),
      );
    }
    this.worker ??= this.spawn();
    const worker = this.worker;
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      const bytes = body.length;
      const job: ParseJob = { id, body, promptFields, maxPromptChars };
      const timer = setTimeout(() => {
        this.take(id)?.reject(
          new RouterError(
            "unavailable",
            `a request body of ${bytes} bytes was not parsed within ${this.o.timeoutMs} ms; retry shortly`,
            undefined,
            1,
          ),
        );
      }, this.o.timeoutMs);
      this.pending.set(id, { job, bytes, resolve, reject, timer });
      this.heldBytes += bytes;
      try {
        worker.postMessage(job, [body.buffer as ArrayBuffer]);
      } catch {
        // A buffer that cannot be moved (shared or held by the runtime) goes as a copy.
        worker.postMessage(job);
      }
    });
  };

  close(): void {
    this.worker?.terminate();
    this.worker = undefined;
  }
}

/** The pool's parser, or undefined when this build has no embedded worker (bodies are then parsed in-thread). */
export function offLoopJsonParser(): { parse: OffLoopJsonParser; close(): void } | undefined {
  const url = workerUrl();
  if (url === undefined) return undefined;
  const pool = new JsonParsePool(url);
  return { parse: pool.parse, close: () => pool.close() };
}
