import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { NativePool } from "../../../src/transfer/pools.ts";
import { BlockTransferHandler } from "../../../src/transfer/handler.ts";
import { TransferError } from "../../../src/transfer/errors.ts";
import type { BlockLayout } from "../../../src/transfer/types.ts";
import { equalBytes, nativeLibrary, pattern } from "./native/native-lib.ts";

const lib = nativeLibrary();
const layout: BlockLayout = {
  kind: "fully-contiguous",
  numLayers: 2,
  outerDim: 2,
  pageSize: 16,
  innerDim: 64,
  elemBytes: 2,
};
const name = (tag: string) => `sy-unit-${process.pid}-${tag}`;

describe("NativePool shared memory", () => {
  test("a writer's blocks reach a read-only reader and move host -> device through the batched handler", async () => {
    const seg = name("rt");
    const w = NativePool.createShared(lib, { name: seg, numBlocks: 40, layout });
    for (let b = 0; b < 40; b++) w.writeBlock(b, pattern(w.blockBytes, b + 1));
    w.close();
    expect(existsSync(`/dev/shm/${seg}`)).toBe(true);
    using r = NativePool.openShared(lib, { name: seg, layout });
    expect(r.readOnly).toBe(true);
    expect(r.numBlocks).toBe(40);
    expect(() => r.writeBlock(0, pattern(r.blockBytes, 0))).toThrow(TransferError);
    using dev = NativePool.create(lib, { kind: "device", numBlocks: 64, layout, backend: "cpu" });
    const handler = new BlockTransferHandler({ host: r, device: dev });
    const blocks = Array.from({ length: 40 }, (_, i) => [i, 63 - i] as const);
    const summary = await handler.executeTransfer({ fromPool: "host", toPool: "device", blocks });
    expect(summary.batches).toBe(3); // 16 + 16 + 8
    for (let i = 0; i < 40; i++)
      expect(equalBytes(dev.readBlock(63 - i), pattern(dev.blockBytes, i + 1))).toBe(true);
    expect(NativePool.unlinkShared(lib, seg)).toBe(true);
    expect(NativePool.unlinkShared(lib, seg)).toBe(false);
    expect(existsSync(`/dev/shm/${seg}`)).toBe(false);
  });

  test("CUDA IPC: refused as unavailable without a GPU (the GPU path is never run here)", () => {
    if (lib.gpuUsable) return;
    using dev = NativePool.create(lib, { kind: "device", numBlocks: 2, layout, backend: "cpu" });
    expect(() => dev.ipcHandle()).toThrow(expect.objectContaining({ code: "unavailable" }));
    expect(() =>
      NativePool.openIpc(lib, { handle: new Uint8Array(64), numBlocks: 2, layout }),
    ).toThrow(expect.objectContaining({ code: "unavailable" }));
    expect(() =>
      NativePool.openIpc(lib, { handle: new Uint8Array(8), numBlocks: 2, layout }),
    ).toThrow(expect.objectContaining({ code: "invalid-argument" }));
  });

  test("a missing segment is not-found, a second writer and a wrong layout are refused", () => {
    const seg = name("bad");
    expect(() => NativePool.openShared(lib, { name: seg, layout })).toThrow(
      expect.objectContaining({ code: "not-found" }),
    );
    using w = NativePool.createShared(lib, { name: seg, numBlocks: 2, layout });
    expect(() => NativePool.createShared(lib, { name: seg, numBlocks: 2, layout })).toThrow(
      /already exists/,
    );
    expect(() =>
      NativePool.openShared(lib, { name: seg, layout: { ...layout, pageSize: 8 } }),
    ).toThrow(expect.objectContaining({ code: "layout-mismatch" }));
    expect(() => NativePool.createShared(lib, { name: "../etc", numBlocks: 1, layout })).toThrow(
      expect.objectContaining({ code: "invalid-argument" }),
    );
    w.close();
    NativePool.unlinkShared(lib, seg);
  });
});
