import { describe, expect, test } from "bun:test";
import {
  XXH3_SEED,
  blockHashSeed,
  computeBlockHashes,
  computeBlockHashesWith,
  computeSeqHashes,
  computeSeqHashesWith,
  hashMmIdentifier,
  newU64Array,
  U64Slab,
  loraSeed,
  padValueForMmHash,
  portableBatchHasher,
  seqHasherOf,
  type BatchBlockHasher,
  type SeqHasher,
} from "../../../src/core/block-hash.ts";
import { xxh3_64 } from "../../../src/core/xxh3.ts";

const utf8 = (s: string) => new TextEncoder().encode(s);
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe("spec §2.6 vectors", () => {
  test("the seed is 1337", () => {
    expect(XXH3_SEED).toBe(1337n);
  });
  test("tokens 0..8, bs=4: block and sequence hashes", () => {
    const blocks = computeBlockHashes(range(8), 4);
    expect([...blocks]).toEqual([9143094415614847814n, 12124091508212882195n]);
    expect([...computeSeqHashes(blocks)]).toEqual([9143094415614847814n, 9510318385840434533n]);
  });
  test("tokens 0..9, bs=4: the partial block is dropped", () => {
    expect([...computeBlockHashes(range(9), 4)]).toEqual([
      9143094415614847814n,
      12124091508212882195n,
    ]);
    expect(computeBlockHashes(range(3), 4).length).toBe(0);
  });
  test("LoRA seed and LoRA block", () => {
    expect(xxh3_64(utf8("adapter-a"), 0n)).toBe(8842669519798866845n);
    expect(loraSeed("adapter-a")).toBe(8842669519798868182n);
    expect(loraSeed("")).toBe(1337n);
    expect(loraSeed()).toBe(1337n);
    expect([...computeBlockHashes(range(4), 4, { loraName: "adapter-a" })]).toEqual([
      6665157333201000639n,
    ]);
    expect([...computeBlockHashes(range(4), 4, { loraName: "" })]).toEqual([9143094415614847814n]);
  });
  test("cache namespace [newer]", () => {
    expect(blockHashSeed(undefined, "tenant-a")).toBe(1948188790972764086n);
    expect([...computeBlockHashes(range(4), 4, { cacheNamespace: "tenant-a" })]).toEqual([
      17009624042690211646n,
    ]);
    expect(blockHashSeed("adapter-a", "tenant-a")).toBe(10790858310771630931n);
    expect([
      ...computeBlockHashes(range(4), 4, { loraName: "adapter-a", cacheNamespace: "tenant-a" }),
    ]).toEqual([8269515957840517240n]);
  });
  test("mm block: tokens [0,1,2,3], bs=2, block 0 has mm_hash 42", () => {
    const mmInfos = [{ mmObjects: [{ mmHash: 42n, offsets: [[0, 2]] as const }] }, null];
    expect([...computeBlockHashes([0, 1, 2, 3], 2, { mmInfos })]).toEqual([
      6100948656312251355n,
      10731123482949079648n,
    ]);
  });
});

describe("computeBlockHashes", () => {
  test("block size 0 gives no blocks", () => {
    expect(computeBlockHashes(range(8), 0).length).toBe(0);
  });
  test("mm hashes are sorted ascending (unsigned) and offsets are ignored", () => {
    const toks = range(32);
    const a = computeBlockHashes(toks, 16, {
      mmInfos: [
        {
          mmObjects: [
            { mmHash: 2n ** 63n + 5n, offsets: [[0, 1]] },
            { mmHash: 7n, offsets: [] },
          ],
        },
      ],
    });
    const b = computeBlockHashes(toks, 16, {
      mmInfos: [
        {
          mmObjects: [
            { mmHash: 7n, offsets: [[3, 9]] },
            { mmHash: 2n ** 63n + 5n, offsets: [] },
          ],
        },
      ],
    });
    expect([...a]).toEqual([...b]);
    // Bytes = 16 tokens (u32 LE) then 7 and 2^63+5 (u64 LE); block 1 untouched.
    const bytes = new Uint8Array(64 + 16);
    const dv = new DataView(bytes.buffer);
    for (let i = 0; i < 16; i++) dv.setUint32(4 * i, i, true);
    dv.setBigUint64(64, 7n, true);
    dv.setBigUint64(72, 2n ** 63n + 5n, true);
    expect(a[0]).toBe(xxh3_64(bytes, 1337n));
    expect(a[1]).toBe(computeBlockHashes(toks, 16)[1]!);
  });
  test("an MM entry with no objects hashes like no MM at all", () => {
    const toks = range(600);
    const plain = computeBlockHashes(toks, 512);
    expect([...computeBlockHashes(toks, 512, { mmInfos: [{ mmObjects: [] }] })]).toEqual([
      ...plain,
    ]);
  });
  test("large blocks with MM go through the long path", () => {
    const toks = range(512);
    const h = computeBlockHashes(toks, 512, {
      mmInfos: [{ mmObjects: [{ mmHash: 1n, offsets: [] }] }],
    });
    const bytes = new Uint8Array(2048 + 8);
    const dv = new DataView(bytes.buffer);
    for (let i = 0; i < 512; i++) dv.setUint32(4 * i, i, true);
    dv.setBigUint64(2048, 1n, true);
    expect(h[0]).toBe(xxh3_64(bytes, 1337n));
  });
  test("number[] and Uint32Array inputs agree", () => {
    const toks = range(100).map((i) => (i * 2654435761) >>> 0);
    expect([...computeBlockHashes(toks, 16)]).toEqual([
      ...computeBlockHashes(Uint32Array.from(toks), 16),
    ]);
  });
  test("every block equals xxh3 of its u32 LE bytes, for many block sizes", () => {
    const toks = Uint32Array.from(range(2100), (i) => (i * 2246822519) >>> 0);
    for (const bs of [
      1, 2, 3, 4, 5, 8, 15, 16, 17, 31, 32, 33, 60, 61, 64, 100, 256, 257, 512, 1000,
    ]) {
      const got = computeBlockHashes(toks, bs, { loraName: "x" });
      expect(got.length).toBe(Math.floor(2100 / bs));
      const seed = loraSeed("x");
      for (const j of [0, got.length - 1]) {
        const bytes = new Uint8Array(toks.buffer.slice(4 * j * bs, 4 * (j + 1) * bs));
        expect(got[j]).toBe(xxh3_64(bytes, seed));
      }
    }
  });
  test("computeBlockHashesWith uses the injected hasher only without MM", () => {
    const calls: [number, number, bigint][] = [];
    const fake: BatchBlockHasher = (t, bs, seed) => {
      calls.push([t.length, bs, seed]);
      return portableBatchHasher(t, bs, seed);
    };
    const toks = range(40);
    const direct = computeBlockHashesWith(fake, toks, 16, { loraName: "adapter-a" });
    expect(calls).toEqual([[40, 16, 8842669519798868182n]]);
    expect([...direct]).toEqual([...computeBlockHashes(toks, 16, { loraName: "adapter-a" })]);
    computeBlockHashesWith(fake, toks, 16, {
      mmInfos: [{ mmObjects: [{ mmHash: 3n, offsets: [] }] }],
    });
    expect(calls.length).toBe(1);
  });
});

