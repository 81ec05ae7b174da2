/**
 * vLLM KV event batches → RouterEvents. The payloads below were written by msgspec 0.22's
 * `msgspec.msgpack.Encoder` (the encoder vLLM's ZmqEventPublisher uses) over vLLM's own
 * struct declarations — `EventBatch(array_like=True, omit_defaults=True)` and the tagged
 * `KVCacheEvent` subclasses, positional (`array_like=True`, vLLM ≈0.10) or map form (newer,
 * tag under "type"), with the extra fields of each version — and pasted here as hex.
 */
import { describe, expect, test } from "bun:test";
import { computeBlockHashes } from "../../../../../src/core/block-hash.ts";
import type { RouterEvent } from "../../../../../src/core/events.ts";
import {
  bytesToU64,
  decodeVllmBatch,
  newVllmDecodeCounters,
  VllmDecodeError,
  type VllmDecodeOptions,
} from "../../../../../src/runtime/bun/zmq/vllm-decode.ts";

function hex(s: string): Uint8Array {
  return Uint8Array.from(s.match(/../g) ?? [], (b) => parseInt(b, 16));
}
const range = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => a + i);
const U64_MAX = 2n ** 64n - 1n;
const W = 77n;

/**
 * ts=1757500000.25, dp rank None (msgspec still writes the nil: array_like never omits):
 * BlockStored([2^64-1, -5, 123], None, 0..48, 16, None, "GPU", None),
 * BlockStored([sha256(b"block")], 123, 100..116, 16, lora_id=7, "GPU", "adapter-a"),
 * BlockRemoved([2^64-1], "GPU"), AllBlocksCleared().
 */
const V1_POSITIONAL =
  "93cb41da305498100000949cab426c6f636b53746f72656493cffffffffffffffffffb7bc0dc0030000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f10c0a3475055c0c0c0c0c09cab426c6f636b53746f72656491c420496aca80e4d8f29fb8e8cd816c3afb48d3f103970b3a2ee1600c08ca67326dee7bdc00106465666768696a6b6c6d6e6f707172731007a3475055a9616461707465722d61c0c0c0c094ac426c6f636b52656d6f76656491cfffffffffffffffffa3475055c091b0416c6c426c6f636b73436c6561726564c0";
/** vLLM's int mode of sha256(b"block"): int.from_bytes(digest, "big") & (2^64-1). */
const SHA_BLOCK_U64 = 6920916392769383918n;

/**
 * Map form (newest declarations, event_version omitted as a default), ts=2.5, dp rank 3:
 * BlockStored([11,12], parent 10, 200..232, 16, extra_keys=[[sha256hex(b"image")], None],
 * group_idx=0, kv_cache_spec_kind="full_attention"), BlockStored([21], medium "CPU"),
 * BlockStored([31], group_idx=1), BlockRemoved([11], "GPU"), BlockMigrated([41]) (unknown).
 */
const V2_MAP =
  "93cb4004000000000000958ba474797065ab426c6f636b53746f726564ac626c6f636b5f686173686573920b0cb1706172656e745f626c6f636b5f686173680aa9746f6b656e5f696473dc0020ccc8ccc9cccacccbcccccccdcccecccfccd0ccd1ccd2ccd3ccd4ccd5ccd6ccd7ccd8ccd9ccdaccdbccdcccddccdeccdfcce0cce1cce2cce3cce4cce5cce6cce7aa626c6f636b5f73697a6510a76c6f72615f6964c0a66d656469756da3475055a96c6f72615f6e616d65c0aa65787472615f6b6579739291d94036313035643663633736616634303033323565393464353838636535313162653562666462623733623433376463353165636134333931376437613433653364c0a967726f75705f69647800b26b765f63616368655f737065635f6b696e64ae66756c6c5f617474656e74696f6e88a474797065ab426c6f636b53746f726564ac626c6f636b5f6861736865739115b1706172656e745f626c6f636b5f68617368c0a9746f6b656e5f696473dc0010000102030405060708090a0b0c0d0e0faa626c6f636b5f73697a6510a76c6f72615f6964c0a66d656469756da3435055a96c6f72615f6e616d65c089a474797065ab426c6f636b53746f726564ac626c6f636b5f686173686573911fb1706172656e745f626c6f636b5f68617368c0a9746f6b656e5f696473dc0010000102030405060708090a0b0c0d0e0faa626c6f636b5f73697a6510a76c6f72615f6964c0a66d656469756da3475055a96c6f72615f6e616d65c0a967726f75705f6964780183a474797065ac426c6f636b52656d6f766564ac626c6f636b5f686173686573910ba66d656469756da347505582a474797065ad426c6f636b4d69677261746564ac626c6f636b5f686173686573912903";
