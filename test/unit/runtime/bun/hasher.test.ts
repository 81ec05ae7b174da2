import { describe, expect, test } from "bun:test";
import {
  computeBlockHashes,
  computeBlockHashesWith,
  computeSeqHashes,
  computeSeqHashesWith,
  loraSeed,
  portableBatchHasher,
  seqHasherOf,
  XXH3_SEED,
} from "../../../../src/core/block-hash.ts";
import {
  createNativeBlockHasher,
  createNativeSeqHasher,
  loadNativeSeqHasher,
} from "../../../../src/runtime/bun/ffi-hasher.ts";
import { nativeLibrary } from "../../transfer/native/native-lib.ts";

const native = createNativeBlockHasher(nativeLibrary());
const range = (n: number) => Uint32Array.from({ length: n }, (_, i) => i);

describe("the native batch hasher", () => {
  test("matches the spec §2.6 vectors (no multimodal)", () => {
    expect([...native(range(8), 4, XXH3_SEED)]).toEqual([
      9143094415614847814n,
      12124091508212882195n,
    ]);
    expect(native(range(9), 4, XXH3_SEED).length).toBe(2); // the partial block is dropped
    expect(loraSeed("adapter-a")).toBe(8842669519798868182n);
    expect([...native(range(4), 4, loraSeed("adapter-a"))]).toEqual([6665157333201000639n]);
    const opts = { loraName: "adapter-a" };
    expect(computeBlockHashesWith(native, range(4), 4, opts)).toEqual(
      computeBlockHashes(range(4), 4, opts),
    );
  });

  test("block size 0 and prompts shorter than a block give no hashes", () => {
    expect(native(range(10), 0, XXH3_SEED).length).toBe(0);
    expect(native(range(3), 4, XXH3_SEED).length).toBe(0);
    expect(native(new Uint32Array(0), 16, XXH3_SEED).length).toBe(0);
  });

  test("agrees with the portable hasher on random prompts (block sizes 1, 4, 16, 512; LoRA seeds)", () => {
    const SEED = 20261121;
    let x = SEED;
    const rnd = () => {
      x ^= x << 13;
      x >>>= 0;
      x ^= x >>> 17;
      x ^= x << 5;
      return (x >>>= 0);
    };
    const seeds = [XXH3_SEED, loraSeed("adapter-a"), loraSeed("sql-lora"), 0n, (1n << 64n) - 1n];
    for (const bs of [1, 4, 16, 512]) {
      for (const seed of seeds) {
        for (const len of [bs - 1, bs, 3 * bs + 1, 2048 + (rnd() % 3000)]) {
          const tokens = Uint32Array.from({ length: Math.max(0, len) }, () => rnd());
          const want = portableBatchHasher(tokens, bs, seed);
          const got = native(tokens, bs, seed);
          expect(got, `seed ${SEED}, bs ${bs}, len ${len}, salt ${seed}`).toEqual(want);
        }
      }
    }
  });

  test("works on a subarray view (offset into a larger buffer)", () => {
    const all = range(100);
    const view = all.subarray(3, 3 + 64);
    expect(native(view, 16, XXH3_SEED)).toEqual(portableBatchHasher(view, 16, XXH3_SEED));
  });

  test("results kept side by side stay intact (small ones share buffers)", () => {
    const prompts = Array.from({ length: 300 }, (_, k) =>
      Uint32Array.from({ length: 16 * (1 + (k % 40)) }, (_, i) => i * 7 + k),
    );
    const got = prompts.map((t) => native(t, 16, XXH3_SEED));
    const seqs = got.map((b) => native.seqHasher!(b));
    prompts.forEach((t, k) => {
      expect(got[k], `prompt ${k}`).toEqual(portableBatchHasher(t, 16, XXH3_SEED));
      expect(seqs[k], `prompt ${k}`).toEqual(computeSeqHashes(got[k]!));
    });
  });

  test("a bad block size is a RangeError, not a native call", () => {
    expect(() => native(range(8), -1, XXH3_SEED)).toThrow(RangeError);
    expect(() => native(range(8), 1.5, XXH3_SEED)).toThrow(RangeError);
    expect(() => native(range(8), 2 ** 32, XXH3_SEED)).toThrow(RangeError);
  });
});

describe("the native sequence hasher", () => {
  const seq = createNativeSeqHasher(nativeLibrary())!;

  test("is found in this build and travels with the block hasher", () => {
    expect(seq).toBeFunction();
    expect(native.seqHasher).toBe(seq);
    expect(seqHasherOf(native)).toBe(seq);
    expect(seqHasherOf(portableBatchHasher)).toBe(computeSeqHashes);
    expect(loadNativeSeqHasher()).toBeFunction();
  });

  test("matches the spec §2.6 vectors; empty and single-block inputs", () => {
    const blocks = native(range(8), 4, XXH3_SEED);
    expect([...computeSeqHashesWith(seq, blocks)]).toEqual([
      9143094415614847814n,
      9510318385840434533n,
    ]);
    expect(seq(new BigUint64Array(0)).length).toBe(0);
    expect([...seq(new BigUint64Array([42n]))]).toEqual([42n]);
    // the input is not modified
    expect([...blocks]).toEqual([9143094415614847814n, 12124091508212882195n]);
  });

  test("agrees bit for bit with the portable chain on random block hashes (lengths 1..600)", () => {
    const SEED = 0x5eed_2611;
    let x = SEED;
    const rnd32 = () => {
      x ^= x << 13;
      x >>>= 0;
      x ^= x >>> 17;
      x ^= x << 5;
      return (x >>>= 0);
    };
    const lengths = [1, 2, 3, 16, 64, 65, 512, 600];
    for (let k = 0; k < 40; k++) lengths.push(1 + (rnd32() % 300));
    for (const n of lengths) {
      const blocks = new BigUint64Array(n);
      for (let i = 0; i < n; i++) blocks[i] = (BigInt(rnd32()) << 32n) | BigInt(rnd32());
      // edge words: all ones, zero, sign bits
      if (n > 2) (blocks[1] = (1n << 64n) - 1n), (blocks[2] = 0n);
      expect(seq(blocks), `seed ${SEED}, n ${n}`).toEqual(computeSeqHashes(blocks));
    }
  });

  test("works on a subarray view (offset into a larger buffer)", () => {
    const all = native(range(400), 4, XXH3_SEED);
    const view = all.subarray(5, 5 + 64);
    expect(seq(view)).toEqual(computeSeqHashes(view));
  });
});
