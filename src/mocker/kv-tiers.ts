/**
 * The lower KV tiers of one dp rank, with real bytes through the native library: a device pool
 * whose slots are the prefix cache's slots (a stored block's content is written there), a host
 * pool and optionally a disk pool, moved by the transfer stack's block handler
 * (src/transfer/handler.ts: device->host, host->disk, host->device, disk->device).
 *
 * - offload: blocks the GPU cache evicts are copied device->host before their slots are reused;
 *   the host pool's own evictions go host->disk (or are dropped without a disk pool).
 * - load: a prompt's blocks found in host or disk right after its GPU prefix are copied into the
 *   device slots the cache gave them, and every one is checked against the content its tokens
 *   must produce (kv-content.ts); the first wrong block and those after it are computed instead.
 *
 * Events are vLLM's for an OffloadingConnector with self-describing events (vllm-project/vllm
 * vllm/distributed/kv_transfer/kv_connector/v1/offloading/events.py @030ea52e): a store names its
 * blocks' own hashes with their parent and tokens, medium CPU (host) or STORAGE (disk, "disk"
 * here; on the JSON wire Dynamo's storage_tier host_pinned / disk); an eviction removes the same
 * hashes from that medium. Events are self-contained (own parent), so a store is one event per
 * chain of blocks. The fields are BlockStored's / BlockRemoved's of vllm/distributed/kv_events.py
 * (@0181ea31: block hashes, parent, medium), the media vllm/v1/kv_offload's Medium (CPU, STORAGE)
 * mapped to MEDIUM_CPU / MEDIUM_STORAGE by the events.py above.
 *
 * Callers run every call on the rank's lane (`exclusive`), so a slot is never read mid-copy.
 */
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { KvCacheEventData, KvMedium, StoredBlock } from "../core/events.ts";
import { BlockTransferHandler } from "../transfer/handler.ts";
import type { NativeLibrary } from "../transfer/native/library.ts";
import { NativePool } from "../transfer/pools.ts";
import { handoffLayout } from "./kv-handoff.ts";
import { FifoSemaphore } from "./fifo.ts";
import { blockMatches, fillBlock } from "./kv-content.ts";
import type { EvictedBlock } from "./prefix-cache.ts";
import { TierIndex, type TierBlock } from "./tier-index.ts";

export interface RankTiersOptions {
  readonly lib: NativeLibrary;
  readonly blockBytes: number;
  /** The GPU cache's slots (--kv-blocks): the device pool mirrors them. */
  readonly gpuBlocks: number;
  readonly hostBlocks: number;
  /** 0: no disk tier. */
  readonly diskBlocks: number;
  /** The disk pool's slot file (removed on close). */
  readonly diskPath?: string;
  /** Receives each tier event (in order). */
  readonly record: (data: KvCacheEventData, medium: KvMedium) => void;
}

export interface TierStats {
  /** Blocks copied device -> host. */
  offloadedBlocks: number;
  /** Blocks copied host -> disk. */
  spilledBlocks: number;
  /** Blocks copied into the device pool from host / from disk, and checked. */
  loadedFromHost: number;
  loadedFromDisk: number;
  /** Loaded blocks whose bytes were not their tokens' content (must stay 0). */
  mismatchedBlocks: number;
  /** Seconds spent in native copies (offload and load together). */
  copySeconds: number;
  /** Offloads that failed (a native error): those blocks are not on a lower tier. */
  failures: number;
}

/** Where a lower-tier hit lives. */
export interface TierHit {
  readonly medium: "cpu" | "disk";
  readonly slot: number;
}

export class RankTiers {
  readonly stats: TierStats = {
    offloadedBlocks: 0,
    spilledBlocks: 0,
    loadedFromHost: 0,
    loadedFromDisk: 0,
    mismatchedBlocks: 0,
    copySeconds: 0,
    failures: 0,
  };
  readonly host: TierIndex;
  readonly disk: TierIndex | null;
  readonly #o: RankTiersOptions;
  readonly #device: NativePool;
  readonly #hostPool: NativePool;
  readonly #diskPool: NativePool | null;
  readonly #handler: BlockTransferHandler;
  readonly #buf: Uint8Array;
  readonly #scratch: Uint8Array;
  /** Every device or pool access of this rank runs on it, one at a time, in call order. */
  readonly #lane = new FifoSemaphore(1);

