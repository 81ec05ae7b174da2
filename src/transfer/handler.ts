/**
 * BlockTransferHandler (as Dynamo KVBM's): executes BlockTransferRequests between the device, host
 * and disk pools of one worker rank.
 *
 * - Five directions: device->host, device->disk, host->device, host->disk, disk->device.
 *   Anything else is "Invalid transfer type."; a missing pool is "... pool not initialized".
 * - Sharded mode (default): requests above the max batch size are split and the batches run
 *   concurrently, at most MAX_JOBS_IN_FLIGHT native jobs at a time across all requests
 *   (job-slots.ts: the library's handle table is finite); the first failure fails the
 *   request, once the batches already running have ended (batches not started are skipped).
 * - Replicated mode (a BlockBroadcaster is given): no batching, since every rank must take
 *   part in the same collectives in the same order. Device->device stays local on every rank
 *   (and is then refused like in sharded mode); rank 0 performs the copy; when the
 *   destination is the device pool, every rank then receives rank 0's blocks by broadcast;
 *   a non-zero rank with nothing to receive does nothing.
 * - handle(): a leader message. A connector part is scheduled first and marked complete with
 *   the result; the message is acknowledged once the transfer ran, whether it failed or not.
 *
 * It never touches memory itself: pools and the broadcaster do.
 */
import { DEFAULT_MAX_TRANSFER_BATCH_SIZE, splitIntoBatches } from "./batches.ts";
import { TransferError } from "./errors.ts";
import { JobSlots } from "./job-slots.ts";
import { parseWireRequest } from "./request.ts";
import type {
  BlockBroadcaster,
  BlockTransferRequest,
  PoolKind,
  TransferMessage,
  TransferMode,
  TransferPool,
  TransferSchedulerClient,
  TransferSummary,
} from "./types.ts";

export interface BlockTransferHandlerOptions {
  readonly device?: TransferPool;
  readonly host?: TransferPool;
  readonly disk?: TransferPool;
  /** Pairs per batch (default 16; see maxTransferBatchSize for the env override). */
  readonly maxBatchSize?: number;
  /** Present: replicated mode with this rank's group. Absent: sharded mode. */
  readonly replication?: BlockBroadcaster;
  /** Required for requests with a connector part. */
  readonly scheduler?: TransferSchedulerClient;
  /** Native jobs in flight at most (default MAX_JOBS_IN_FLIGHT). */
  readonly maxJobsInFlight?: number;
}

const ALLOWED: ReadonlySet<string> = new Set([
  "device>host",
  "device>disk",
  "host>device",
  "host>disk",
  "disk>device",
]);

export function isAllowedDirection(from: PoolKind, to: PoolKind): boolean {
  return ALLOWED.has(`${from}>${to}`);
}

/** (from, to) tuples as flat uint32 pairs; refuses anything that is not a uint32 index. */
export function toPairs(blocks: readonly (readonly [number, number])[]): Uint32Array {
  const pairs = new Uint32Array(2 * blocks.length);
  for (let i = 0; i < blocks.length; i++) {
    const b = blocks[i]!;
    for (let k = 0; k < 2; k++) {
      const v = b[k];
      if (!Number.isInteger(v) || v! < 0 || v! > 0xffff_ffff) {
        throw new TransferError(
          "invalid-argument",
          `blocks[${i}][${k}] is not a block index: ${String(v)}`,
        );
      }
      pairs[2 * i + k] = v!;
    }
  }
  return pairs;
}

export class BlockTransferHandler {
  readonly #pools: Readonly<Record<PoolKind, TransferPool | undefined>>;
  readonly #maxBatch: number;
  readonly #replication: BlockBroadcaster | undefined;
  readonly #scheduler: TransferSchedulerClient | undefined;
  readonly #jobs: JobSlots;

