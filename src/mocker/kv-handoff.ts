/**
 * The simulated engine's KV block hand-off for disaggregated prefill/decode, with real bytes
 * through the native library (ffi/: shared-memory pools, batched transfers).
 *
 * Prefill side: `exportBlocks` writes a prompt's blocks (content = kv-content.ts of each
 * engine hash) into a new shared-memory segment, unmaps it, and keeps a lease: a segment no
 * decode engine fetched within `leaseMs` is removed. At start, segments a previous
 * incarnation of this engine left behind are removed; `stop()` removes the live ones.
 *
 * Decode side: `importBlocks` maps the segment read-only, pulls the blocks it lacks into its
 * device pool with the seed-003 handler (host -> device, batches of 16), checks every block
 * against the content it must have, and removes the segment (the hand-off is over). Imports
 * are serialized (one copy engine), so a slot of the device pool is never reused mid-check.
 *
 * SGLang's protocol has no answer carrying the handle: the prefill engine `publishRoom`s it
 * under the bootstrap room and the decode engine asks for it (`waitRoom`, long-poll).
 * It knows nothing of HTTP; the server maps routes to it.
 */
import { readdirSync } from "node:fs";
import type { NativeLibrary } from "../transfer/native/library.ts";
import { BlockTransferHandler } from "../transfer/handler.ts";
import { NativePool } from "../transfer/pools.ts";
import type { BlockLayout } from "../transfer/types.ts";
import { FifoSemaphore } from "./fifo.ts";
import { blockMatches, fillBlock } from "./kv-content.ts";

/** Every segment this engine family makes starts so; a decode engine opens nothing else. */
export const SEGMENT_PREFIX = "sy-kv-";
const SEGMENT_NAME = /^sy-kv-[0-9a-f]{1,16}-\d{1,10}-\d{1,16}$/;
/** Rooms waited for at most this long per poll (the caller's deadline bounds the whole wait). */
const MAX_ROOM_WAIT_MS = 30_000;

export interface ExportedKv {
  /** The segment's name; null when the prompt has no full block (nothing to move). */
  readonly segment: string | null;
  readonly blocks: number;
  readonly bytes: number;
}

export interface ImportOutcome {
  /** Leading blocks that arrived intact (0 on failure: the caller computes them). */
  readonly blocks: number;
  readonly bytes: number;
  /** Why nothing (or less than asked) arrived, for logs; undefined on success. */
  readonly failure?: string;
}

export interface HandoffStats {
  exportedBlocks: number;
  exportedBytes: number;
  exportedSegments: number;
  expiredSegments: number;
  importedBlocks: number;
  importedBytes: number;
  /** Seconds spent in the native copies alone (bytes / this = the copy's GB/s). */
  importCopySeconds: number;
  imports: number;
  importFailures: number;
  /** Blocks whose bytes differed from what their tokens must produce. Must stay 0. */
  mismatchedBlocks: number;
}

export interface KvHandoffOptions {
  readonly lib: NativeLibrary;
  readonly workerIdHex: string;
  readonly blockBytes: number;
  readonly poolBlocks: number;
  readonly leaseMs: number;
  readonly log: (line: string) => void;
}

/** One u32 element per 4 bytes: any block size that is a multiple of 4. */
export function handoffLayout(blockBytes: number): BlockLayout {
  return {
    kind: "fully-contiguous",
    numLayers: 1,
    outerDim: 1,
    pageSize: 1,
    innerDim: blockBytes / 4,
    elemBytes: 4,
  };
}

export function isHandoffSegment(name: unknown): name is string {
  return typeof name === "string" && (SEGMENT_NAME.test(name) || PEER_SEGMENT_NAME.test(name));
}

/**
 * A peer pull's segment is named by the puller's kv_request_id (peer-pull.ts), so the puller can
 * remove it even when the peer dies before answering with the name.
 */
const PEER_SEGMENT_NAME = /^sy-p2p-[A-Za-z0-9-]{1,64}$/;
export function peerSegmentName(kvRequestId: string): string | null {
  const name = `sy-p2p-${kvRequestId}`;
  return PEER_SEGMENT_NAME.test(name) ? name : null;
}

