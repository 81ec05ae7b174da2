/**
 * Vocabulary of the block transfer stack (modelled on Dynamo KVBM's block transfers): pools,
 * layouts, requests, and the two narrow interfaces the handler drives (a pool that copies to
 * another pool, and a group that broadcasts device blocks). Native implementations are pools.ts and
 * group.ts; tests substitute small fakes.
 */

/** BlockTransferPool. Host is pinned host memory on the GPU path. */
export type PoolKind = "device" | "host" | "disk";
export const POOL_KINDS: readonly PoolKind[] = ["device", "host", "disk"];

/** LayoutType: one region per pool, or one per layer (block-first or outer-first). */
export type LayoutKind = "fully-contiguous" | "layer-separate" | "layer-separate-outer";
export const LAYOUT_KINDS: readonly LayoutKind[] = [
  "fully-contiguous",
  "layer-separate",
  "layer-separate-outer",
];

/**
 * Geometry of one block: numLayers x outerDim chunks (outerDim 2 = K and V), each chunk
 * pageSize tokens x innerDim elements (heads x head dim) x elemBytes.
 */
export interface BlockLayout {
  readonly kind: LayoutKind;
  readonly numLayers: number;
  readonly outerDim: number;
  readonly pageSize: number;
  readonly innerDim: number;
  readonly elemBytes: number;
}

export function blockBytes(l: BlockLayout): number {
  return l.numLayers * l.outerDim * l.pageSize * l.innerDim * l.elemBytes;
}

/** A pool as the handler sees it. */
export interface TransferPool {
  readonly kind: PoolKind;
  readonly numBlocks: number;
  readonly blockBytes: number;
  /**
   * Copies block pairs[2i] of this pool to block pairs[2i+1] of `dst`. Rejects with a
   * TransferError (direction, range, closed pool, I/O) and copies nothing when the request
   * is invalid.
   */
  copyTo(dst: TransferPool, pairs: Uint32Array): Promise<void>;
}

/** The replicated-mode collective: every rank calls it with the same indices. */
export interface BlockBroadcaster {
  readonly rank: number;
  readonly worldSize: number;
  /** Afterwards every rank's `pool` blocks at `indices` equal rank 0's. */
  broadcast(pool: TransferPool, indices: Uint32Array): Promise<void>;
}

/** SchedulerRequirement of the connector path; opaque here, passed to the scheduler. */
export type SchedulerRequirement = unknown;

/** LeaderTransferRequest: the connector/scheduler part of a request. */
export interface LeaderTransferRequest {
  readonly requestId: string;
  readonly uuid: string;
  readonly requirement?: SchedulerRequirement;
  readonly requestType?: unknown;
}

/** BlockTransferRequest: pairs of (source index, destination index). */
export interface BlockTransferRequest {
  readonly fromPool: PoolKind;
  readonly toPool: PoolKind;
  readonly blocks: readonly (readonly [number, number])[];
  readonly connectorReq?: LeaderTransferRequest;
}

/** What a finished transfer did (for logs and the agent's answer). */
export interface TransferSummary {
  readonly blocks: number;
  readonly batches: number;
  readonly mode: TransferMode;
}

/** Sharded: each rank moves its own shard. Replicated: rank 0 loads, then broadcasts. */
export type TransferMode = "sharded" | "replicated";

/** The scheduler's verdict; only "execute" is supported (as in the seed). */
export type SchedulingDecision = "execute" | "cancel";

export interface ScheduledTransfer {
  readonly decision: SchedulingDecision;
  markComplete(result: { ok: true } | { ok: false; error: Error }): Promise<void>;
}

/** TransferSchedulerClient of the connector path. */
export interface TransferSchedulerClient {
  scheduleTransfer(req: LeaderTransferRequest): Promise<ScheduledTransfer>;
}

/** A message from the leader: exactly one JSON data element; must be acknowledged. */
export interface TransferMessage {
  readonly data: readonly Uint8Array[];
  ack(): Promise<void>;
}
