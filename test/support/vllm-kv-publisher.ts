/**
 * Drives test/support/vllm_kv_publisher.py (a stand-in for vLLM's ZmqEventPublisher) from
 * tests and benchmarks: start it, send JSON commands, read JSON replies, stop it by PID.
 */
import type { Subprocess } from "bun";
import { join } from "node:path";

/** Debian's python with python3-zmq / python3-msgpack (the first python3 on PATH may lack them). */
export const SYSTEM_PYTHON = "/usr/bin/python3";
export const PUBLISHER_SCRIPT = join(import.meta.dir, "vllm_kv_publisher.py");
export const PYTHON_ZMQ_PACKAGES = "libzmq5 python3-zmq python3-msgpack";

/** Why the publisher cannot run here, or undefined when it can. */
export function pythonZmqProblem(): string | undefined {
  let r;
  try {
    r = Bun.spawnSync({
      cmd: [SYSTEM_PYTHON, "-c", "import zmq, msgpack"],
      stdout: "ignore",
      stderr: "pipe",
    });
  } catch (e) {
    return `${SYSTEM_PYTHON} cannot run (${(e as Error).message})`;
  }
  if (r.exitCode === 0) return undefined;
  return (
    `${SYSTEM_PYTHON} cannot import zmq/msgpack (${r.stderr.toString().trim().split("\n").pop()}); ` +
    `install them with: apt-get install -y ${PYTHON_ZMQ_PACKAGES}`
  );
}

/** A KV event in the publisher's JSON form; hashes: number, "int:<decimal>" or "hex:<bytes>". */
export type JsonHash = number | string;
export type PublisherEvent =
  | {
      type: "BlockStored";
      block_hashes: JsonHash[];
      parent_block_hash: JsonHash | null;
      token_ids: number[];
      block_size: number;
      lora_id?: number | null;
      medium?: string | null;
      lora_name?: string | null;
      extra_keys?: unknown;
      group_idx?: number | null;
      kv_cache_spec_kind?: string | null;
    }
  | {
      type: "BlockRemoved";
      block_hashes: JsonHash[];
      medium?: string | null;
      group_idx?: number | null;
    }
  | { type: "AllBlocksCleared" };

/** One operation of the offloading engine (test/support/vllm_offload_events.py run_ops). */
export type TieredOp =
  | { op: "request"; req: string; tokens: number[] }
  | { op: "gpu_store"; req: string }
  | { op: "gpu_evict"; req: string; blocks: number[] }
  | {
      op: "offload" | "offload_evict";
      req: string;
      chunks: number[];
      medium?: "CPU" | "STORAGE";
      locality?: "LOCAL" | "REMOTE";
      ownership?: string;
      removal_expected?: boolean;
    }
  | { op: "cleared" };

export interface PublisherBatch {
  events: PublisherEvent[];
  dp_rank?: number | null;
  /** false: buffer for replay but do not send (a lost message). */
  send?: boolean;
}

export interface BenchReply {
  seconds: number;
  first_seq: number;
  last_seq: number;
  payload_bytes: number;
}

export class VllmPublisherProcess {
  private buf = "";
  private readonly lines: string[] = [];
  private waiter: (() => void) | undefined;
  private stderr = "";
  private queue: Promise<unknown> = Promise.resolve();

  /** The PUB endpoint to subscribe to, and the ROUTER replay endpoint. */
  pub = "";
  replay = "";

  private constructor(private readonly proc: Subprocess<"pipe", "pipe", "pipe">) {}

  get pid(): number {
    return this.proc.pid;
  }

  static async start(
    opts: { pubPort?: number; replayPort?: number; deadlineMs?: number } = {},
  ): Promise<VllmPublisherProcess> {
    const proc = Bun.spawn({
      cmd: [
        SYSTEM_PYTHON,
        PUBLISHER_SCRIPT,
        "--pub-port",
        String(opts.pubPort ?? 0),
        "--replay-port",
        String(opts.replayPort ?? 0),
      ],
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
    });
    const p = new VllmPublisherProcess(proc);
    p.pump();
    try {
      const hello = (await p.nextLine(opts.deadlineMs ?? 10_000)) as {
        pub: string;
        replay: string;
      };
      p.pub = hello.pub;
      p.replay = hello.replay;
      return p;
    } catch (e) {
      await p.stop();
      throw new Error(`publisher did not start: ${(e as Error).message}`);
    }
  }

  private pump(): void {
    const dec = new TextDecoder();
    void (async () => {
      for await (const chunk of this.proc.stdout) {
        this.buf += dec.decode(chunk, { stream: true });
        let i;
        while ((i = this.buf.indexOf("\n")) >= 0) {
          this.lines.push(this.buf.slice(0, i));
          this.buf = this.buf.slice(i + 1);
        }
        this.waiter?.();
      }
      this.waiter?.();
    })().catch(() => {});
    void (async () => {
      for await (const chunk of this.proc.stderr) this.stderr += dec.decode(chunk);
    })().catch(() => {});
  }

