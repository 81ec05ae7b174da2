import { describe, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { fillBlock } from "../../../src/mocker/kv-content.ts";
import { handoffLayout, isHandoffSegment, KvHandoff } from "../../../src/mocker/kv-handoff.ts";
import { NativePool } from "../../../src/transfer/pools.ts";
import { nativeLibrary } from "../transfer/native/native-lib.ts";

const lib = nativeLibrary();
const BYTES = 4096;
const hashes = BigUint64Array.from({ length: 40 }, (_, i) => 0x1234_0000_0000n + BigInt(i) * 7919n);
const lines: string[] = [];
const make = (hex: string) =>
  new KvHandoff({
    lib,
    workerIdHex: hex,
    blockBytes: BYTES,
    poolBlocks: 16,
    leaseMs: 60_000,
    log: (l) => lines.push(l),
  });

describe("KvHandoff", () => {
  test("export then import: every block arrives and is checked, in rounds of the pool's size; the segment is removed", async () => {
    const p = make("a1");
    const d = make("d1");
    const e = p.exportBlocks(hashes);
    expect(e.blocks).toBe(40);
    expect(isHandoffSegment(e.segment)).toBe(true);
    expect(existsSync(`/dev/shm/${e.segment}`)).toBe(true);
    const r = await d.importBlocks(e.segment!, hashes, 5, 40); // the first 5 were cached here
    expect(r).toEqual({ blocks: 35, bytes: 35 * BYTES });
    expect(d.stats).toMatchObject({ importedBlocks: 35, mismatchedBlocks: 0, importFailures: 0 });
    expect(existsSync(`/dev/shm/${e.segment}`)).toBe(false);
    p.stop();
    d.stop();
  });

  test("a corrupted block is caught: the blocks before it count, the rest is left to compute, the segment removed", async () => {
    const d = make("d2");
    const name = `sy-kv-b0-${process.pid}-1`;
    const w = NativePool.createShared(lib, { name, numBlocks: 10, layout: handoffLayout(BYTES) });
    const buf = new Uint8Array(BYTES);
    for (let i = 0; i < 10; i++) {
      fillBlock(hashes[i]!, buf);
      if (i === 6) buf[100]! ^= 0x40; // one flipped bit
      w.writeBlock(i, buf);
    }
    w.close();
    const r = await d.importBlocks(name, hashes, 0, 10);
    expect(r.blocks).toBe(6);
    expect(r.failure).toContain("block 6");
    expect(d.stats.mismatchedBlocks).toBe(4);
    expect(existsSync(`/dev/shm/${name}`)).toBe(false);
    d.stop();
  });

  test("a missing segment or a foreign name: nothing imported, never a throw, nothing outside sy-kv-* touched", async () => {
    const d = make("d3");
    expect(await d.importBlocks("sy-kv-ff-1-1", hashes, 0, 4)).toMatchObject({ blocks: 0 });
    expect(await d.importBlocks("../etc/passwd", hashes, 0, 4)).toMatchObject({ blocks: 0 });
    expect(await d.importBlocks("other-segment", hashes, 0, 4)).toMatchObject({ blocks: 0 });
    expect(d.stats.importFailures).toBe(3);
    d.stop();
  });

  test("stop() removes the live segments; a new incarnation removes a killed one's; rooms wait with a deadline", async () => {
    const p = make("c3");
    const e = p.exportBlocks(hashes.subarray(0, 3));
    p.stop();
    expect(existsSync(`/dev/shm/${e.segment}`)).toBe(false);
    const q = make("c4");
    const orphan = q.exportBlocks(hashes.subarray(0, 2));
    const again = make("c4"); // same worker id: sweeps at start
    expect(existsSync(`/dev/shm/${orphan.segment}`)).toBe(false);
    again.stop();
    q.stop();
    const t0 = performance.now();
    expect(await q.waitRoom("42", 20)).toBeNull();
    expect(performance.now() - t0).toBeLessThan(1000);
    const waiting = q.waitRoom("43", 5_000);
    q.publishRoom("43", { segment: null, blocks: 0, bytes: 0 });
    expect(await waiting).toEqual({ segment: null, blocks: 0, bytes: 0 });
  });
});
