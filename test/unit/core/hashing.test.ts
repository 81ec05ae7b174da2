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
  xxh3_64,
  type BatchBlockHasher,
  type SeqHasher,
} from "../../../src/core/hashing.ts";

const utf8 = (s: string) => new TextEncoder().encode(s);
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe("spec §2.6 vectors", () => {
  test("XXH3_64(b'test data', 1337)", () => {
    expect(XXH3_SEED).toBe(1337n);
    expect(xxh3_64(utf8("test data"), 1337n)).toBe(13226331709069118873n);
  });
  test("tokens 0..8, bs=4: block and sequence hashes", () => {
    const blocks = computeBlockHashes(range(8), 4);
    expect([...blocks]).toEqual([9143094415614847814n, 12124091508212882195n]);
    expect([...computeSeqHashes(blocks)]).toEqual([9143094415614847814n, 9510318385840434533n]);
  });
  test("tokens 0..9, bs=4: the partial block is dropped", () => {
    expect([...computeBlockHashes(range(9), 4)]).toEqual([9143094415614847814n, 12124091508212882195n]);
    expect(computeBlockHashes(range(3), 4).length).toBe(0);
  });
  test("LoRA seed and LoRA block", () => {
    expect(xxh3_64(utf8("adapter-a"), 0n)).toBe(8842669519798866845n);
    expect(loraSeed("adapter-a")).toBe(8842669519798868182n);
    expect(loraSeed("")).toBe(1337n);
    expect(loraSeed()).toBe(1337n);
    expect([...computeBlockHashes(range(4), 4, { loraName: "adapter-a" })]).toEqual([6665157333201000639n]);
    expect([...computeBlockHashes(range(4), 4, { loraName: "" })]).toEqual([9143094415614847814n]);
  });
  test("cache namespace [newer]", () => {
    expect(blockHashSeed(undefined, "tenant-a")).toBe(1948188790972764086n);
    expect([...computeBlockHashes(range(4), 4, { cacheNamespace: "tenant-a" })]).toEqual([17009624042690211646n]);
    expect(blockHashSeed("adapter-a", "tenant-a")).toBe(10790858310771630931n);
    expect([...computeBlockHashes(range(4), 4, { loraName: "adapter-a", cacheNamespace: "tenant-a" })]).toEqual([
      8269515957840517240n,
    ]);
  });
  test("mm block: tokens [0,1,2,3], bs=2, block 0 has mm_hash 42", () => {
    const mmInfos = [{ mmObjects: [{ mmHash: 42n, offsets: [[0, 2]] as const }] }, null];
    expect([...computeBlockHashes([0, 1, 2, 3], 2, { mmInfos })]).toEqual([6100948656312251355n, 10731123482949079648n]);
  });
});

