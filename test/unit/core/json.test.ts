import { describe, expect, test } from "bun:test";
import {
  parseJsonBigintSafe,
  quoteLongIntegers,
  stringifyBigint,
  type ScanStats,
} from "../../../src/core/json.ts";

describe("parseJsonBigintSafe", () => {
  test("keeps every bit of integers above 2^53", () => {
    const v = parseJsonBigintSafe(
      '{"h": 18446744073709551615, "s": "12345678901234567890", "n": 5}',
    ) as Record<string, unknown>;
    expect(BigInt(v.h as string)).toBe(18446744073709551615n);
    expect(v.s).toBe("12345678901234567890");
    expect(v.n).toBe(5);
  });
  test("does not touch digits inside strings or floats", () => {
    const v = parseJsonBigintSafe(
      '["a\\"1234567890123456789", 1234567890123456.5, 1.0e20]',
    ) as unknown[];
    expect(v[0]).toBe('a"1234567890123456789');
    expect(v[1]).toBe(1234567890123456.5);
    expect(v[2]).toBe(1e20);
  });
  test("stringifyBigint writes bigints as exact bare integers", () => {
    expect(stringifyBigint({ a: 18446744073709551615n, b: [1n, "x"] })).toBe(
      '{"a":18446744073709551615,"b":[1,"x"]}',
    );
  });
});

describe("parseJsonBigintSafe on hostile input (issue 12: the old regex backtracked)", () => {
  /** Characters the rewrite looked at; linear means a small constant times the length. */
  function steps(text: string): number {
    const stats: ScanStats = { steps: 0 };
    quoteLongIntegers(text, stats);
    return stats.steps;
  }
  const hostile: [string, (n: number) => string][] = [
    ["a long number followed by a fraction", (n) => `{"n":${"7".repeat(n)}.5}`],
    ["a long number followed by a letter", (n) => `{"n":${"7".repeat(n)}x`],
    ["long digit runs split by dots", (n) => `[${"1234567890123456.".repeat(n / 17)}]`],
    ["unterminated escaped quotes", (n) => `{"h":12345678901234567890,"a":` + '"\\"'.repeat(n / 3)],
    ["backslash runs", (n) => `[12345678901234567890,"${"\\".repeat(n)}`],
    ["quotes and digits alternating", (n) => `1234567890123456789"`.repeat(n / 20)],
  ];
  for (const [name, make] of hostile) {
    test(`${name}: every character looked at about once`, () => {
      for (const n of [6_000, 60_000]) {
        const text = make(n);
        expect(steps(text)).toBeLessThanOrEqual(text.length);
      }
    });
  }
  test("a 60k-digit integer comes back exact, as a decimal string", () => {
    const digits = "9".repeat(60_000);
    expect(parseJsonBigintSafe(`{"n":${digits}}`)).toEqual({ n: digits });
    expect(parseJsonBigintSafe(`[-${digits}]`)).toEqual([`-${digits}`]);
  });
  test("a 60k-digit number with a fraction stays a number", () => {
    expect((parseJsonBigintSafe(`{"n":${"9".repeat(60_000)}.5}`) as { n: unknown }).n).toBe(
      Infinity,
    );
  });
  test("floats whose fraction or exponent has 16+ digits stay numbers", () => {
    expect(
      parseJsonBigintSafe(
        "[0.12345678901234567890, 1e1234567890123456789, -1.5E-12345678901234567]",
      ),
    ).toEqual([0.12345678901234568, Infinity, -0]);
  });
  test("a long integer with a leading zero is invalid JSON, as JSON.parse says", () => {
    expect(() => parseJsonBigintSafe("[01234567890123456789]")).toThrow();
  });
  test("invalid JSON throws instead of hanging", () => {
    expect(() => parseJsonBigintSafe(`{"a":"${"\\".repeat(9)}12345678901234567890`)).toThrow();
    expect(() => parseJsonBigintSafe(`-`)).toThrow();
  });
});

describe("stringifyBigint", () => {
  test("a string that looks like the old bigint sentinel stays a string", () => {
    expect(stringifyBigint({ id: "\u0000n5", h: 18446744073709551615n })).toBe(
      '{"id":"\\u0000n5","h":18446744073709551615}',
    );
  });
  test("negative and nested bigints, round trip through the parser", () => {
    const text = stringifyBigint({ a: [-(2n ** 63n), { b: 2n ** 64n - 1n }], c: "x" });
    expect(text).toBe('{"a":[-9223372036854775808,{"b":18446744073709551615}],"c":"x"}');
    expect(parseJsonBigintSafe(text)).toEqual({
      a: ["-9223372036854775808", { b: "18446744073709551615" }],
      c: "x",
    });
  });
});
