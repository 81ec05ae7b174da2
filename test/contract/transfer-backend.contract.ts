/**
 * The transfer backend contract: what every backend (CPU always; CUDA where a GPU is usable)
 * must do. Run it with runTransferBackendContract(name, makePool); transfer-backends.test.ts does.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TransferError } from "../../src/transfer/errors.ts";
import { BlockTransferHandler } from "../../src/transfer/handler.ts";
import type { NativePool } from "../../src/transfer/pools.ts";
import {
  LAYOUT_KINDS,
  type BlockLayout,
  type LayoutKind,
  type PoolKind,
} from "../../src/transfer/types.ts";
import { equalBytes, pattern } from "../unit/transfer/native/native-lib.ts";
import { rejectionOf } from "../support/errors.ts";

export type MakePool = (
  kind: PoolKind,
  numBlocks: number,
  layout: BlockLayout,
  diskPath?: string,
) => NativePool;

/** 2 layers x K/V x 4 tokens x 128 elements x 2 bytes = 4 KiB blocks (1 KiB chunks). */
export function smallLayout(kind: LayoutKind): BlockLayout {
  return { kind, numLayers: 2, outerDim: 2, pageSize: 4, innerDim: 128, elemBytes: 2 };
}

const DIRECTIONS: readonly [PoolKind, PoolKind][] = [
  ["device", "host"],
  ["device", "disk"],
  ["host", "device"],
  ["host", "disk"],
  ["disk", "device"],
];
const REFUSED: readonly [PoolKind, PoolKind][] = [
  ["device", "device"],
  ["host", "host"],
  ["disk", "host"],
  ["disk", "disk"],
];

const rejection = (p: Promise<unknown>): Promise<TransferError> => rejectionOf(TransferError, p);