describe("computeBlockHashes", () => {
  test("block size 0 gives no blocks", () => {
    expect(computeBlockHashes(range(8), 0).length).toBe(0);
  });
  test("mm hashes are sorted ascending (unsigned) and offsets are ignored", () => {
    const toks = range(32);
    const a = computeBlockHashes(toks, 16, {
      mmInfos: [{ mmObjects: [{ mmHash: 2n ** 63n + 5n, offsets: [[0, 1]] }, { mmHash: 7n, offsets: [] }] }],
    });
    const b = computeBlockHashes(toks, 16, {
      mmInfos: [{ mmObjects: [{ mmHash: 7n, offsets: [[3, 9]] }, { mmHash: 2n ** 63n + 5n, offsets: [] }] }],
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
    expect([...computeBlockHashes(toks, 512, { mmInfos: [{ mmObjects: [] }] })]).toEqual([...plain]);
  });
  test("large blocks with MM go through the long path", () => {
    const toks = range(512);
    const h = computeBlockHashes(toks, 512, { mmInfos: [{ mmObjects: [{ mmHash: 1n, offsets: [] }] }] });
    const bytes = new Uint8Array(2048 + 8);
    const dv = new DataView(bytes.buffer);
    for (let i = 0; i < 512; i++) dv.setUint32(4 * i, i, true);
    dv.setBigUint64(2048, 1n, true);
    expect(h[0]).toBe(xxh3_64(bytes, 1337n));
  });
  test("number[] and Uint32Array inputs agree", () => {
    const toks = range(100).map((i) => (i * 2654435761) >>> 0);
    expect([...computeBlockHashes(toks, 16)]).toEqual([...computeBlockHashes(Uint32Array.from(toks), 16)]);
  });
  test("every block equals xxh3 of its u32 LE bytes, for many block sizes", () => {
    const toks = Uint32Array.from(range(2100), (i) => (i * 2246822519) >>> 0);
    for (const bs of [1, 2, 3, 4, 5, 8, 15, 16, 17, 31, 32, 33, 60, 61, 64, 100, 256, 257, 512, 1000]) {
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
    computeBlockHashesWith(fake, toks, 16, { mmInfos: [{ mmObjects: [{ mmHash: 3n, offsets: [] }] }] });
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
    expect([...computeSeqHashes(all.subarray(1))]).toEqual([...computeSeqHashes(BigUint64Array.from([8n, 7n, 6n]))]);
  });
});

describe("sequence hasher injection", () => {
  test("seqHasherOf: a block hasher's own sequence hasher, else the portable one", () => {
    expect(seqHasherOf(portableBatchHasher)).toBe(computeSeqHashes);
    const own: SeqHasher = (b) => b.map((x) => x + 1n);
    const withOwn: BatchBlockHasher = Object.assign((t: Uint32Array, bs: number, seed: bigint) => portableBatchHasher(t, bs, seed), {
      seqHasher: own,
    });
    expect(seqHasherOf(withOwn)).toBe(own);
    expect([...computeSeqHashesWith(own, BigUint64Array.from([1n, 2n]))]).toEqual([2n, 3n]);
    expect([...computeSeqHashesWith(computeSeqHashes, BigUint64Array.from([5n]))]).toEqual([5n]);
  });
  test("results own their ArrayBuffer (u32 views need no copy)", () => {
    const a = newU64Array(3);
    expect(a.length).toBe(3);
    expect(a.buffer.byteLength).toBe(24);
    expect(computeSeqHashes(BigUint64Array.from([1n, 2n])).buffer.byteLength).toBe(16);
    expect(portableBatchHasher(Uint32Array.from(range(8)), 4, XXH3_SEED).buffer.byteLength).toBe(16);
  });
});

describe("U64Slab", () => {
  test("pieces never overlap, a full slab is replaced, large arrays get their own buffer", () => {
    const slab = new U64Slab(256, 64);
    const pieces = Array.from({ length: 20 }, (_, i) => slab.alloc(1 + (i % 8)));
    pieces.forEach((p, i) => p.fill(BigInt(i)));
    pieces.forEach((p, i) => expect([...p].every((x) => x === BigInt(i)), `piece ${i}`).toBe(true));
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

describe("reference XXH3 (libxxhash) vectors", () => {
  const buf = Uint8Array.from({ length: 10000 }, (_, i) => (i * 151 + (i >> 8) * 7 + 13) & 255);
  const seeds = [0n, 1337n, 0xfedcba9876543210n];
  const rows = BYTE_VECTORS.trim().split("\n").map((l) => l.split(" "));
  test(`all length classes, ${rows.length} lengths x 3 seeds`, () => {
    expect(rows.length).toBe(307);
    for (const [len, ...hex] of rows) {
      const n = Number(len);
      const data = buf.subarray(0, n);
      seeds.forEach((seed, s) => {
        const got = xxh3_64(data, seed).toString(16).padStart(16, "0");
        if (got !== hex[s]) throw new Error(`len ${n} seed ${seed}: got ${got}, want ${hex[s]}`);
      });
    }
  });
  test("unaligned input views hash the same bytes", () => {
    for (const n of [3, 7, 15, 100, 200, 241, 1000, 1025]) {
      const copy = new Uint8Array(n + 3);
      copy.set(buf.subarray(0, n), 3);
      expect(xxh3_64(copy.subarray(3), 1337n)).toBe(xxh3_64(buf.subarray(0, n), 1337n));
    }
  });
  test("token blocks (bs 16, 32, 60, 64, 100, 512) with base and LoRA seeds", () => {
    const toks = Uint32Array.from({ length: 1024 }, (_, i) => (Math.imul(i, 2654435761) ^ (i >> 3)) >>> 0);
    const blockRows = BLOCK_VECTORS.trim().split("\n").map((l) => l.split(" "));
    expect(blockRows.length).toBe(12);
    for (const [bs, seed, ...want] of blockRows) {
      const got = portableBatchHasher(toks, Number(bs), BigInt(seed!));
      expect([...got.subarray(0, want.length)].map(String)).toEqual(want);
    }
  });
});

// Generated once with Debian libxxhash-dev 0.8 (XXH_INLINE_ALL, XXH3_64bits_withSeed);
// input byte i = (i*151 + (i>>8)*7 + 13) & 255. Columns: length, then the hash (hex) for
// seeds 0, 1337 and 0xfedcba9876543210.
const BYTE_VECTORS = `
0 2d06800538d394c2 d1f3e77444430ab9 e2bda2b8c0a330da
1 8a21d78b1538b1c0 84f61e09b2a86fdf a8a4ad4fbfa06cdd
2 5122364ad5fd9b68 788fc51321ecbaba ea57fc997f369e39
3 f4296bccbf224f3e 1eefb9df15abc3ce 62ddf4e560b47dac
4 a7059cc2ae9ccb41 d498a756901e0cdb ae7eb0f4bdadedbe
5 2b938451e960a731 d237a744efa37d55 50e18da618ff62cd
6 84f458511ed01a2c 928cca19f24797e6 e060dc9757dbe78f
7 073b78b0b083f974 3a1699413fb265e3 387cb3e2091710c3
8 1f66afaefe016d44 4211f4c17a75a361 5f941b8eddebe1de
9 76f8eff9ebbc0239 cb5b0c62bb6aa055 b564c0c9bb3ce5c8
10 0256da8f7f8e641a e30c77a3280c3d09 e61268e7a794daf4
11 88b7170c2ca249de b081edb82f5cbc05 52bf53f3048df970
12 b144eb6a71f86161 2a19864851726f29 0b0b983b00022a9a
13 de537f6d9625f653 2bd21109aa212ede c5be032449e2902c
14 85bcbc3e1ecc555b f3f4ae9a10b9f140 c5278c849cec07bc
15 95e113ab75fe359b e3d01a4ee5e30ed2 cf85a7e96bdc717b
16 014fcb1d66150597 4acd2bb29fc4c3ea 10394e8bbbb7906b
17 220bfd7be1db1236 bdf5075642091226 712b4f23af6aedd6
18 dbc9658fb1b3e21c 41dda76bb68ce7ab 169bc9be045b89b6
19 e41af531022495cd 9529024549547780 0e785c441d9d7f18
20 160363de58387abf db877d5a027a6c4e 10f65083ba4db654
21 15ec63f86be4d7b9 de8b7a6a3bf48f4b 53ca30e481362dbe
22 7a87561373c822b0 2ec2b8eb6e38240e 21b576a56938a68d
23 fd0c7671c6be997d a3c8750059e3e820 8282dfdd2099c753
24 e90a06baa3e0c9d8 14d77b709df7052d f6510a807ccd5533
25 35e4866fd98724c3 1bdbe54f42f6070f 6ded23aed77577c3
26 1037bb4ce25a59aa fe6a0d03786b281f 867e90ed71ec637a
27 0f0c130e37b998a3 6918912a157cf3fd c24582dda98d0259
28 bc595475344cb070 16ba53b1f1b16a80 760a7adfd9676567
29 50d671b1d12e851f 296b38084707ca12 b96b4d9180af6ef8
30 bd4081a6f1daf69d e5158f9be075e4cd e24a2182907c5a40
31 b4580a3347638086 69505a404a9e7c50 7d568f49b7a19668
32 2403e489f56d38ca 2d627cf461c29cc7 3184bb1841402a67
33 1f8835e7086bd6c7 20e5857fdb4d0585 83b998db2d92fb37
34 948e1e5b255c6aa0 bf2692dad242a1ea cf32d2e26539c272
35 5ce7cf68074c8cdd c52979912016493d 8a9620ae37347033
36 571373b8d0a78ee4 7bb4df35d862f6f8 6e723365af1d64c2
37 73b2707e06ab9821 92050ba06fd08de5 8a33ba2b2b90fde1
38 62f13e8af9b1378c 3a06fbac3939757f 270f3476455ebf1d
39 840b3ee1b1ea135b 6086679b47749c26 103ec000decc1ced
40 2f1c4a0730871fcd 610638898013373b 029a864baffdc43c
41 25071d70bb72ee03 b653d9dafb53dcab b27250873c61c3f0
42 b6e4d3581d7fb4b3 6aa46e571b5115c1 94ce4129a049b22c
43 daba9eea61746e6b 2103b66dab845360 d7083926e6e384e6
44 fb6f02d4e5ea67c7 29cf301134d21e3a c5f0804a79f07cbb
45 48bf4083d87ec0e9 b5a0977eea8262f7 3e4a9c211a57d7a7
46 f4ea51de64d68f70 e751e9e892cd6a6c 9f45d9c2b5eeea3c
47 286e4b226b7610b5 1617c4753c18f317 a874278655d939fb
48 cb9b13cdf5ebc390 e4b466a198520fbf 5aa90a84aeb7e72a
49 0fc5aedaca15fb7f 4827f8a843836940 c0ef565087fdc157
50 992eb16600807f1a 3feec41ee19c9ca3 92de779cd7a5ad14
51 e0eacbf9c94294fb cccd73ec49d6d4c4 61da6ea8d1b8dcb0
52 056a74f690053d1d 9bbb13d0b1400696 c3469b327e3ca833
53 d02aaf680c12af60 c094f7b96ce047b7 db1f8f709497013f
54 d9a57323a37b672b 818c74b7257fd6b3 47620e31f58c7fa2
55 a2dd33f9e427b7c9 30885fdeab8b0ee4 eabc612478c661f1
56 edf8d7224b94507f 80b2275d0f3a8c08 f04e1ce947e16742
57 9b9050ee0add0dc8 7f1ee3e7d6e68f68 d1727e92f174421c
58 d5403d0af28a7a3e 204714d8cf8c9e27 34afbb3f0a07c63d
59 01aa1626629da392 f1b0d5f938bd2c59 543077f115f5c561
60 e59834eb0d1d3c91 4d6e178e1386c028 c10d8ba23a091003
61 00cccd52d8539e34 9f644a0ca76fc91a 79e1e23649fff0fe
62 97d29a6090db0182 23b2a673aeadcda7 3d9e15fc5308e321
63 d96ff3ad652eeb15 9ac9551a6ad2a430 5df5fc973f1a11b3
64 b621cc493c9a96bf 16193622aca745fe 9b0f628da32a3604
65 486b78c8592de78a 477b000414f255f7 028ee6080b3d0863
66 606815fbc3f0fadc b536cf0e432008d1 e1f82090c833f63b
67 5a3adec325835b32 49fb161ce12050ac 8729ebe6c3b6d40d
68 eeccb1aa71b9b984 cb0fea30649cd836 2f8347997414674c
69 81741e2a7f6b9e82 0d8875ebd336e5a2 3bfcb85263f3aa71
70 88672154aa32a188 c7361fc49a23ee7a 77ef1b156c35d970
71 ef10b3312d7a6d7f 99f42e64cb2e6cc7 a3689d1c0e8886d4
72 371ab42ce3684e70 a0e0bae73986c90e 3170c57a2bdb7efb
73 4806da2b886b4819 7229c287c65483a6 ae862734f2d28899
74 34d32f7dc340e331 6898c748c29a7268 7d22ed2297c912b7
75 2cad368ebdfd98df 2ac69c5d989f671a 9fc4590151c206a4
76 e3bed9462e1919b8 aa6a269b42d4795d ee8a0058a175acaf
77 aecd2e5b4787a7ba da64897575257645 3cad633d2ce6bbdc
78 4068fe4cde320a47 209c2a61987f45d6 48a7b7ae15a10f64
79 f870f1e0ae78faf5 da14fe157114bc1c 0b3e3a7b373d2929
80 e03d97b7e052c43e a63b34c27efd624c 1110eaf181b537c9
81 20b781fc4fb0ce5f 2feca7aeb0e5ff75 7fe971f3890a0436
82 a0d3f4dd0f8ec954 8019615309b8435a 2b843d3e2cb42a37
83 ffb07235828ad740 6783306c759a8bf0 64d546b3738e8ecb
84 bbedf850f67fd69e 978820866b720e66 c529a8bf9f5680b4
85 b525475478443798 7016d82134fd03fc 06dfc77cb150499a
86 c4ca18bf14936c5e 6a09a16d038f94cc 4d1a317a8906043c
87 13bcdab7ebcd565c ed456cc6f59a7138 609e3144d1e4c9dd
88 09fe94a3cd4e65a1 b234f3778ed06f7c cd2f21b1f9457605
89 f3f92d355f2c1522 98acf2c317448c79 84696229e20da06f
90 cf08a719db14fd05 09b22dfd1d9733a4 1f8d732282d0ba25
91 333ea062a0ffed79 8f6792b842227635 6365ed4fc3b77a51
92 3784523869e808eb 27c79cc33de46b52 f563643dfb52b510
93 772546c1cd5ad8da 5180ecceaf08c00c 8036fc6dc3d591a8
94 aceb4a2d736be911 4fe2cd6147d2b23f 9499a2ca84bbfccd
95 4f4b4efb488478a9 1f86a0a1cfd2286a ed3cb2cfdaf3bab3
96 8ea24e5ebc2f8975 ecb18951289a6aad 836d16d15b3d04be
97 bf829ff2ad072e11 2fc97934321a7260 7fde3d8cda8ee82e
98 c7fa72fd32944475 3700545bed17abd4 738927ca852287fc
99 da327b71e6e826cb ced5c2edd7707f43 153297df95709678
100 8c5d579571fd31ad 3ccfa3d4c9c80cfb 225a078a8c876fa7
101 ee853c705e7273a1 c98bd349f751a6c7 664274a51a4f41e0
102 763068c1e4656bba 2c54178ac78eb9bd 0a1e68e197bbdc98
103 8ca2926eeb9b2224 6e93bcc3c389219f a0575a84918b6735
104 8b2a1ea6a09325a2 e8a4d4e12e9d041d aff32306faa523f5
105 bac09dc74e29b627 91623b4b8158b675 3ab8797baf9b131e
106 39317af582473ee1 1a43484447a5be63 0e8f441c401bccba
107 fc7ae752bf8234dd 72fe6723271dea4d 590713aef284bc18
108 638af2e80e9b4d3e 4596cb3a3ba40061 4b9f3f0deb6f98a0
109 de3cd6f7ca19c3ec a991c9dbaa2dc683 551ab70e8e0966c4
110 226b35983c5635c2 a58e54ed38dd5a32 64719c3607f7e38b
111 a6e5311df155159a 555acbf7991e4d1c 1a9b189fdf439414
112 8edb370718270875 50f1c565702a44ca 8c4e419ff0c77607
113 8c39df700a53be11 d107708caf2d0245 395c612e29f9f70a
114 1c87c890e1bff4c2 7214f723965663b2 e4b11779dde018d6
115 c8ca59e2cdf62fa8 2e9438f82ef102fa be2ad5a7325a2940
116 85582bcaad176012 ab5ff3c98b0e7731 9f8d6a87db47afe7
117 e574e71bb41e7b3f e1fcdd419ff4f110 c70135f3bd671adb
118 072a84dd99099ccc f4d948b2c57bee53 d042a137b855ce37
119 618bfae89d9d0dee 8e850104d6bb8d4c c4aec8a6412c1c5b
120 01654fd4273bfc3f 155c4763791e74a2 b083cadb6a1d0cc7
121 896b55d775fd1a4b e83d582b05f34210 7e5982e152bebb87
122 a5fb48e4dc933326 6ff90a45866c2373 d5dfb9d4016ebf2a
123 17b7d73b953114d4 d57e447a1f49df74 d5a21ec9a36bbbb0
124 ffd66bf7ddbfbbe7 3cf9f1700cdc6a63 32c8ea13fa84bbcd
125 a6a5c961c9897526 9eef61b6a022d53e 0dfaa70cf40bd11b
126 21b07bc9cf1891c6 5cbf98e8728e05f2 dea391c1a54f8e8a
127 4d9f6ea122c0edfb 557497f7e1bc22eb 8fdf087241a205ad
128 a324cbc5751e449d 60f800d1aaaffc64 27d1a07b1fee9fca
129 a5d4835eac26da67 bea328206d22b2a5 8b365816fc7e41b2
130 73bc1cc51dba30a6 d129c768babb1d5b cc35947d369f43e2
131 49276bb09c3f5518 dfd06250a732e12d ec2c90a64111be7e
132 fb64944abb722ecf 104885474a573470 02743cc6732f4d38
133 e5a04de74ee8db59 b88805762a23b8f0 4780934f65c48315
134 beb633ea219f96ee 44f513748dd0f9e2 798debc64865bbeb
135 a89d58ec918029dd 511b60e5a5fd1cdf dce487157e69fb63
136 a3d541d38bbbd688 759e152316c2d707 fbcfb657cc0a0993
137 acc2f6d021132156 c73a95771658b19b 969521c1ae984706
138 c397e7198b4a05b5 5cb9c6da93240a20 6e8e0c9e69f1d814
139 fcc147052afa4668 ff36f8eefd725d0a fca093c2376c16a7
140 3a27ce30bbea3b7b f08f4d7615784faa 4964677147f9fa41
141 115f55ee0a15b177 be49418a89ab143b f0ed9bdba2ab0e08
142 77b7d0b67e30d303 34297cc947a1a132 4174d0cc3330912d
143 5d34bc7f2e0298f4 02833a54e2bdbedd 5c00badd92874c2e
144 97a0dccd3c674901 287e0e43f6d1e4d4 0312667a353959a8
145 4d0da96f978fba69 f312d4d05447c4e8 af2064b8fd198c56
146 b97bc6cc590a84e1 db767f766b07396b 81c268ec51baf5e5
147 b81d29f9584ac405 397a49b504c661b1 6094497722454271
148 c23209555ef3bf64 e3214a4265e0f430 637e173e460db368
149 3ab2bc649d93c021 bde1db81d81c5b96 d3f1eb565a6d602a
150 9d6ea11676b9075d 53c345bb80fbd6e8 1afdcf8f1a50f7b2
151 30c4c3af4285175e ea8245aa6059296c b1a9869bcb7028f8
152 a5f386d930c87df9 a961f15d2d5f4c2b 8662b8e4ecb0daaf
153 a2238d4d8b3b7a00 a7672cef012f38e5 d9fd17f037fcb858
154 f44e32729d26249a d98992661e824fb0 bc11afa8d837edd3
155 25f9a14755958f85 afec299f936a615c 5c9b6f73b6f5a15b
156 faa1a8025d9a6819 93c034f0e06d0847 37325b6c296bb2ac
157 23d2fe2f2b5c8b09 4c58b1c210a670f8 743c0ae7d13287f5
158 ea2c2ddf7ec1e897 9d8751a6713b3d19 9cc8dee14a73fc41
159 c7597a63aaa30b21 e7b107cf1c1a324a fba6f428843edc92
160 c9b96eee16d3a4e4 b8786efa0dfeca9d 9be85165200b9ed3
161 6a7f0533678b4097 c13277988964463c 5ed32a25d681ff54
162 ea559f49c3269636 e318f2a8bfb6abc6 fa96d35cf4bd7c24
163 dfe68708cbbf6714 c4c079a340bf3874 09dd29707c70d5dc
164 9b129e6807d43c9a 9a41dd75b3f78daf 8237c1fea1a73514
165 9db741c85d6b5f2b b0d038f82cc10b10 73f3a61598f89eb2
166 bc9e8dea982f2fa6 7b3d04120816666c 822a52d1dcce954b
167 007d23f6e8b19030 f5a804a3cfece7a1 b32edf0ad6b7465f
168 a24a0d63a87e7992 dd747842b7d9a56c 74160f72ec068174
169 485f1afb2f3c99b8 cdbfd0bdd7e665b1 5aa84675c53d815a
170 7f503f6629af1cb9 8dd2a80ab2fd795f 85deb0e751e98fc4
171 e502347c20285c26 eb8106143ba147c3 f530dbed76d0fcd0
172 86298793c9d40ef6 b2994cec76157055 199da60eca2d2683
173 889f71d71b5cf5fb 3d661be9208f93f7 a93c0ff625f7ce72
174 6ae3014580bd3e30 b0adbd284d1b26cb 8f47892630bf2358
175 216ced961b0cda96 79c39d88d830933a 3269a4f3f4f6e62c
176 1a53d483c02948f1 1bdcc914c3d46263 782ac1dae35cd9d5
177 0a477a0a67387000 2287abc29290bbba 7e58746f9dc86041
178 45c5cd3aa80431b0 0833001980260277 7e5310b4339e13d1
179 f7ad2b264379b10d 8b564a9cc174f395 53717f3383159bc0
180 62b1efedf8e05190 4fb532a0dda337b6 e2b768080f621216
181 12c5e4391d7c8ced cf69b23b31fd6187 67fd191ac7411a67
182 8e377c1af47aa867 4785fefcda16b12f 441b4428b08d47f4
183 3ce1b4a89ccd6220 826777c0dca2a96a 6ed62f64a2d2676d
184 ad68ceaf4b55ccb3 56a6fa9b4a4ccf99 62648ee7c85fbf57
185 76e1d8e0a2f83fcd 9051087dbf0f8ce9 1e95c9139519e097
186 11b4a987e38f2f0f 78a9a55790466838 8092813fd7f5b6ab
187 fa8c2cc69df46eae 020f03238875ffb8 4243e433795f80f9
188 220e026845d2ca41 b025def4e00f9c15 e4f02f695d937920
189 aa49a88b3bea8993 b052a1143e6dc6e3 a566846ed70b239b
190 2c6b52474164f496 c40bfe75f9141fc9 6b0f613270e029c8
191 a56bca80701e5fc2 0f9e7b5d413ea52e 7afe51cb8dfaf0da
192 5517aeccca54cecd acb8f2bbe140dbd2 a5abcfe148911e93
193 6def9d24fd841f7d 1cd1b3ee42568703 400e55d96dfe53cb
194 58250c432eb395a7 2bd74a8e414fc09a 2e966dc2b01848a9
195 e7d3d72899a09f11 1372163452e8711f d98005a274cb6c6d
196 c47a0f96555c99a0 6aa717b083ca59a0 2a5c871d01ee32e3
197 199ced198d466ecb 4d8521b28a8bca4f df7333d388c7763b
198 47abe33b1777354d 114c3bda468b95ec f523dd8355cce384
199 f9d0856357068687 507e85b768834612 1cbff739b8fbc9a6
200 fdcab9ea0dd68f2a 2fe7e611193a2ca0 07b8839968d25616
201 0292aa5300e05449 628cbe6dbaaa2672 96a8aea006a33c1f
202 ee41bdfc7d6ce378 3889fd22f3d28e8f b37dd90bd0162aba
203 12d9dbd098a59d0e a719afe0d123140a 88cac629fc93db51
204 a9fe99b5c772248c 17987528d3e9ede1 0f6cca81634d61d7
205 300290f2c1c221d6 b720f2d3f2b1fd90 64e021f993b384fe
206 506fe01360a08dab 3cd898b8cf7361e5 27757f5b3ec95342
207 9c1ecf9e283b8d25 ad3856e5c087c6a4 04c8ba3879ae7536
208 b5d9afbcdb6789c6 39fa9127b5db6d2a 00171be19c43036d
209 b67487b150cdb15b 030d790d73203135 33863683de6cae3f
210 bd0eaec690ee4125 c1ad2eb1dd90251c 9d66566ad54a8bf1
211 64e10aafbc7c892f 52bb741665c297d3 1c4b91a08d4afc9c
212 981fb30193d19a30 21e723fb29863112 548e1000d005624f
213 a83d68629f174d8e cc2a405fbf365991 f6434184d8d11245
214 440e3a3ecddc6d53 b6c854f93eba0f07 5d5641b2369e66cb
215 06ef6cde18512b45 e93bbd98a5994352 b45690e1506c6dba
216 0c9c3b0a2c690005 b2d515dcf484c246 b8688055cb9009c5
217 897defe536be62d8 767a79cc63db8af8 991d233050058720
218 d281d77d74ac3e94 79bdb5828cf46d24 a6277c30be842bd9
219 f2721a14af049783 9cb0641da9323ecb 7a043cb831ca4d94
220 06d2f8043d340326 a3660022ebda2153 e5d7ed99b489e84a
221 f8fc1b067729dbc0 b21db8456eccfab4 924f45d668c5a71a
222 465c11b164630550 c5ae5988f7cfbdd8 96914f4766be865d
223 6f580cb8ae266a7f 60f41834490826eb a9fae27b3414828d
224 c13ceb055d90deca 4dda24193815acec ab0d5906368ccde6
225 9af50ea9c206c3a4 e11c48436aa4c728 5b73c7e1d783ed38
226 10a9f6c3e95f79a5 7b86464e7b868f2c 8a6517e4e642d1ec
227 ed2a9562d7af9c00 8169d82ad0acf79f 444fcf8ae1aa66c8
228 8881ce9a1be134cd 60edc9143ee3f00c de62d6e11bb756a2
229 eb0e09c013f45533 99295cb087d73f42 673ef3d06cdd258d
230 e5630d196e81a80d de9bde9d62ce4c29 4db1e12cbd24fe5b
231 1622c1a351011205 fe76b08a6d25ca2f 44c68555b6e77fa3
232 7f58680759a3e4f1 2928920df90ec921 0e0e992b0a2f9bc2
233 57dead38abc0112e 203aeb2b925514bd 032b572dd7c06779
234 4c0c6e2285a26a9d 7502cd261d781157 3a3243bc844208e5
235 c5056829aa011abc 29792e436f4b69ca d6659e13425667ce
236 884ba9b97a9adc1f 5a181f2a61690cc0 cf962d00b9d32872
237 4f9e85adbd93d718 2fc855bfbbd1206d f1af499d0b5e597d
238 50e05aebc6e967b7 3f08958bc057e8e2 62617a018091021c
239 606654312d766651 1ef114741fe06dff 5c8f746967321370
240 e4cbf74e9decc6cf 293e173de395ef7e a38c07058283830f
241 953b8c59317c2c88 0ae3d820856ae62d 87b852f60042940b
242 7f72bc53c94cc478 1b089186e7f8d63e 048f0c5e8a918d0f
243 fe8230efb69d774c 0d8da9c07350014c 1d31f3c6ae3d2c2f
244 add07590672a801f f2b28f19ed5ec3cf f8ffde50bde846dc
245 21c27296286c14c9 267de7d135424284 90ea9f462b510a64
246 fd4e6ac11104abe0 d7798c8654c756ef 73ed3b48b2654701
247 079a4f284c309a41 438a8f406bcda2b2 1c9d5abd9f2081d4
248 b7b138ee4ee8d7c3 2ecdce52a097b4d9 a652dbc45e1ad897
249 b77b525689859616 dd43611fa0beb138 d25a0d7be4790794
250 64a3b478aeba9018 f5b9fb4a5928c040 7a21c64ca66a672f
251 72d338092a64c8c0 8eef59d1348b78ed ba2d107b8b748729
252 9fe4ac069ad3dd68 47bdf3194b065926 3e7aa3ff730a86ac
253 0039378287f2ca2e 195c930b62c3f335 aaf2ac2a5f3a153a
254 003dfe5dd17470b6 378f85d266ff52f0 427ae38eb6ce48a2
255 b886973a88a7f68f 6a3eeb572807f113 ec878c7b337ac6d4
256 7e8fafc65de9d1bc 30a0b5c068f5c716 657657008227e703
257 b6287759e350b5a4 769df107960886d3 a352744e0363a2c5
258 38ef38aede1aa548 0ab8133e3e195c94 47a1e3ca78ec4ef0
259 18fc3487a782c19b 3ba613fd41cfe764 ddccfc75958bf611
260 8cd30da30faab605 f85d44f5e6a660bb ec28ab7b35e12dfd
261 dd4cd1d02e5ba459 03f615795f6866ad 537e2cb5fb8bd4ef
262 834ab490b619a594 cc9a22a499782d48 aadc30f2138649ba
263 040f2951e00700ef c7df571a13580a26 bb46efd2825ad2f3
264 50e9e35bcaa23c34 26f2c2e7ee7b0ad3 dc89d004c036961c
265 cdf2a5ce4f45a55a 158a496a645a6e1c 59903e39539d4a49
266 51cca9e11251063e 480f043d34ea1182 580990b3dda2278f
267 7061bbb6b1367203 b67ee2c91259668c b218e57d5879c89a
268 70bec872353021a3 73f58dd1c089b1e9 6e3a7a0f33381a08
269 c220898db29747de d4f0d683d035febb d773b636ef7d7269
270 ab58c2ed60b988e6 df59e031341954a6 4a23b0792505992a
271 d6dbc99766f05741 6ca9fe22fc3fa915 bb9108a2e30b2a1f
272 b6abfe4e2747710e 5074fd22fb5678fa 747c5030c0f0fb33
273 5bb66bcc64396632 6ca0c301d0a02ff5 517c323645f52c5c
274 87aecc02d13dd70d 085a3335223af6d9 d5c91d91df5660b4
275 ea32455fd4a9ccff 041ee002de5ed9ad 29bb847d56f66b71
276 6ae28905cd99a674 f3cabde30ba618af dc6de2014b7d1058
277 dc1e070bd56d7a31 ad043b3b53766243 8cd0934d5c2bddcd
278 892f312993cd2ca0 06fb1d4aeb0f8e74 8a140a2f7b0287e9
279 bfa38a787ffeb84d 50209355f4e78cf2 f5ec6d60482e6f4e
280 1a53afbaf1fd00c5 3d6712a3cc738b0b 580454284aad98e6
281 81767a3ac4a0143b 78f7b45fd54a818e a0a40b3660faeb9d
282 fa8583b3b0f879e2 8d93c9a934a4e0f7 8fb50e23610d734e
283 1ef02e7b851b62b7 e8fd649048063272 aecc7ea75d0ca53d
284 9ceacd30b624c1bb e80f2bca48b907b3 c9bb6d846c9a3b20
285 de05278d960af512 2e04378ffcd57b7b 2bbfc1e182629317
286 fbbaefd876a64007 5b3fc258e396fbcc b04847a2fd4d8afe
287 05d2fe38db9f33da eefce5e102553f5e 239baf806dc95064
288 313e9591b7dc2252 358fc46fe57e8389 bcb22c3aaf2d056f
289 1261f55331c49f06 363de64764a1d1c5 ddc5216cef47d1db
290 a500e7b81c1cfb05 ef5dca9836e16d7c 4853dd99d57a7b53
291 602ca69f12d3cb53 c77fa2f1380c4329 e7d88a3563cae0fb
292 0ef54b0723b1a381 2b30f6c1d830cbd3 cf5e6f4b81a95a02
293 e9ba83c680cd7436 2de9757fb87ee137 f496dfc4c40bcbf3
294 c3a24ccd8b860c7f d389d435cf27b088 e9def7f8a87a8068
295 23fd0042dcf743c8 fa45a4bc18a673f8 a62280ebd8061177
296 2baf8ec8e34bd9df 698f734969739bc5 b2415fdf1c2a0f46
297 cc28e35c7ff7fd49 9b7195837e0f4cfd d8ed7a68ea3e3f6a
298 7f60fac4b0452efb 6d988f53e4a3bf4f 67d69c834c03c6ea
299 540f4c8e90be29fe 60a100af7ab90bcc c5f2e0ee118f2f1f
300 4a2c7dbbd284ab2e c9b03f44cdc038f9 c77266d12c4735e7
1000 68957f2f2ce0efd9 0631ecdb2b5bf809 c150e7c9d5c387e8
1024 32c32dbd06c989b5 faf26236931cfe1b b5af1dfd286ffb49
1025 780af6a9fbdec82b b9dad673f113ff94 51441a2f12390cd5
2048 ed362ac9d0a2e5da 4e114e1d80b54a0f a8f6584e1719f912
4096 ad1f5a44e5a56b1b 698975fa3ae8ea37 5b7d00d5f2b535de
10000 c31afcf17255f2d9 f20f5099c391bece ffadb5bd447468d4
`;

// Same generator: tokens t_i = (i*2654435761 mod 2^32) ^ (i>>3) as u32 LE, hashed per block
// (at most 8 blocks of the 1024 tokens). Columns: block size, seed, then decimal hashes.
const BLOCK_VECTORS = `
16 1337 866626788185778904 11537806110778651027 10575899696773763212 16568872294359938497 7659957157702065354 10826535457351001460 3341803925292637255 4661142398068826467
16 8842669519798868182 6580784996694151961 15247032490348180134 5054894209369685156 7810583911121168037 16854959999550239553 2442563747673865944 17863028396697576590 12305826594042615662
512 1337 266414031441676070 4924294657710795293
512 8842669519798868182 10705331419731468826 15464204031735434157
32 1337 14970453008548055097 13936045906930106175 12604629698162189773 18263804145991124007 10251639300546959473 4184487546755568256 1135100550928567041 12408221033778616776
32 8842669519798868182 6612409441663782730 16699204047646281232 16467264582259452778 15276900076392846582 18175805560544369440 11859139553902551960 13844630613777013147 1823213220315385877
60 1337 9515375539876504662 1587753057941356651 4930975192625062302 11535830162126983369 11287334659463646193 7408791699370430582 3603500124717553405 15605091287429271827
60 8842669519798868182 11024091450027924260 1928832427717716646 15981245298054129166 7425856897678846843 4729555732487671853 3738976302241208900 13316233139378267970 6261737454452524564
64 1337 14190741998780874296 2290166758526500712 9912724302232406568 18252530377807807060 8168427981194856555 9572656543117399351 14920756605218497674 472518793894457035
64 8842669519798868182 11313787229006101861 12549962597739662971 3264982041093057316 18268984857092233915 5410931684763835676 7992510489586482624 17812312690331682449 17164291209293739575
100 1337 5201119450051310595 16936529868903715905 3164338321007132078 691188318993699370 4526659456028574457 12606506384775090363 10712080230694801765 4532028912522773891
100 8842669519798868182 11179239661919684513 8062059686166892559 2926548511338339522 6625772628564431624 1086465679697095346 9383669441031409589 14447721199126240571 8488357346811635469
`;