  private async nextLine(deadlineMs: number): Promise<unknown> {
    const end = performance.now() + deadlineMs;
    for (;;) {
      const line = this.lines.shift();
      if (line !== undefined) {
        const v = JSON.parse(line) as Record<string, unknown>;
        if ("warning" in v) continue;
        return v;
      }
      if (this.proc.exitCode !== null)
        throw new Error(`publisher exited (${this.proc.exitCode}): ${this.stderr}`);
      const left = end - performance.now();
      if (left <= 0)
        throw new Error(
          `no reply from the publisher within ${deadlineMs} ms; stderr: ${this.stderr}`,
        );
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 100));
        this.waiter = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.waiter = undefined;
    }
  }

  /** Send one command and wait for its reply (commands are serialized). */
  command<T = Record<string, unknown>>(
    cmd: Record<string, unknown>,
    deadlineMs = 30_000,
  ): Promise<T> {
    const run = async () => {
      this.proc.stdin.write(JSON.stringify(cmd) + "\n");
      await this.proc.stdin.flush();
      const reply = (await this.nextLine(deadlineMs)) as Record<string, unknown>;
      if ("error" in reply) throw new Error(`publisher: ${String(reply.error)}`);
      return reply as T;
    };
    const p = this.queue.then(run, run);
    this.queue = p.catch(() => {});
    return p;
  }

  async waitSubscriber(timeoutMs = 5_000): Promise<void> {
    const r = await this.command<{ subscribed: boolean }>(
      { cmd: "wait_subscriber", timeout_ms: timeoutMs },
      timeoutMs + 5_000,
    );
    if (!r.subscribed)
      throw new Error(`no subscriber reached the publisher within ${timeoutMs} ms`);
  }

  /** Wait until the subscription is gone; returns whether one is still present. */
  async waitUnsubscribed(timeoutMs = 5_000): Promise<boolean> {
    const r = await this.command<{ subscribed: boolean }>(
      { cmd: "wait_subscriber", subscribed: false, timeout_ms: timeoutMs },
      timeoutMs + 5_000,
    );
    return r.subscribed;
  }

  /** Publish batches; returns their seqs. */
  async publish(batches: PublisherBatch[], format: "array" | "map" = "array"): Promise<number[]> {
    return (await this.command<{ seqs: number[] }>({ cmd: "publish", format, batches })).seqs;
  }

  /** One message of `bytes` zero bytes of payload, outside the seq order (past a subscriber's message limit). */
  async publishOversized(bytes: number): Promise<void> {
    await this.command({ cmd: "publish_oversized", bytes });
  }

  /**
   * An engine with vLLM's OffloadingConnector (vllm_offload_events.py) publishes one batch per
   * list of ops; `engine` (re)creates it. Returns the seqs and every request's block hashes as
   * the router reads them.
   */
  async tiered(
    batches: { ops: TieredOp[]; dp_rank?: number | null }[],
    engine?: {
      block_size: number;
      blocks_per_chunk: number;
      self_describing: boolean;
      legacy?: boolean;
    },
  ): Promise<{ seqs: number[]; hashes: Record<string, bigint[]> }> {
    const r = await this.command<{ seqs: number[]; hashes: Record<string, string[]> }>({
      cmd: "tiered",
      engine,
      batches,
    });
    const hashes: Record<string, bigint[]> = {};
    for (const [name, hs] of Object.entries(r.hashes)) hashes[name] = hs.map(BigInt);
    return { seqs: r.seqs, hashes };
  }

  bench(o: {
    batches: number;
    eventsPerBatch: number;
    blocksPerEvent: number;
    blockSize: number;
    format?: "array" | "map";
  }): Promise<BenchReply> {
    return this.command<BenchReply>(
      {
        cmd: "bench",
        batches: o.batches,
        events_per_batch: o.eventsPerBatch,
        blocks_per_event: o.blocksPerEvent,
        block_size: o.blockSize,
        format: o.format ?? "array",
      },
      600_000,
    );
  }

  /** SIGTERM by PID, SIGKILL after a deadline; resolves when it exited. Never throws. */
  async stop(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    try {
      process.kill(this.proc.pid, "SIGTERM");
    } catch {
      return;
    }
    const exited = await Promise.race([
      this.proc.exited.then(() => true),
      Bun.sleep(3_000).then(() => false),
    ]);
    if (!exited) {
      try {
        process.kill(this.proc.pid, "SIGKILL");
      } catch {
        // already gone
      }
      await this.proc.exited;
    }
  }
}
