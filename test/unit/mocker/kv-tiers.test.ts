import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KvCacheEventData, KvMedium, RouterEvent } from "../../../src/core/events.ts";
import { computeBlockHashes } from "../../../src/core/block-hash.ts";
import { engineBlockHashes } from "../../../src/mocker/engine-hash.ts";
import { MockEngine } from "../../../src/mocker/engine.ts";
import { diskTierPath, RankTiers, sweepDiskTiers } from "../../../src/mocker/kv-tiers.ts";
import { resolveMockerOptions, type MockerOptions } from "../../../src/mocker/options.ts";
import type { EvictedBlock } from "../../../src/mocker/prefix-cache.ts";
import { type TierBlock, TierIndex } from "../../../src/mocker/tier-index.ts";
import { tierLoadMs } from "../../../src/mocker/timing.ts";
import { nativeLibrary } from "../transfer/native/native-lib.ts";
import { VirtualClock } from "./virtual-clock.ts";

const lib = nativeLibrary();
const BYTES = 4096;
const block = (h: bigint, parent: bigint | null = null) => ({
  blockHash: h,
  parentHash: parent,
  tokensHash: h + 1000n,
});

describe("TierIndex", () => {
  test("free slots first, then the least recently used unpinned block is evicted (with its slot)", () => {
    const t = new TierIndex(2);
    const ev: (TierBlock & { slot: number })[] = [];
    const s1 = t.insert(block(1n), ev);
    const s2 = t.insert(block(2n), ev);
    expect(new Set([s1, s2])).toEqual(new Set([0, 1]));
    t.touch(1n); // 2 is now the oldest
    const s3 = t.insert(block(3n), ev);
    expect(ev.map((e) => e.blockHash)).toEqual([2n]);
    expect(s3).toBe(s2);
    expect(t.has(2n)).toBe(false);
    expect(t.slotOf(3n)).toBe(s2!);
  });

  test("pinned blocks are never evicted; with every block pinned there is no slot", () => {
    const t = new TierIndex(1);
    const ev: (TierBlock & { slot: number })[] = [];
    t.insert(block(1n), ev);
    t.pin(1n);
    expect(t.insert(block(2n), ev)).toBeNull();
    expect(t.has(1n)).toBe(true);
    t.unpin(1n);
    expect(t.insert(block(2n), ev)).toBe(0);
    expect(() => t.unpin(2n)).toThrow(/unpinned more often/);
  });
});