export class KvHandoff {
  readonly stats: HandoffStats = {
    exportedBlocks: 0,
    exportedBytes: 0,
    exportedSegments: 0,
    expiredSegments: 0,
    importedBlocks: 0,
    importedBytes: 0,
    importCopySeconds: 0,
    imports: 0,
    importFailures: 0,
    mismatchedBlocks: 0,
  };
  readonly #o: KvHandoffOptions;
  readonly #layout: BlockLayout;
  readonly #prefix: string;
  readonly #leases = new Map<string, ReturnType<typeof setTimeout>>();
  readonly #rooms = new Map<string, ExportedKv>();
  readonly #roomWaiters = new Map<string, Set<(e: ExportedKv) => void>>();
  readonly #copyLane = new FifoSemaphore(1);
  readonly #buf: Uint8Array;
  readonly #scratch: Uint8Array;
  #device: NativePool | null = null;
  #seq = 0;

  constructor(o: KvHandoffOptions) {
    this.#o = o;
    this.#layout = handoffLayout(o.blockBytes);
    this.#prefix = `${SEGMENT_PREFIX}${o.workerIdHex}-`;
    this.#buf = new Uint8Array(o.blockBytes);
    this.#scratch = new Uint8Array(o.blockBytes);
    this.#sweep();
  }

  get liveSegments(): number {
    return this.#leases.size;
  }

  /** Prefill side: the blocks of `hashes` (engine hashes, prompt order) into a new segment. */
  exportBlocks(hashes: BigUint64Array): ExportedKv {
    if (hashes.length === 0) return { segment: null, blocks: 0, bytes: 0 };
    return this.exportNamed(
      `${this.#prefix}${process.pid}-${++this.#seq}`,
      hashes.length,
      (i, buf) => fillBlock(hashes[i]!, buf),
    );
  }

