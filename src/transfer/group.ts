/**
 * NativeReplicationGroup: one rank's membership of a replication group (Dynamo KVBM's replicated
 * mode: rank 0 loads a block, the others receive it by broadcast), owning the group handle. The
 * library broadcasts with NCCL when rank 0 finds it usable for CUDA device pools, otherwise over
 * POSIX shared memory between the ranks' processes on one host. join() blocks until every rank has
 * joined (or the timeout).
 *
 * @example
 * using group = NativeReplicationGroup.join(lib, { name: "kv-7f3a", rank, worldSize: 3 });
 * await group.broadcast(devicePool, Uint32Array.of(4, 5, 6)); // every rank, same indices
 */
import { SY_GROUP_CPU_ONLY } from "./native/ffi.ts";
import type { NativeLibrary } from "./native/library.ts";
import { fromStatus, TransferError } from "./errors.ts";
import { awaitJob } from "./jobs.ts";
import { NativePool } from "./pools.ts";
import type { BlockBroadcaster, TransferPool } from "./types.ts";

export interface GroupSpec {
  /** Shared by all ranks: 1..100 characters of [A-Za-z0-9._-]. */
  readonly name: string;
  readonly rank: number;
  readonly worldSize: number;
  /** Per wait (joining, each broadcast round); 0 = the library default (30 s). */
  readonly timeoutMs?: number;
  /** Never use NCCL, even where it is usable. */
  readonly cpuOnly?: boolean;
}

const utf8 = new TextEncoder();

export class NativeReplicationGroup implements BlockBroadcaster {
  readonly #lib: NativeLibrary;
  #handle: number | null;
  readonly rank: number;
  readonly worldSize: number;
  readonly usesNccl: boolean;

  private constructor(lib: NativeLibrary, handle: number, spec: GroupSpec, usesNccl: boolean) {
    this.#lib = lib;
    this.#handle = handle;
    this.rank = spec.rank;
    this.worldSize = spec.worldSize;
    this.usesNccl = usesNccl;
  }

  static join(lib: NativeLibrary, spec: GroupSpec): NativeReplicationGroup {
    // Checked here too, for a message in the caller's terms (the C side checks again).
    if (!Number.isInteger(spec.worldSize) || spec.worldSize < 1) {
      throw new TransferError(
        "invalid-argument",
        `world size must be a positive integer, got ${spec.worldSize}`,
      );
    }
    if (!Number.isInteger(spec.rank) || spec.rank < 0 || spec.rank >= spec.worldSize) {
      throw new TransferError(
        "invalid-argument",
        `rank ${spec.rank} violates 0 <= rank < world size (${spec.worldSize})`,
      );
    }
    const name = utf8.encode(spec.name);
    const sym = lib.unsafeSymbols;
    const flags = spec.cpuOnly ? SY_GROUP_CPU_ONLY : 0;
    const handle = sym.sy_group_create(
      name,
      name,
      spec.rank,
      spec.worldSize,
      spec.timeoutMs ?? 0,
      flags,
    );
    if (handle < 0)
      throw fromStatus(handle, lib.lastError(), `joining group ${spec.name} as rank ${spec.rank}`);
    return new NativeReplicationGroup(lib, handle, spec, sym.sy_group_uses_nccl(handle) === 1);
  }

  #live(what: string): number {
    if (this.#handle === null) throw new TransferError("closed", `${what}: the group is closed`);
    return this.#handle;
  }

  async broadcast(pool: TransferPool, indices: Uint32Array): Promise<void> {
    const g = this.#live("broadcast");
    if (!(pool instanceof NativePool))
      throw new TransferError("invalid-argument", "broadcast: the pool is not a native pool");
    const job = this.#lib.unsafeSymbols.sy_group_bcast_submit(
      g,
      pool.unsafeHandle,
      indices,
      indices,
    );
    await awaitJob(
      this.#lib,
      job,
      `broadcast of ${indices.length} ${pool.kind} blocks (rank ${this.rank}/${this.worldSize})`,
    );
  }

  /** Blocks until every rank has called it (used at start-up and by tests). */
  barrier(): void {
    const st = this.#lib.unsafeSymbols.sy_group_barrier(this.#live("barrier"));
    if (st < 0) throw fromStatus(st, this.#lib.lastError(), `barrier (rank ${this.rank})`);
  }

  close(): void {
    if (this.#handle === null) return;
    const h = this.#handle;
    this.#handle = null;
    this.#lib.unsafeSymbols.sy_group_destroy(h);
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