export function runTransferBackendContract(name: string, makePool: MakePool): void {
  describe(`transfer backend contract: ${name}`, () => {
    const dir = mkdtempSync(join(tmpdir(), "sy-contract-"));
    let files = 0;
    const open: NativePool[] = [];
    const pool = (kind: PoolKind, n: number, layout: BlockLayout) => {
      const p = makePool(
        kind,
        n,
        layout,
        kind === "disk" ? join(dir, `pool-${files++}.bin`) : undefined,
      );
      open.push(p);
      return p;
    };
    afterAll(() => {
      for (const p of open) p.close();
      rmSync(dir, { recursive: true, force: true });
    });

    for (const [from, to] of DIRECTIONS) {
      for (const srcLayout of LAYOUT_KINDS) {
        const dstLayout =
          LAYOUT_KINDS[(LAYOUT_KINDS.indexOf(srcLayout) + 1) % LAYOUT_KINDS.length]!;
        test(`${from} -> ${to} moves blocks byte for byte (${srcLayout} -> ${dstLayout})`, async () => {
          const seed = from.length * 100 + to.length * 10 + LAYOUT_KINDS.indexOf(srcLayout);
          const src = pool(from, 8, smallLayout(srcLayout));
          const dst = pool(to, 8, smallLayout(dstLayout));
          for (let b = 0; b < 8; b++) src.writeBlock(b, pattern(src.blockBytes, seed + b));
          // reversed and sparse, so a wrong index cannot pass
          await src.copyTo(dst, Uint32Array.of(0, 7, 1, 6, 5, 2));
          for (const [f, t] of [
            [0, 7],
            [1, 6],
            [5, 2],
          ] as const) {
            expect(
              equalBytes(dst.readBlock(t), pattern(src.blockBytes, seed + f)),
              `seed ${seed + f}: block ${f} -> ${t}`,
            ).toBe(true);
          }
          expect(equalBytes(dst.readBlock(0), new Uint8Array(dst.blockBytes))).toBe(true); // untouched
          src.copyToSync(dst, Uint32Array.of(3, 0)); // the blocking call agrees
          expect(
            equalBytes(dst.readBlock(0), pattern(src.blockBytes, seed + 3)),
            `seed ${seed + 3}`,
          ).toBe(true);
        });
      }
    }

    for (const [from, to] of REFUSED) {
      test(`${from} -> ${to} is refused as an invalid direction`, async () => {
        const src = pool(from, 2, smallLayout("fully-contiguous"));
        const dst = from === to ? src : pool(to, 2, smallLayout("fully-contiguous"));
        const e = await rejection(src.copyTo(dst, Uint32Array.of(0, 1)));
        expect(e.code).toBe("invalid-direction");
        expect(e.message).toContain("invalid transfer type");
      });
    }

    test("an out-of-range index is refused and nothing is copied", async () => {
      const src = pool("host", 4, smallLayout("layer-separate"));
      const dst = pool("device", 2, smallLayout("fully-contiguous"));
      src.writeBlock(1, pattern(src.blockBytes, 9));
      const e = await rejection(src.copyTo(dst, Uint32Array.of(1, 0, 3, 2)));
      expect(e.code).toBe("out-of-range");
      expect(e.message).toContain("destination block 2");
      expect(equalBytes(dst.readBlock(0), new Uint8Array(dst.blockBytes))).toBe(true);
      expect(() => src.readBlock(4)).toThrow(/outside the pool/);
    });

    test("a closed pool is an error, and closing twice is harmless", async () => {
      const src = pool("host", 2, smallLayout("fully-contiguous"));
      const dst = pool("device", 2, smallLayout("fully-contiguous"));
      dst.close();
      dst.close();
      expect((await rejection(src.copyTo(dst, Uint32Array.of(0, 0)))).code).toBe("closed");
      expect(() => dst.readBlock(0)).toThrow(/closed/);
    });

    test("pools of different block geometry are refused", async () => {
      const src = pool("host", 2, smallLayout("fully-contiguous"));
      const dst = pool("device", 2, { ...smallLayout("fully-contiguous"), innerDim: 64 });
      expect((await rejection(src.copyTo(dst, Uint32Array.of(0, 0)))).code).toBe("layout-mismatch");
    });

    test("concurrent transfers on disjoint blocks all land", async () => {
      const host = pool("host", 64, smallLayout("fully-contiguous"));
      const disk = pool("disk", 64, smallLayout("fully-contiguous"));
      for (let b = 0; b < 64; b++) host.writeBlock(b, pattern(host.blockBytes, 500 + b));
      const jobs = [];
      for (let j = 0; j < 8; j++) {
        const pairs = new Uint32Array(16);
        for (let k = 0; k < 8; k++)
          (pairs[2 * k] = 8 * j + k), (pairs[2 * k + 1] = 63 - (8 * j + k));
        jobs.push(host.copyTo(disk, pairs));
      }
      await Promise.all(jobs);
      for (let b = 0; b < 64; b++)
        expect(
          equalBytes(disk.readBlock(63 - b), pattern(host.blockBytes, 500 + b)),
          `seed ${500 + b}`,
        ).toBe(true);
    });

    test("the handler splits a 40-block request into batches of 16 and moves every block", async () => {
      const host = pool("host", 40, smallLayout("layer-separate-outer"));
      const device = pool("device", 40, smallLayout("fully-contiguous"));
      for (let b = 0; b < 40; b++) host.writeBlock(b, pattern(host.blockBytes, 900 + b));
      const handler = new BlockTransferHandler({ host, device, maxBatchSize: 16 });
      const blocks = Array.from({ length: 40 }, (_, i) => [i, 39 - i] as const);
      const summary = await handler.executeTransfer({ fromPool: "host", toPool: "device", blocks });
      expect(summary).toEqual({ blocks: 40, batches: 3, mode: "sharded" });
      for (let b = 0; b < 40; b++)
        expect(
          equalBytes(device.readBlock(39 - b), pattern(host.blockBytes, 900 + b)),
          `seed ${900 + b}`,
        ).toBe(true);
    });
  });
}
