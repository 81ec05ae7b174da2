/**
 * The decoder against bytes written by python3-msgpack 1.0.3 (`msgpack.packb(v,
 * use_bin_type=True)`), pasted here as hex so the test needs no Python.
 */
import { describe, expect, test } from "bun:test";
import {
  decode,
  MsgpackError,
  MsgpackReader,
  type MsgpackValue,
} from "../../../../../src/runtime/bun/zmq/msgpack.ts";

function hex(s: string): Uint8Array {
  return Uint8Array.from(s.match(/../g) ?? [], (b) => parseInt(b, 16));
}

const bytes300 = new Uint8Array(300);
for (let i = 0; i < 256; i++) bytes300[i] = i;

/** [name, python value, packb(...).hex(), expected JS value] */
const VECTORS: readonly [string, string, MsgpackValue][] = [
  ["nil", "c0", null],
  ["true", "c3", true],
  ["false", "c2", false],
  ["fixint 0", "00", 0],
  ["fixint 127", "7f", 127],
  ["negfixint -1", "ff", -1],
  ["negfixint -32", "e0", -32],
  ["uint8 200", "ccc8", 200],
  ["uint16 65535", "cdffff", 65535],
  ["uint32 max", "ceffffffff", 4294967295],
  ["uint64 2^53-1 stays a number", "cf001fffffffffffff", Number.MAX_SAFE_INTEGER],
  ["uint64 2^53 becomes a bigint", "cf0020000000000000", 2n ** 53n],
  ["uint64 max", "cfffffffffffffffff", 2n ** 64n - 1n],
  ["int8 -100", "d09c", -100],
  ["int16 -30000", "d18ad0", -30000],
  ["int32 min", "d280000000", -(2 ** 31)],
  ["int64 -(2^53-1) stays a number", "d3ffe0000000000001", Number.MIN_SAFE_INTEGER],
  ["int64 -2^53 becomes a bigint", "d3ffe0000000000000", -(2n ** 53n)],
  ["int64 min", "d38000000000000000", -(2n ** 63n)],
  ["float64 1.5", "cb3ff8000000000000", 1.5],
  ["float32 0.25 (use_single_float)", "ca3e800000", 0.25],
  ["fixstr", "a3616263", "abc"],
  ["str8", "d928" + "78".repeat(40), "x".repeat(40)],
  ["str16", "da012c" + "79".repeat(300), "y".repeat(300)],
  ["utf8", "a968c3a96c6c6fe29c93", "héllo✓"],
  ["bin8", "c4030001ff", Uint8Array.of(0, 1, 255)],
  [
    "bin16",
    "c5012c" + Array.from(bytes300, (b) => b.toString(16).padStart(2, "0")).join(""),
    bytes300,
  ],
  ["fixarray", "9301a161c0", [1, "a", null]],
  [
    "array16",
    "dc0014000102030405060708090a0b0c0d0e0f10111213",
    Array.from({ length: 20 }, (_, i) => i),
  ],
  [
    "fixmap with mixed keys",
    "82a1610102a162",
    new Map<MsgpackValue, MsgpackValue>([
      ["a", 1],
      [2, "b"],
    ]),
  ],
  [
    "map16",
    "de0014a26b3000a26b3101a26b3202a26b3303a26b3404a26b3505a26b3606a26b3707a26b3808a26b3909a36b31300aa36b31310ba36b31320ca36b31330da36b31340ea36b31350fa36b313610a36b313711a36b313812a36b313913",
    new Map<MsgpackValue, MsgpackValue>(
      Array.from({ length: 20 }, (_, i) => [`k${i}`, i] as [string, number]),
    ),
  ],
  [
    "nested",
    "82a66576656e74739193ab426c6f636b53746f7265649201cfffffffffffffffffc0a27473cb3fe0000000000000",
    new Map<MsgpackValue, MsgpackValue>([
      ["events", [["BlockStored", [1, 2n ** 64n - 1n], null]]],
      ["ts", 0.5],
    ]),
  ],
  [
    "empty bin and str inside containers",
    "9492010281a17892c0c3c400a0",
    [[1, 2], new Map<MsgpackValue, MsgpackValue>([["x", [null, true]]]), new Uint8Array(0), ""],
  ],
  ["fixext1", "d4052a", { type: 5, data: Uint8Array.of(42) }],
  ["ext8", "c70307616263", { type: 7, data: Uint8Array.of(0x61, 0x62, 0x63) }],
];