  constructor(o: RankTiersOptions) {
    this.#o = o;
    const layout = handoffLayout(o.blockBytes);
    this.#buf = new Uint8Array(o.blockBytes);
    this.#scratch = new Uint8Array(o.blockBytes);
    this.#device = NativePool.create(o.lib, {
      kind: "device",
      numBlocks: o.gpuBlocks,
      layout,
      backend: "cpu",
    });
    this.#hostPool = NativePool.create(o.lib, {
      kind: "host",
      numBlocks: o.hostBlocks,
      layout,
      backend: "cpu",
    });
    this.host = new TierIndex(o.hostBlocks);
    if (o.diskBlocks > 0) {
      if (o.diskPath === undefined) throw new Error("a disk tier needs a file path");
      this.#diskPool = NativePool.create(o.lib, {
        kind: "disk",
        numBlocks: o.diskBlocks,
        layout,
        diskPath: o.diskPath,
        unlinkOnClose: true,
      });
      this.disk = new TierIndex(o.diskBlocks);
    } else {
      this.#diskPool = null;
      this.disk = null;
    }
    this.#handler = new BlockTransferHandler({
      device: this.#device,
      host: this.#hostPool,
      disk: this.#diskPool ?? undefined,
    });
  }

  /** Runs `fn` alone on the rank's tier lane (copies, loads, exports), after those called before. */
  async exclusive<T>(fn: () => Promise<T> | T): Promise<T> {
    await this.#lane.acquire();
    try {
      return await fn();
    } finally {
      this.#lane.release();
    }
  }

  /** Computed blocks land in their GPU slots: `indexes` of the prompt, at `slots[index]`. */
  writeComputed(hashes: BigUint64Array, indexes: readonly number[], slots: Int32Array): void {
    for (const i of indexes) {
      fillBlock(hashes[i]!, this.#buf);
      this.#device.writeBlock(slots[i]!, this.#buf);
    }
  }

  /** Reads a block held on a lower tier into `out` (a peer pull's source); false when not held. */
  readHeld(hash: bigint, out: Uint8Array): boolean {
    const slot = this.host.slotOf(hash);
    if (slot === undefined) return false;
    this.#hostPool.readBlock(slot, out);
    return true;
  }

  /** GPU evictions, before their slots are overwritten: device -> host, the host's own evictions host -> disk. */
  async offload(evicted: readonly EvictedBlock[]): Promise<void> {
    const fresh: (EvictedBlock & { hostSlot: number })[] = [];
    const hostEvicted: (TierBlock & { slot: number })[] = [];
    for (const e of evicted) {
      if (this.host.has(e.blockHash)) {
        this.host.touch(e.blockHash);
        continue;
      }
      const slot = this.host.insert(e, hostEvicted);
      if (slot === null) continue; // every host block is pinned by a load: this one is dropped
      this.host.pin(e.blockHash); // until its copy is done, no later insert of this batch takes its slot
      fresh.push({ ...e, hostSlot: slot });
    }
    try {
      if (hostEvicted.length > 0) await this.#spill(hostEvicted);
      if (fresh.length > 0) {
        await this.#copy(
          "device",
          "host",
          fresh.map((f) => [f.slot, f.hostSlot]),
        );
        this.stats.offloadedBlocks += fresh.length;
      }
    } finally {
      for (const f of fresh) this.host.unpin(f.blockHash);
    }
    this.#stored(fresh, "cpu");
  }

  /** Host evictions: to disk when there is one (their host slots are reused right after), else gone. */
  async #spill(blocks: readonly (TierBlock & { slot: number })[]): Promise<void> {
    const disk = this.disk;
    const moved: (TierBlock & { diskSlot: number; slot: number })[] = [];
    const diskEvicted: (TierBlock & { slot: number })[] = [];
    if (disk !== null) {
      for (const b of blocks) {
        if (disk.has(b.blockHash)) {
          disk.touch(b.blockHash);
          continue;
        }
        const diskSlot = disk.insert(b, diskEvicted);
        if (diskSlot !== null) moved.push({ ...b, diskSlot });
      }
      if (moved.length > 0) {
        await this.#copy(
          "host",
          "disk",
          moved.map((m) => [m.slot, m.diskSlot]),
        );
        this.stats.spilledBlocks += moved.length;
      }
    }
    this.#o.record({ type: "removed", blockHashes: blocks.map((b) => b.blockHash) }, "cpu");
    if (diskEvicted.length > 0)
      this.#o.record({ type: "removed", blockHashes: diskEvicted.map((b) => b.blockHash) }, "disk");
    this.#stored(moved, "disk");
  }

  /**
   * The prompt's blocks from `from` (before `upTo`) that a lower tier holds, consecutively (host
   * first, then disk), pinned until `load` or `unpin`.
   */
  match(hashes: BigUint64Array, from: number, upTo: number = hashes.length): TierHit[] {
    const hits: TierHit[] = [];
    for (let i = from; i < Math.min(upTo, hashes.length); i++) {
      const h = hashes[i]!;
      const hs = this.host.slotOf(h);
      if (hs !== undefined) {
        this.host.pin(h);
        hits.push({ medium: "cpu", slot: hs });
        continue;
      }
      const ds = this.disk?.slotOf(h);
      if (ds === undefined) break;
      this.disk!.pin(h);
      hits.push({ medium: "disk", slot: ds });
    }
    return hits;
  }

  /** Releases hits taken by `match` without loading them. */
  unpin(hashes: BigUint64Array, from: number, hits: readonly TierHit[]): void {
    for (const [k, hit] of hits.entries())
      (hit.medium === "cpu" ? this.host : this.disk!).unpin(hashes[from + k]!);
  }

  /**
   * Copies the hits (blocks from, from+1, ... of the prompt) into their device slots and checks
   * each; returns how many leading ones hold exactly their tokens' content. Unpins the hits.
   */
  async load(
    hashes: BigUint64Array,
    from: number,
    hits: readonly TierHit[],
    slots: Int32Array,
  ): Promise<number> {
    try {
      const fromHost: [number, number][] = [];
      const fromDisk: [number, number][] = [];
      for (const [k, hit] of hits.entries())
        (hit.medium === "cpu" ? fromHost : fromDisk).push([hit.slot, slots[from + k]!]);
      if (fromHost.length > 0) await this.#copy("host", "device", fromHost);
      if (fromDisk.length > 0) await this.#copy("disk", "device", fromDisk);
      this.stats.loadedFromHost += fromHost.length;
      this.stats.loadedFromDisk += fromDisk.length;
      for (let k = 0; k < hits.length; k++) {
        this.#device.readBlock(slots[from + k]!, this.#buf);
        if (!blockMatches(hashes[from + k]!, this.#buf, this.#scratch)) {
          this.stats.mismatchedBlocks += hits.length - k;
          return k;
        }
      }
      return hits.length;
    } finally {
      this.unpin(hashes, from, hits);
      for (const [k, hit] of hits.entries())
        if (hit.medium === "cpu") this.host.touch(hashes[from + k]!);
    }
  }

  /** Every block held per medium (tree dumps). */
  held(): { medium: "cpu" | "disk"; blocks: TierBlock[] }[] {
    const out: { medium: "cpu" | "disk"; blocks: TierBlock[] }[] = [
      { medium: "cpu", blocks: this.host.blocks() },
    ];
    if (this.disk !== null) out.push({ medium: "disk", blocks: this.disk.blocks() });
    return out;
  }

  /** Drops every lower-tier block (the caller's Cleared event speaks for every medium). */
  clear(): void {
    this.host.clear();
    this.disk?.clear();
  }

  close(): void {
    this.#device.close();
    this.#hostPool.close();
    this.#diskPool?.close();
  }

  async #copy(
    from: "device" | "host" | "disk",
    to: "device" | "host" | "disk",
    blocks: [number, number][],
  ): Promise<void> {
    const t0 = performance.now();
    await this.#handler.executeTransfer({ fromPool: from, toPool: to, blocks });
    this.stats.copySeconds += (performance.now() - t0) / 1000;
  }

  /**
   * One Stored event per chain: a block whose parent is in the same batch follows it (evictions
   * come leaves first, so the batch is put back in parent-to-child order).
   */
  #stored(blocks: readonly TierBlock[], medium: "cpu" | "disk"): void {
    if (blocks.length === 0) return;
    const inBatch = new Set(blocks.map((b) => b.blockHash));
    const children = new Map<bigint, TierBlock[]>();
    for (const b of blocks) {
      if (b.parentHash === null || !inBatch.has(b.parentHash)) continue;
      const list = children.get(b.parentHash) ?? [];
      list.push(b);
      children.set(b.parentHash, list);
    }
    for (const root of blocks) {
      if (root.parentHash !== null && inBatch.has(root.parentHash)) continue;
      // Each root starts a chain that follows first children; other children start their own.
      const pending: TierBlock[] = [root];
      while (pending.length > 0) {
        let b: TierBlock | undefined = pending.pop()!;
        const parentHash = b.parentHash;
        const run: StoredBlock[] = [];
        while (b !== undefined) {
          run.push({ blockHash: b.blockHash, tokensHash: b.tokensHash });
          const next: TierBlock[] = children.get(b.blockHash) ?? [];
          pending.push(...next.slice(1));
          b = next[0];
        }
        this.#o.record({ type: "stored", parentHash, blocks: run }, medium);
      }
    }
  }
}

const DISK_FILE = /^sy-kv-disk-([0-9a-f]{1,16})-(\d{1,10})-\d{1,6}\.bin$/;

/** The disk tier's slot file of one rank of this process. */
export function diskTierPath(dir: string, workerIdHex: string, dpRank: number): string {
  return join(dir, `sy-kv-disk-${workerIdHex}-${process.pid}-${dpRank}.bin`);
}

/**
 * Removes the disk-tier files a killed earlier process of this engine (same worker id) left in
 * `dir`: a close removes its own, a SIGKILL cannot. Files of a live process are kept.
 */
export function sweepDiskTiers(dir: string, workerIdHex: string): number {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return 0; // the directory is not there yet: nothing to sweep
  }
  let removed = 0;
  for (const n of names) {
    const m = DISK_FILE.exec(n);
    if (m === null || m[1] !== workerIdHex || Number(m[2]) === process.pid || alive(Number(m[2])))
      continue;
    rmSync(join(dir, n), { force: true });
    removed++;
  }
  return removed;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"; // someone else's live process
  }
}
