import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NativePool } from "../../../src/transfer/pools.ts";
import { blockBytes, type BlockLayout } from "../../../src/transfer/types.ts";
import { equalBytes, nativeLibrary, pattern } from "./native/native-lib.ts";

const lib = nativeLibrary();
const dir = mkdtempSync(join(tmpdir(), "sy-pools-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const layout: BlockLayout = {
  kind: "fully-contiguous",
  numLayers: 2,
  outerDim: 2,
  pageSize: 16,
  innerDim: 64,
  elemBytes: 2,
};

describe("NativePool", () => {
  test("reports its geometry and the memory it really got", () => {
    using p = NativePool.create(lib, { kind: "host", numBlocks: 3, layout, backend: "cpu" });
    expect(p.numBlocks).toBe(3);
    expect(p.blockBytes).toBe(blockBytes(layout));
    expect(p.blockBytes).toBe(2 * 2 * 16 * 64 * 2);
    expect(p.backend).toBe("cpu");
    expect(p.closed).toBe(false);
    expect(p.unsafeHandle).toBeGreaterThan(0);
  });

  test("`using` closes the pool at the end of the scope", () => {
    let escaped: NativePool;
    {
      using p = NativePool.create(lib, { kind: "device", numBlocks: 1, layout, backend: "cpu" });
      escaped = p;
    }
    expect(escaped.closed).toBe(true);
    expect(escaped.unsafeHandle).toBe(0);
    expect(() => escaped.readBlock(0)).toThrow(/closed/);
  });

  test("a disk pool is a file of block slots that outlives the pool unless asked to unlink", () => {
    const path = join(dir, "persist.bin");
    const bytes = pattern(blockBytes(layout), 42);
    {
      using d = NativePool.create(lib, { kind: "disk", numBlocks: 4, layout, diskPath: path });
      expect(statSync(path).size).toBe(4 * blockBytes(layout));
      d.writeBlock(2, bytes);
    }
    {
      using d = NativePool.create(lib, {
        kind: "disk",
        numBlocks: 4,
        layout,
        diskPath: path,
        unlinkOnClose: true,
      });
      expect(equalBytes(d.readBlock(2), bytes), "seed 42").toBe(true);
    }
    expect(existsSync(path)).toBe(false);
  });

  test("the disk pool can be told not to use O_DIRECT", () => {
    using d = NativePool.create(lib, {
      kind: "disk",
      numBlocks: 2,
      layout,
      diskPath: join(dir, "buffered.bin"),
      directIo: false,
      unlinkOnClose: true,
    });
    expect(d.directIo).toBe(false);
  });

  test("bad specs are refused with the reason", () => {
    expect(() => NativePool.create(lib, { kind: "disk", numBlocks: 2, layout })).toThrow(
      /disk path is empty/,
    );
    expect(() => NativePool.create(lib, { kind: "host", numBlocks: 0, layout })).toThrow(
      /num_blocks/,
    );
    expect(() =>
      NativePool.create(lib, { kind: "host", numBlocks: 2, layout: { ...layout, numLayers: 0 } }),
    ).toThrow(/num_layers/);
    expect(() =>
      NativePool.create(lib, { kind: "host", numBlocks: 2, layout: { ...layout, elemBytes: -1 } }),
    ).toThrow(/not a uint32/);
    expect(() =>
      NativePool.create(lib, { kind: "disk", numBlocks: 2, layout, diskPath: dir }),
    ).toThrow(/not a regular file|cannot open/);
  });

  test("readBlock fills a caller's buffer and checks its size", () => {
    using p = NativePool.create(lib, { kind: "host", numBlocks: 2, layout, backend: "cpu" });
    const data = pattern(p.blockBytes, 7);
    p.writeBlock(1, data);
    const into = new Uint8Array(p.blockBytes);
    expect(p.readBlock(1, into)).toBe(into);
    expect(equalBytes(into, data)).toBe(true);
    expect(() => p.readBlock(1, new Uint8Array(10))).toThrow(/buffer is 10 bytes/);
    expect(() => p.writeBlock(0, data.subarray(1))).toThrow(/a block is/);
  });
});