describe("decode", () => {
  for (const [name, h, want] of VECTORS) {
    test(`decodes python's ${name}`, () => {
      expect(decode(hex(h))).toEqual(want);
    });
  }

  test("a skipped value leaves the reader exactly after it, for every vector", () => {
    for (const [name, h] of VECTORS) {
      const r = new MsgpackReader(hex(h + "c3"));
      r.skip();
      expect({ name, next: r.readBool(), done: r.done }).toEqual({ name, next: true, done: true });
    }
  });

  test("truncated input throws MsgpackError, never returns garbage", () => {
    for (const [name, h] of VECTORS) {
      const b = hex(h);
      if (b.length < 2) continue;
      expect(() => decode(b.subarray(0, b.length - 1)), name).toThrow(MsgpackError);
    }
  });

  test("trailing bytes and the reserved byte 0xc1 are rejected", () => {
    expect(() => decode(hex("c0c0"))).toThrow(/trailing/);
    expect(() => decode(hex("c1"))).toThrow(/0xc1/);
  });

  test("invalid UTF-8 in a str is an error", () => {
    expect(() => decode(hex("a2c328"))).toThrow();
  });
});

describe("MsgpackReader", () => {
  test("readU64 reinterprets every int format as u64 bits", () => {
    const cases: [string, bigint][] = [
      ["7f", 127n],
      ["ff", 2n ** 64n - 1n], // -1
      ["ccc8", 200n],
      ["cdffff", 65535n],
      ["ceffffffff", 2n ** 32n - 1n],
      ["cf001fffffffffffff", 2n ** 53n - 1n],
      ["cfffffffffffffffff", 2n ** 64n - 1n],
      ["d09c", 2n ** 64n - 100n],
      ["d18ad0", 2n ** 64n - 30000n],
      ["d280000000", 2n ** 64n - 2n ** 31n],
      ["d38000000000000000", 2n ** 63n],
      ["d3ffe0000000000000", 2n ** 64n - 2n ** 53n],
    ];
    for (const [h, want] of cases) expect(new MsgpackReader(hex(h)).readU64()).toBe(want);
  });

  test("readSafeInt refuses values a number cannot hold", () => {
    expect(new MsgpackReader(hex("cf001fffffffffffff")).readSafeInt()).toBe(
      Number.MAX_SAFE_INTEGER,
    );
    expect(() => new MsgpackReader(hex("cf0020000000000000")).readSafeInt()).toThrow(MsgpackError);
  });

  test("readFloat accepts ints (msgspec writes ts as float, but be lenient)", () => {
    expect(new MsgpackReader(hex("cb3ff8000000000000")).readFloat()).toBe(1.5);
    expect(new MsgpackReader(hex("ccc8")).readFloat()).toBe(200);
  });

  test("peekKind and tryNil do not consume anything but a nil", () => {
    const r = new MsgpackReader(hex("c09301a161c0"));
    expect(r.peekKind()).toBe("nil");
    expect(r.tryNil()).toBe(true);
    expect(r.peekKind()).toBe("array");
    expect(r.tryNil()).toBe(false);
    expect(r.readArrayHeader()).toBe(3);
  });

  test("a type mismatch names what was expected and where", () => {
    expect(() => new MsgpackReader(hex("a3616263")).readArrayHeader()).toThrow(
      "expected array, found str (0xa3) at offset 0",
    );
  });

  test("bin is a view into the input, not a copy", () => {
    const input = hex("c4030001ff");
    const bin = new MsgpackReader(input).readBin();
    input[2] = 9;
    expect(bin[0]).toBe(9);
  });

  test("a reader confined to a sub-range stops at its end", () => {
    const input = hex("01020304");
    const r = new MsgpackReader(input, 1, 3);
    expect([r.readInt(), r.readInt(), r.done]).toEqual([2, 3, true]);
    expect(() => r.readInt()).toThrow(/truncated/);
  });
});