  /**
   * `n` blocks into new segment `segment` (it must not exist), block i's bytes from `fill`;
   * leased like every export. A peer pull names its segment itself (peerSegmentName).
   */
  exportNamed(segment: string, n: number, fill: (i: number, buf: Uint8Array) => void): ExportedKv {
    const pool = NativePool.createShared(this.#o.lib, {
      name: segment,
      numBlocks: n,
      layout: this.#layout,
    });
    try {
      for (let i = 0; i < n; i++) {
        fill(i, this.#buf);
        pool.writeBlock(i, this.#buf);
      }
    } catch (e) {
      NativePool.unlinkShared(this.#o.lib, segment);
      throw e;
    } finally {
      pool.close(); // the segment stays; only the mapping goes
    }
    const timer = setTimeout(() => this.#expire(segment), this.#o.leaseMs);
    timer.unref?.();
    this.#leases.set(segment, timer);
    const bytes = n * this.#o.blockBytes;
    this.stats.exportedSegments++;
    this.stats.exportedBlocks += n;
    this.stats.exportedBytes += bytes;
    return { segment, blocks: n, bytes };
  }

  /**
   * Decode side: blocks [from, to) of the prompt from `segment`, whose block k is the prompt's
   * block `base + k` (0 for a P/D hand-off, which exports the whole prompt); never rejects.
   */
  async importBlocks(
    segment: string,
    hashes: BigUint64Array,
    from: number,
    to: number,
    base = 0,
  ): Promise<ImportOutcome> {
    if (!isHandoffSegment(segment))
      return this.#failed(`not a hand-off segment name: ${JSON.stringify(segment).slice(0, 80)}`);
    await this.#copyLane.acquire();
    let src: NativePool | undefined;
    try {
      src = NativePool.openShared(this.#o.lib, { name: segment, layout: this.#layout });
      const want = Math.min(to, base + src.numBlocks);
      if (want <= from)
        return this.#failed(`segment ${segment} holds ${src.numBlocks} blocks, none past ${from}`);
      const device = (this.#device ??= NativePool.create(this.#o.lib, {
        kind: "device",
        numBlocks: this.#o.poolBlocks,
        layout: this.#layout,
        backend: "cpu",
      }));
      const handler = new BlockTransferHandler({ host: src, device });
      let good = 0;
      // In rounds of at most the device pool's size: each round is copied, then checked.
      for (let start = from; start < want; start += device.numBlocks) {
        const end = Math.min(want, start + device.numBlocks);
        const blocks: [number, number][] = [];
        for (let b = start; b < end; b++) blocks.push([b - base, b - start]);
        const t0 = performance.now();
        await handler.executeTransfer({ fromPool: "host", toPool: "device", blocks });
        this.stats.importCopySeconds += (performance.now() - t0) / 1000;
        for (let b = start; b < end; b++) {
          device.readBlock(b - start, this.#buf);
          if (!blockMatches(hashes[b]!, this.#buf, this.#scratch)) {
            this.stats.mismatchedBlocks += end - b;
            return this.#settle(good, `block ${b} of ${segment} does not hold its tokens' content`);
          }
          good++;
        }
      }
      return this.#settle(
        good,
        want < to ? `segment ${segment} holds only ${src.numBlocks} blocks` : undefined,
      );
    } catch (e) {
      return this.#failed(`${segment}: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      src?.close();
      // The hand-off is over either way: the prefill side's lease finds it gone.
      try {
        NativePool.unlinkShared(this.#o.lib, segment);
      } catch {
        // an invalid name was refused above; nothing else can fail here but a vanished segment
      }
      this.#copyLane.release();
    }
  }

  /** SGLang prefill side: the exported blocks under their bootstrap room, for the decode engine to ask. */
  publishRoom(room: string, exported: ExportedKv): void {
    this.#rooms.set(room, exported);
    const t = setTimeout(() => this.#rooms.delete(room), this.#o.leaseMs);
    t.unref?.();
    for (const w of this.#roomWaiters.get(room) ?? []) w(exported);
    this.#roomWaiters.delete(room);
  }

  /** The room's hand-off once its prefill is done, or null after `waitMs`. */
  waitRoom(room: string, waitMs: number): Promise<ExportedKv | null> {
    const ready = this.#rooms.get(room);
    if (ready !== undefined) return Promise.resolve(ready);
    return new Promise((resolve) => {
      const waiters = this.#roomWaiters.get(room) ?? new Set();
      this.#roomWaiters.set(room, waiters);
      const done = (e: ExportedKv | null) => {
        clearTimeout(timer);
        waiters.delete(done);
        if (waiters.size === 0 && this.#roomWaiters.get(room) === waiters)
          this.#roomWaiters.delete(room);
        resolve(e);
      };
      const timer = setTimeout(() => done(null), Math.max(0, Math.min(waitMs, MAX_ROOM_WAIT_MS)));
      waiters.add(done);
    });
  }

  /** Removes `segment` if it is still there (a pull given up); never throws. */
  discard(segment: string): void {
    if (!isHandoffSegment(segment)) return;
    const timer = this.#leases.get(segment);
    if (timer !== undefined) clearTimeout(timer);
    this.#leases.delete(segment);
    try {
      NativePool.unlinkShared(this.#o.lib, segment);
    } catch {
      // already gone
    }
  }

  /** Removes every live segment and the device pool. */
  stop(): void {
    for (const [segment, timer] of this.#leases) {
      clearTimeout(timer);
      NativePool.unlinkShared(this.#o.lib, segment);
    }
    this.#leases.clear();
    this.#device?.close();
    this.#device = null;
  }

  #settle(blocks: number, failure: string | undefined): ImportOutcome {
    const bytes = blocks * this.#o.blockBytes;
    this.stats.imports++;
    this.stats.importedBlocks += blocks;
    this.stats.importedBytes += bytes;
    if (failure !== undefined) {
      this.stats.importFailures++;
      this.#o.log(`kv import: ${failure}; the rest is computed here`);
    }
    return failure === undefined ? { blocks, bytes } : { blocks, bytes, failure };
  }

  #failed(why: string): ImportOutcome {
    return this.#settle(0, why);
  }

  #expire(segment: string): void {
    this.#leases.delete(segment);
    if (NativePool.unlinkShared(this.#o.lib, segment)) this.stats.expiredSegments++;
  }

  /** Segments of a previous incarnation of this engine (same worker id, killed) would leak otherwise. */
  #sweep(): void {
    let names: string[] = [];
    try {
      names = readdirSync("/dev/shm");
    } catch {
      return; // no /dev/shm listing here: nothing to sweep
    }
    for (const n of names)
      if (n.startsWith(this.#prefix) && isHandoffSegment(n))
        NativePool.unlinkShared(this.#o.lib, n);
  }
}