const IMAGE_HEX = "6105d6cc76af400325e94d588ce511be5bfdbb73b437dc51eca43917d7a43e3d";

/** The original vLLM form: EventBatch without dp rank, BlockStored(block_hashes, parent, token_ids, block_size, lora_id). bs 4. */
const V3_ORIGINAL =
  "92cb40080000000000009196ab426c6f636b53746f726564920102c098000102030405060704c0";

/**
 * Positional with the newest declaration order (event_version=1 before extra_keys), ts=4:
 * BlockStored([51], block_size 32), BlockStored([61,62,63], 0..40, 16) (tokens run out
 * after 2 blocks), BlockStored([71,72], parent 71, …) (a repeated hash).
 */
const V4_EDGES =
  "93cb4010000000000000939fab426c6f636b53746f7265649133c0dc0020000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20c0a3475055c001c0c0c0c0c0c09fab426c6f636b53746f726564933d3e3fc0dc0028000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262710c0a3475055c001c0c0c0c0c0c09fab426c6f636b53746f72656492474847dc0020000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f10c0a3475055c001c0c0c0c0c0c0c0";

/** BlockStored([1], None, [0,1,2,3], 4, None, "GPU", "adapter-a"). */
const V5_LORA =
  "93cb4014000000000000919cab426c6f636b53746f7265649101c0940001020304c0a3475055a9616461707465722d61c0c0c0c0c0";
/** BlockStored([2,3], None, [0,1,2,3], 2, …, extra_keys=[[("000000000000002a"+"0"*48, 0)], None]). */
const V6_MM =
  "93cb4018000000000000919cab426c6f636b53746f726564920203c0940001020302c0a3475055c0929192d9403030303030303030303030303030326130303030303030303030303030303030303030303030303030303030303030303030303030303030303030303030303000c0c0c0c0c0";

function opts(blockSize: number, firstEventId = 0n, dpRank?: number): VllmDecodeOptions {
  return { workerId: W, blockSize, firstEventId, dpRank };
}

function storedOf(e: RouterEvent) {
  if (e.event.data.type !== "stored") throw new Error(`expected stored, got ${e.event.data.type}`);
  return e.event.data;
}