describe("computeSeqHashes", () => {
  test("empty input gives empty output", () => {
    expect(computeSeqHashes(new BigUint64Array(0)).length).toBe(0);
  });
  test("each element chains the previous one with seed 1337", () => {
    const blocks = BigUint64Array.from([1n, 2n ** 64n - 1n, 12345678901234567890n, 0n]);
    const seq = computeSeqHashes(blocks);
    expect(seq[0]).toBe(1n);
    for (let i = 1; i < 4; i++) {
      const bytes = new Uint8Array(16);
      const dv = new DataView(bytes.buffer);
      dv.setBigUint64(0, seq[i - 1]!, true);
      dv.setBigUint64(8, blocks[i]!, true);
      expect(seq[i]).toBe(xxh3_64(bytes, 1337n));
    }
  });
  test("works on a subarray view", () => {
    const all = BigUint64Array.from([9n, 8n, 7n, 6n]);
    expect([...computeSeqHashes(all.subarray(1))]).toEqual([
      ...computeSeqHashes(BigUint64Array.from([8n, 7n, 6n])),
    ]);
  });
});

describe("sequence hasher injection", () => {
  test("seqHasherOf: a block hasher's own sequence hasher, else the portable one", () => {
    expect(seqHasherOf(portableBatchHasher)).toBe(computeSeqHashes);
    const own: SeqHasher = (b) => b.map((x) => x + 1n);
    const withOwn: BatchBlockHasher = Object.assign(
      (t: Uint32Array, bs: number, seed: bigint) => portableBatchHasher(t, bs, seed),
      {
        seqHasher: own,
      },
    );
    expect(seqHasherOf(withOwn)).toBe(own);
    expect([...computeSeqHashesWith(own, BigUint64Array.from([1n, 2n]))]).toEqual([2n, 3n]);
    expect([...computeSeqHashesWith(computeSeqHashes, BigUint64Array.from([5n]))]).toEqual([5n]);
  });
  test("results own their ArrayBuffer (u32 views need no copy)", () => {
    const a = newU64Array(3);
    expect(a.length).toBe(3);
    expect(a.buffer.byteLength).toBe(24);
    expect(computeSeqHashes(BigUint64Array.from([1n, 2n])).buffer.byteLength).toBe(16);
    expect(portableBatchHasher(Uint32Array.from(range(8)), 4, XXH3_SEED).buffer.byteLength).toBe(
      16,
    );
  });
});

describe("U64Slab", () => {
  test("pieces never overlap, a full slab is replaced, large arrays get their own buffer", () => {
    const slab = new U64Slab(256, 64);
    const pieces = Array.from({ length: 20 }, (_, i) => slab.alloc(1 + (i % 8)));
    pieces.forEach((p, i) => p.fill(BigInt(i)));
    pieces.forEach((p, i) =>
      expect(
        [...p].every((x) => x === BigInt(i)),
        `piece ${i}`,
      ).toBe(true),
    );
    expect(new Set(pieces.map((p) => p.buffer)).size).toBeGreaterThan(1);
    for (const p of pieces) expect(p.buffer.byteLength).toBe(256);
    const big = slab.alloc(9); // 72 bytes > 64
    expect(big.buffer.byteLength).toBe(72);
    expect(slab.alloc(0).length).toBe(0);
  });
});

describe("helpers", () => {
  test("hashMmIdentifier", () => {
    expect(hashMmIdentifier("")).toBeUndefined();
    const hex = "0123456789abcdef" + "f".repeat(48);
    expect(hashMmIdentifier(hex)).toBe(0x0123456789abcdefn);
    expect(hashMmIdentifier("image-1")).toBe(xxh3_64(utf8("image-1"), 0n));
    expect(hashMmIdentifier(hex.slice(1))).toBe(xxh3_64(utf8(hex.slice(1)), 0n));
  });
  test("padValueForMmHash", () => {
    expect(padValueForMmHash(0n)).toBe(1_000_000);
    expect(padValueForMmHash(2n ** 64n - 1n)).toBe(1_000_000 + 2 ** 30 - 1);
  });
});
