import { describe, expect, test } from "bun:test";
import { parseJsonBigintSafe, stringifyBigint } from "../../../src/core/json.ts";

describe("parseJsonBigintSafe", () => {
  test("keeps every bit of integers above 2^53", () => {
    const v = parseJsonBigintSafe('{"h": 18446744073709551615, "s": "12345678901234567890", "n": 5}') as Record<string, unknown>;
    expect(BigInt(v.h as string)).toBe(18446744073709551615n);
    expect(v.s).toBe("12345678901234567890");
    expect(v.n).toBe(5);
  });
  test("does not touch digits inside strings or floats", () => {
    const v = parseJsonBigintSafe('["a\\"1234567890123456789", 1234567890123456.5, 1.0e20]') as unknown[];
    expect(v[0]).toBe('a"1234567890123456789');
    expect(v[1]).toBe(1234567890123456.5);
    expect(v[2]).toBe(1e20);
  });
  test("stringifyBigint writes bigints as exact bare integers", () => {
    expect(stringifyBigint({ a: 18446744073709551615n, b: [1n, "x"] })).toBe('{"a":18446744073709551615,"b":[1,"x"]}');
  });
});