describe("decodeVllmBatch, positional form (vLLM ≈0.10)", () => {
  const c = newVllmDecodeCounters();
  const out = decodeVllmBatch(hex(V1_POSITIONAL), opts(16, 1000n, 5), c);

  test("every event becomes a RouterEvent with dense ids from firstEventId", () => {
    expect(out.ts).toBe(1757500000.25);
    expect(out.events.map((e) => [e.workerId, e.event.eventId, e.event.data.type])).toEqual([
      [W, 1000n, "stored"],
      [W, 1001n, "stored"],
      [W, 1002n, "removed"],
      [W, 1003n, "cleared"],
    ]);
  });

  test("a nil data_parallel_rank falls back to the configured rank", () => {
    expect(out.dpRank).toBe(5);
    expect(out.events.every((e) => e.event.dpRank === 5)).toBe(true);
  });

  test("engine hashes pass through as u64: uint64 max, a negative i64 reinterpreted, a small int", () => {
    const s = storedOf(out.events[0]!);
    expect(s.parentHash).toBeNull();
    expect(s.blocks.map((b) => b.blockHash)).toEqual([U64_MAX, U64_MAX - 4n, 123n]);
  });

  test("tokens_hash is recomputed from token_ids with the worker's block size", () => {
    const s = storedOf(out.events[0]!);
    expect(s.blocks.map((b) => b.tokensHash)).toEqual([...computeBlockHashes(range(0, 48), 16)]);
  });

  test("bytes hashes are read as vLLM's int mode; lora_name salts tokens_hash; lora_id is ignored", () => {
    const s = storedOf(out.events[1]!);
    expect(s.parentHash).toBe(123n);
    expect(s.blocks[0]!.blockHash).toBe(SHA_BLOCK_U64);
    expect(s.blocks[0]!.tokensHash).toBe(
      computeBlockHashes(range(100, 116), 16, { loraName: "adapter-a" })[0]!,
    );
    expect(s.blocks[0]!.tokensHash).not.toBe(computeBlockHashes(range(100, 116), 16)[0]!);
  });

  test("removed and cleared carry their data", () => {
    expect(out.events[2]!.event.data).toEqual({ type: "removed", blockHashes: [U64_MAX] });
    expect(out.events[3]!.event.data).toEqual({ type: "cleared" });
  });

  test("counters", () => {
    expect({
      batches: c.batches,
      seen: c.seen,
      stored: c.stored,
      removed: c.removed,
      cleared: c.cleared,
    }).toEqual({
      batches: 1,
      seen: 4,
      stored: 2,
      removed: 1,
      cleared: 1,
    });
  });
});

describe("decodeVllmBatch, map form (newer vLLM)", () => {
  const c = newVllmDecodeCounters();
  const out = decodeVllmBatch(hex(V2_MAP), opts(16, 0n, 0), c);

  test("the batch's data_parallel_rank wins over the configured one", () => {
    expect(out.dpRank).toBe(3);
    expect(out.events.map((e) => e.event.dpRank)).toEqual([3, 3, 3]);
  });

  test("a CPU placement is kept with its medium (GPU events carry none); other KV groups and unknown tags are counted and skipped; ids stay dense", () => {
    expect(out.events.map((e) => [e.event.eventId, e.event.data.type, e.event.medium])).toEqual([
      [0n, "stored", undefined],
      [1n, "stored", "cpu"],
      [2n, "removed", undefined],
    ]);
    expect(storedOf(out.events[1]!).blocks).toEqual([
      { blockHash: 21n, tokensHash: computeBlockHashes(range(0, 16), 16)[0]! },
    ]);
    expect({
      otherMedium: c.otherMedium,
      tier: c.tier,
      otherGroup: c.otherGroup,
      unknownTag: c.unknownTag,
      tags: c.unknownTags,
    }).toEqual({
      otherMedium: 0,
      tier: 1,
      otherGroup: 1,
      unknownTag: 1,
      tags: ["BlockMigrated"],
    });
  });

  test("an MM identifier in extra_keys enters block 0's tokens_hash (first 16 hex digits), block 1 plain", () => {
    const s = storedOf(out.events[0]!);
    expect(s.parentHash).toBe(10n);
    expect(s.blocks.map((b) => b.blockHash)).toEqual([11n, 12n]);
    const mmHash = BigInt("0x" + IMAGE_HEX.slice(0, 16));
    const want = computeBlockHashes(range(200, 232), 16, {
      mmInfos: [{ mmObjects: [{ mmHash, offsets: [] }] }, null],
    });
    expect(s.blocks.map((b) => b.tokensHash)).toEqual([...want]);
    expect(s.blocks[0]!.tokensHash).not.toBe(computeBlockHashes(range(200, 216), 16)[0]!);
  });
});

