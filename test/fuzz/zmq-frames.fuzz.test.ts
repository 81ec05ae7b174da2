/**
 * Fuzz of the ZMQ KV-event decoders (src/runtime/bun/zmq/msgpack.ts, vllm-decode.ts), seeded.
 * Frames come from any process that can reach the publisher's port, so whatever bytes
 * arrive: the decoders return, or throw their own MsgpackError / VllmDecodeError; never a
 * TypeError or RangeError, never an allocation sized by a length header the bytes cannot
 * back, never a hang. Inputs: random bytes, and real vLLM payloads (msgspec-encoded, from
 * test/unit/runtime/bun/zmq/vllm-decode.test.ts) with bytes flipped, cut, or inserted.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { decode, MsgpackError } from "../../src/runtime/bun/zmq/msgpack.ts";
import { decodeVllmBatch, VllmDecodeError } from "../../src/runtime/bun/zmq/vllm-decode.ts";

const SEED = 12_008;

function hex(s: string): Uint8Array {
  return Uint8Array.from(s.match(/../g) ?? [], (b) => parseInt(b, 16));
}
/** vLLM ≈0.10 positional EventBatch: BlockStored x2, BlockRemoved, AllBlocksCleared. */
const V1_POSITIONAL = hex(
  "93cb41da305498100000949cab426c6f636b53746f72656493cffffffffffffffffffb7bc0dc0030000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f10c0a3475055c0c0c0c0c09cab426c6f636b53746f72656491c420496aca80e4d8f29fb8e8cd816c3afb48d3f103970b3a2ee1600c08ca67326dee7bdc00106465666768696a6b6c6d6e6f707172731007a3475055a9616461707465722d61c0c0c0c094ac426c6f636b52656d6f76656491cfffffffffffffffffa3475055c091b0416c6c426c6f636b73436c6561726564c0",
);
/** Newer map form (tag under "type"), dp rank 3. */
const V2_MAP = hex(
  "93cb4004000000000000958ba474797065ab426c6f636b53746f726564ac626c6f636b5f686173686573920b0cb1706172656e745f626c6f636b5f686173680aa9746f6b656e5f696473dc0020ccc8ccc9cccacccbcccccccdcccecccfccd0ccd1ccd2ccd3ccd4ccd5ccd6ccd7ccd8ccd9ccdaccdbccdcccddccdeccdfcce0cce1cce2cce3cce4cce5cce6cce7aa626c6f636b5f73697a6510a76c6f72615f6964c0a66d656469756da3475055a96c6f72615f6e616d65c0aa65787472615f6b6579739291d94036313035643663633736616634303033323565393464353838636535313162653562666462623733623433376463353165636134333931376437613433653364c0a967726f75705f69647800b26b765f63616368655f737065635f6b696e64ae66756c6c5f617474656e74696f6e88a474797065ab426c6f636b53746f726564ac626c6f636b5f6861736865739115b1706172656e745f626c6f636b5f68617368c0a9746f6b656e5f696473dc0010000102030405060708090a0b0c0d0e0faa626c6f636b5f73697a6510a76c6f72615f6964c0a66d656469756da3435055a96c6f72615f6e616d65c089a474797065ab426c6f636b53746f726564ac626c6f636b5f686173686573911fb1706172656e745f626c6f636b5f68617368c0a9746f6b656e5f696473dc0010000102030405060708090a0b0c0d0e0faa626c6f636b5f73697a6510a76c6f72615f6964c0a66d656469756da3475055a96c6f72615f6e616d65c0a967726f75705f6964780183a474797065ac426c6f636b52656d6f766564ac626c6f636b5f686173686573910ba66d656469756da347505582a474797065ad426c6f636b4d69677261746564ac626c6f636b5f686173686573912903",
);

const OPTS = { workerId: 77n, blockSize: 16, firstEventId: 1n };

/** Decodes with both decoders; fails the property on anything but their own errors. */
function decodeBoth(bytes: Uint8Array): void {
  for (const run of [() => decode(bytes), () => decodeVllmBatch(bytes, OPTS)]) {
    try {
      run();
    } catch (e) {
      if (!(e instanceof MsgpackError || e instanceof VllmDecodeError)) {
        throw new Error(
          `unexpected ${(e as Error)?.name}: ${(e as Error)?.message} for ${Buffer.from(bytes).toString("hex")}`,
        );
      }
    }
  }
}

/** A real payload with edits: [offset, action, byte] applied in order. */
const mutated = (base: Uint8Array) =>
  fc
    .array(
      fc.tuple(
        fc.nat(),
        fc.constantFrom("flip", "set", "cut", "insert"),
        fc.integer({ min: 0, max: 255 }),
      ),
      { minLength: 1, maxLength: 6 },
    )
    .map((edits) => {
      let b = Uint8Array.from(base);
      for (const [at, action, byte] of edits) {
        const i = at % Math.max(1, b.length);
        if (action === "flip") b[i] = b[i]! ^ (1 << (byte & 7));
        else if (action === "set") b[i] = byte;
        else if (action === "cut") b = b.subarray(0, i);
        else b = Uint8Array.from([...b.subarray(0, i), byte, ...b.subarray(i)]);
      }
      return b;
    });

describe("ZMQ frame decoders fuzz (seed " + SEED + ")", () => {
  test("the real payloads decode (the fuzz starts from valid frames)", () => {
    expect(decodeVllmBatch(V1_POSITIONAL, OPTS).events.length).toBeGreaterThan(0);
    expect(decodeVllmBatch(V2_MAP, OPTS).events.length).toBeGreaterThan(0);
  });

  test("random bytes: a value or a decoder error", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (b) => decodeBoth(b)),
      { seed: SEED, numRuns: 3000 },
    );
  });

  test("real payloads with bytes flipped, set, cut or inserted: a value or a decoder error", () => {
    fc.assert(
      fc.property(fc.oneof(mutated(V1_POSITIONAL), mutated(V2_MAP)), (b) => decodeBoth(b)),
      { seed: SEED, numRuns: 3000 },
    );
  });

  test("length headers that claim more than the frame holds are refused without allocating for them", () => {
    // array32 / map32 / str32 / bin32 claiming 2^32-1 items or bytes, in 5 bytes.
    for (const head of [0xdd, 0xdf, 0xdb, 0xc6]) {
      const b = Uint8Array.of(head, 0xff, 0xff, 0xff, 0xff);
      expect(() => decode(b)).toThrow(MsgpackError);
      expect(() =>
        decodeVllmBatch(
          Uint8Array.of(0x93, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, head, 0xff, 0xff, 0xff, 0xff),
          OPTS,
        ),
      ).toThrow();
    }
  });
});