  constructor(opts: BlockTransferHandlerOptions) {
    this.#pools = { device: opts.device, host: opts.host, disk: opts.disk };
    this.#maxBatch = opts.maxBatchSize ?? DEFAULT_MAX_TRANSFER_BATCH_SIZE;
    this.#jobs = new JobSlots(opts.maxJobsInFlight);
    if (!Number.isInteger(this.#maxBatch) || this.#maxBatch < 1) {
      throw new TransferError(
        "invalid-argument",
        `max batch size must be a positive integer, got ${this.#maxBatch}`,
      );
    }
    const r = opts.replication;
    if (
      r &&
      !(
        Number.isInteger(r.rank) &&
        Number.isInteger(r.worldSize) &&
        r.worldSize > 0 &&
        r.rank >= 0 &&
        r.rank < r.worldSize
      )
    ) {
      throw new TransferError(
        "invalid-argument",
        `replication invariant violated: 0 <= rank < world size; got rank=${r.rank}, world size=${r.worldSize}`,
      );
    }
    this.#replication = r;
    this.#scheduler = opts.scheduler;
  }

  get transferMode(): TransferMode {
    return this.#replication ? "replicated" : "sharded";
  }

  get maxBatchSize(): number {
    return this.#maxBatch;
  }

  /** Executes with batching (sharded) or sequentially (replicated). */
  async executeTransfer(request: BlockTransferRequest): Promise<TransferSummary> {
    const pairs = toPairs(request.blocks);
    const blocks = pairs.length >>> 1;
    if (this.#replication) {
      await this.#replicated(request.fromPool, request.toPool, pairs, this.#replication);
      return { blocks, batches: 1, mode: "replicated" };
    }
    const batches = splitIntoBatches(pairs, this.#maxBatch);
    if (batches.length === 1)
      await this.#jobs.run(() => this.#sharded(request.fromPool, request.toPool, pairs));
    else await this.#shardedBatches(request.fromPool, request.toPool, batches);
    return { blocks, batches: batches.length, mode: "sharded" };
  }

  /** Executes without batching (one call per request). */
  async executeTransferDirect(request: BlockTransferRequest): Promise<void> {
    const pairs = toPairs(request.blocks);
    if (this.#replication)
      await this.#replicated(request.fromPool, request.toPool, pairs, this.#replication);
    else await this.#sharded(request.fromPool, request.toPool, pairs);
  }

  /** One leader message (seed: `impl Handler for BlockTransferHandler`). */
  async handle(message: TransferMessage): Promise<void> {
    if (message.data.length !== 1) {
      throw new TransferError(
        "invalid-argument",
        "Block transfer request must have exactly one data element",
      );
    }
    const request = parseWireRequest(message.data[0]!);
    let failure: unknown;
    let ran = false;
    try {
      if (request.connectorReq) {
        if (!this.#scheduler)
          throw new TransferError(
            "invalid-argument",
            "scheduler client is required for a connector request",
          );
        const scheduled = await this.#scheduler.scheduleTransfer(request.connectorReq);
        ran = true;
        try {
          // Cancellation is not supported (the seed asserts Execute); report it as the result.
          if (scheduled.decision !== "execute") {
            throw new TransferError(
              "unsupported",
              `scheduler decided "${scheduled.decision}"; only "execute" is supported`,
            );
          }
          await this.executeTransfer(request);
          await scheduled.markComplete({ ok: true });
        } catch (e) {
          await scheduled.markComplete({
            ok: false,
            error: e instanceof Error ? e : new Error(String(e)),
          });
          throw e;
        }
      } else {
        ran = true;
        await this.executeTransfer(request);
      }
    } catch (e) {
      failure = e;
    }
    // The seed acknowledges once the transfer ran, failed or not; failures before that
    // (no scheduler, scheduling failed) propagate unacknowledged, as its `?` does.
    if (ran) await message.ack();
    if (failure !== undefined) throw failure;
  }

  #pool(kind: PoolKind, role: "Source" | "Target"): TransferPool {
    const pool = this.#pools[kind];
    if (!pool)
      throw new TransferError(
        "pool-not-initialized",
        `${role} pool manager not initialized (${kind} pool)`,
      );
    return pool;
  }

  async #shardedBatches(
    from: PoolKind,
    to: PoolKind,
    batches: readonly Uint32Array[],
  ): Promise<void> {
    let failure: { error: unknown } | undefined;
    await Promise.all(
      batches.map((b) =>
        this.#jobs.run(async () => {
          if (failure) return; // the request has failed: start nothing more
          try {
            await this.#sharded(from, to, b);
          } catch (error) {
            failure ??= { error };
          }
        }),
      ),
    );
    if (failure) throw failure.error;
  }

  async #sharded(from: PoolKind, to: PoolKind, pairs: Uint32Array): Promise<void> {
    if (!isAllowedDirection(from, to))
      throw new TransferError("invalid-direction", `Invalid transfer type: ${from} -> ${to}.`);
    const src = this.#pool(from, "Source");
    const dst = this.#pool(to, "Target");
    await src.copyTo(dst, pairs);
  }

  async #replicated(
    from: PoolKind,
    to: PoolKind,
    pairs: Uint32Array,
    group: BlockBroadcaster,
  ): Promise<void> {
    if (from === "device" && to === "device") return this.#sharded(from, to, pairs); // local on every rank
    const useBcast = to === "device";
    const isRank0 = group.rank === 0;
    if (!isRank0 && !useBcast) return; // nothing to receive
    if (isRank0) await this.#sharded(from, to, pairs);
    if (useBcast) {
      const device = this.#pools.device;
      if (!device)
        throw new TransferError("pool-not-initialized", "Device blocks required for broadcast");
      const targets = new Uint32Array(pairs.length >>> 1);
      for (let i = 0; i < targets.length; i++) targets[i] = pairs[2 * i + 1]!;
      await group.broadcast(device, targets);
    }
  }
}