describe("decodeVllmBatch, other versions and edge cases", () => {
  test("the original two-element batch and five-field BlockStored; spec §2.6 vectors", () => {
    const out = decodeVllmBatch(hex(V3_ORIGINAL), opts(4, 7n));
    expect(out.dpRank).toBe(0);
    expect(storedOf(out.events[0]!).blocks).toEqual([
      { blockHash: 1n, tokensHash: 9143094415614847814n },
      { blockHash: 2n, tokensHash: 12124091508212882195n },
    ]);
  });

  test("lora_name seeds the hash exactly as spec §2.6 says", () => {
    const out = decodeVllmBatch(hex(V5_LORA), opts(4));
    expect(storedOf(out.events[0]!).blocks).toEqual([
      { blockHash: 1n, tokensHash: 6665157333201000639n },
    ]);
  });

  test("an (identifier, offset) pair in extra_keys gives the spec §2.6 multimodal vector", () => {
    const out = decodeVllmBatch(hex(V6_MM), opts(2));
    expect(storedOf(out.events[0]!).blocks.map((b) => b.tokensHash)).toEqual([
      6100948656312251355n,
      10731123482949079648n,
    ]);
  });

  test("block size mismatch drops the event, token shortage truncates, a repeated hash drops; event_version is skipped", () => {
    const c = newVllmDecodeCounters();
    const out = decodeVllmBatch(hex(V4_EDGES), opts(16), c);
    expect(out.events).toHaveLength(1);
    const s = storedOf(out.events[0]!);
    expect(s.blocks.map((b) => b.blockHash)).toEqual([61n, 62n]);
    expect(s.blocks.map((b) => b.tokensHash)).toEqual([...computeBlockHashes(range(0, 32), 16)]);
    expect({
      mismatch: c.blockSizeMismatch,
      truncated: c.truncated,
      dup: c.duplicateHash,
      stored: c.stored,
    }).toEqual({
      mismatch: 1,
      truncated: 1,
      dup: 1,
      stored: 1,
    });
  });

  test("a malformed event is skipped and counted; the rest of the batch still decodes", () => {
    // [1.0, [["BlockRemoved", "oops", "GPU"], ["AllBlocksCleared"]]]
    const c = newVllmDecodeCounters();
    const out = decodeVllmBatch(
      hex(
        "92cb3ff00000000000009293ac426c6f636b52656d6f766564a46f6f7073a347505591b0416c6c426c6f636b73436c6561726564",
      ),
      opts(16),
      c,
    );
    expect(out.events.map((e) => e.event.data.type)).toEqual(["cleared"]);
    expect(c.malformed).toBe(1);
  });

  test("a truncated or non-batch payload throws VllmDecodeError", () => {
    const b = hex(V1_POSITIONAL);
    expect(() => decodeVllmBatch(b.subarray(0, b.length - 3), opts(16))).toThrow(VllmDecodeError);
    expect(() => decodeVllmBatch(hex("a3616263"), opts(16))).toThrow(VllmDecodeError);
    expect(() => decodeVllmBatch(hex("91c0"), opts(16))).toThrow(VllmDecodeError);
  });

  test("a batch encoded as a map (one 2026 vLLM version) is accepted, with the dp_rank alias", () => {
    // {"ts": 1.0, "events": [["AllBlocksCleared"]], "dp_rank": 2}
    const out = decodeVllmBatch(
      hex(
        "83a27473cb3ff0000000000000a66576656e74739191b0416c6c426c6f636b73436c6561726564a764705f72616e6b02",
      ),
      opts(16),
    );
    expect([out.dpRank, out.events.map((e) => e.event.data.type)]).toEqual([2, ["cleared"]]);
  });
});

describe("bytesToU64", () => {
  test("keeps the last 8 bytes big-endian, like int.from_bytes(b, 'big') & (2^64-1)", () => {
    expect(
      bytesToU64(hex("496aca80e4d8f29fb8e8cd816c3afb48d3f103970b3a2ee1600c08ca67326dee")),
    ).toBe(SHA_BLOCK_U64);
    expect(bytesToU64(hex("0102"))).toBe(0x0102n);
    expect(bytesToU64(hex("ffffffffffffffff"))).toBe(U64_MAX);
    expect(bytesToU64(new Uint8Array(0))).toBe(0n);
  });
});