describe("RankTiers (native pools)", () => {
  const made: RankTiers[] = [];
  const dirs: string[] = [];
  afterEach(() => {
    for (const t of made.splice(0)) t.close();
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  function tiers(hostBlocks: number, diskBlocks = 0) {
    const events: { data: KvCacheEventData; medium: KvMedium }[] = [];
    const dir = mkdtempSync(join(tmpdir(), "sy-tiers-"));
    dirs.push(dir);
    const t = new RankTiers({
      lib,
      blockBytes: BYTES,
      gpuBlocks: 8,
      hostBlocks,
      diskBlocks,
      diskPath: join(dir, "disk.bin"),
      record: (data, medium) => events.push({ data, medium }),
    });
    made.push(t);
    return { t, events, dir };
  }

  const hashes = BigUint64Array.from({ length: 6 }, (_, i) => 0xabc0_0000n + BigInt(i) * 31n);
  const slots = Int32Array.from([3, 1, 4, 0, 5, 2]);
  const evicted = (idx: number[]): EvictedBlock[] =>
    idx.map((i) => ({
      ...block(hashes[i]!, i > 0 ? hashes[i - 1]! : null),
      depth: i,
      slot: slots[i]!,
    }));

  test("evicted GPU blocks are copied to the host tier (CPU Stored per chain) and load back byte-exact", async () => {
    const { t, events } = tiers(8);
    t.writeComputed(hashes, [0, 1, 2, 3], slots);
    await t.offload(evicted([3, 2, 1, 0])); // leaves first, as the GPU cache evicts
    expect(t.stats.offloadedBlocks).toBe(4);
    expect(events).toEqual([
      {
        medium: "cpu",
        data: {
          type: "stored",
          parentHash: null,
          blocks: [0, 1, 2, 3].map((i) => ({
            blockHash: hashes[i]!,
            tokensHash: hashes[i]! + 1000n,
          })),
        },
      },
    ]);
    const hits = t.match(hashes, 0);
    expect(hits.map((h) => h.medium)).toEqual(["cpu", "cpu", "cpu", "cpu"]);
    // The device slots are overwritten with other content before the load: the load must restore them.
    t.writeComputed(BigUint64Array.from([1n, 2n, 3n, 4n, 5n, 6n]), [0, 1, 2, 3], slots);
    const other = Int32Array.from([6, 7, 0, 1, 0, 0]);
    expect(await t.load(hashes, 0, hits, other)).toBe(4);
    expect(t.stats).toMatchObject({ loadedFromHost: 4, mismatchedBlocks: 0 });
  });

  test("a block whose bytes are not its tokens' content is caught at load: the blocks before it count", async () => {
    const { t } = tiers(8);
    const wrong = BigUint64Array.from(hashes);
    wrong[2] = 999n; // block 2's GPU slot holds another block's bytes
    t.writeComputed(wrong, [0, 1, 2, 3], slots);
    await t.offload(evicted([0, 1, 2, 3]));
    const hits = t.match(hashes, 0);
    expect(await t.load(hashes, 0, hits, Int32Array.from([6, 7, 5, 4]))).toBe(2);
    expect(t.stats.mismatchedBlocks).toBe(2);
  });

  test("host evictions spill to the disk tier (CPU Removed, DISK Stored) and load from disk; without disk they are gone", async () => {
    const { t, events } = tiers(2, 4);
    t.writeComputed(hashes, [0, 1, 2, 3], slots);
    await t.offload(evicted([1, 0]));
    await t.offload(evicted([3, 2])); // the host holds 2: blocks 1 and 0 go down
    expect(t.stats.spilledBlocks).toBe(2);
    expect(events.map((e) => `${e.medium}:${e.data.type}`)).toEqual([
      "cpu:stored",
      "cpu:removed",
      "disk:stored",
      "cpu:stored",
    ]);
    const hits = t.match(hashes, 0);
    expect(hits.map((h) => h.medium)).toEqual(["disk", "disk", "cpu", "cpu"]);
    expect(await t.load(hashes, 0, hits, Int32Array.from([7, 6, 5, 4]))).toBe(4);
    expect(t.stats).toMatchObject({ loadedFromDisk: 2, loadedFromHost: 2, mismatchedBlocks: 0 });

    const plain = tiers(2);
    plain.t.writeComputed(hashes, [0, 1, 2, 3], slots);
    await plain.t.offload(evicted([1, 0]));
    await plain.t.offload(evicted([3, 2]));
    expect(plain.events.map((e) => `${e.medium}:${e.data.type}`)).toEqual([
      "cpu:stored",
      "cpu:removed",
      "cpu:stored",
    ]);
    expect(plain.t.match(hashes, 0)).toEqual([]);
  });

  test("close removes the disk tier's file", () => {
    const { t, dir } = tiers(2, 2);
    expect(readdirSync(dir)).toEqual(["disk.bin"]);
    t.close();
    made.splice(made.indexOf(t), 1);
    expect(existsSync(join(dir, "disk.bin"))).toBe(false);
  });
});

describe("tier options and files", () => {
  test("no tiers by default; a disk tier needs a host tier", () => {
    expect(resolveMockerOptions({}).kvHostBlocks).toBe(0);
    expect(() => resolveMockerOptions({ kvDiskBlocks: 8 })).toThrow(
      /--kv-disk-blocks: needs --kv-host-blocks/,
    );
  });

  test("a killed engine's disk-tier files are swept by its next start; other engines' and live ones' stay", () => {
    const dir = mkdtempSync(join(tmpdir(), "sy-sweep-"));
    try {
      const dead = "sy-kv-disk-ab-999999999-0.bin"; // no such pid
      const mine = diskTierPath(dir, "ab", 0);
      const other = "sy-kv-disk-cd-999999999-0.bin";
      const live = `sy-kv-disk-ab-${process.ppid}-1.bin`;
      for (const f of [dead, other, live]) writeFileSync(join(dir, f), "x");
      writeFileSync(mine, "x");
      expect(sweepDiskTiers(dir, "ab")).toBe(1);
      expect(readdirSync(dir).sort()).toEqual([live, mine.slice(dir.length + 1), other].sort());
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.each(["v1", "fifo"] as const)(
  "MockEngine with a host tier (--scheduler %s)",
  (scheduler) => {
    /** 1 ms per computed token, 4-token blocks, a 4-block GPU cache. */
    const BASE: MockerOptions = {
      blockSize: 4,
      kvBlocks: 4,
      prefillUsPerToken: 1000,
      prefillOverheadMs: 0,
      decodeMsPerStep: 10,
      decodeBatchFactor: 0,
      kvBlockBytes: BYTES,
      kvHostBlocks: 16,
      kvHostGbps: 1,
      kvBytesPerToken: 1_000_000,
      scheduler,
    };

    function setup(opts: MockerOptions = {}) {
      const clock = new VirtualClock();
      const events: RouterEvent[] = [];
      const config = resolveMockerOptions({ ...BASE, ...opts });
      const engine = new MockEngine({
        config,
        workerId: 7n,
        clock,
        emit: (e) => events.push(e),
        makeTiers: (_r, record) =>
          new RankTiers({
            lib,
            blockBytes: BYTES,
            gpuBlocks: config.kvBlocks,
            hostBlocks: config.kvHostBlocks,
            diskBlocks: 0,
            record,
          }),
      });
      return { clock, engine, events, config };
    }
    const prompt = (n: number, base: number) => Uint32Array.from({ length: n }, (_, i) => base + i);

    /** One request alone; its TTFT from when the engine got it. */
    async function run(engine: MockEngine, clock: VirtualClock, tokens: Uint32Array) {
      const t0 = clock.now();
      let firstAt = NaN;
      const done = engine.generate(
        { tokens, maxTokens: 1, dpRank: 0 },
        { start: () => {}, token: () => (firstAt = clock.now()) },
      );
      await clock.run();
      const r = await done;
      return { ...r, ttft: firstAt - t0 };
    }

    test("an evicted prefix comes back from the host tier: CPU events, cached tokens, its load time in place of its prefill", async () => {
      const { clock, engine, events, config } = setup();
      const a = prompt(17, 0); // 4 blocks (and a token): fills the GPU cache
      const b = prompt(17, 500); // evicts all of a's blocks
      const computed = await run(engine, clock, a);
      const gpuHit = await run(engine, clock, a);
      expect(gpuHit.cachedTokens).toBe(16);
      await run(engine, clock, b);
      const aHashes = engineBlockHashes(computeBlockHashes(a, 4, {}));
      const cpuStored = events.filter(
        (e) => e.event.medium === "cpu" && e.event.data.type === "stored",
      );
      expect(
        cpuStored.flatMap((e) =>
          e.event.data.type === "stored" ? e.event.data.blocks.map((x) => x.blockHash) : [],
        ),
      ).toEqual([...aHashes]);
      // GPU events carry no medium, as an engine without tiers sends them.
      expect(
        events.filter((e) => e.event.medium === undefined).map((e) => e.event.data.type),
      ).toEqual(["stored", "removed", "stored"]);

      const again = await run(engine, clock, a);
      expect(again.cachedTokens).toBe(16);
      // A GPU hit's time plus 16 tokens x 1 MB at 1 GB/s of load.
      expect(again.ttft).toBe(gpuHit.ttft + tierLoadMs(16, config.kvHostGbps, config));
      expect(computed.ttft).toBeGreaterThan(gpuHit.ttft);
      const tiers = engine.ranks[0]!.tiers!;
      expect(tiers.stats).toMatchObject({ loadedFromHost: 4, mismatchedBlocks: 0, failures: 0 });
      // A tree dump lists the GPU blocks, then the host tier's with their medium.
      const dump = engine.ranks[0]!.kv.dump();
      expect(dump.filter((e) => e.event.medium === undefined)).toHaveLength(4);
      expect(
        dump
          .filter((e) => e.event.medium === "cpu")
          .map((e) => (e.event.data.type === "stored" ? e.event.data.blocks[0]!.blockHash : 0n))
          .sort(),
      ).toEqual([...aHashes, ...engineBlockHashes(computeBlockHashes(b, 4, {}))].sort());
      expect(dump.map((e) => e.event.eventId)).toEqual(dump.map((_, i) => BigInt(i)));
      engine.close();
    });

    test("at an H100's host link the reload is faster than recomputing", async () => {
      const { clock, engine } = setup({ kvHostGbps: 50, kvBytesPerToken: 131_072 });
      const a = prompt(17, 0);
      const first = await run(engine, clock, a);
      await run(engine, clock, prompt(17, 500));
      const again = await run(engine, clock, a);
      expect(again.cachedTokens).toBe(16);
      expect(again.ttft).toBeLessThan(first.ttft);
      engine.close();
    });
  },
);
