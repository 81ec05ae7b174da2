/**
 * Fuzz of the bigint-safe JSON parser (src/core/json.ts), seeded: a failure prints the
 * seed and the shrunk counterexample (fast-check does), and the same seed replays it.
 * Invariants: on any valid JSON, integer literals of 16+ digits come back as their decimal
 * strings and everything else as JSON.parse reads it (the rewrite it replaced broke floats
 * whose fraction had 16+ digits: `0.0000010000000000000002` became a syntax error); on any
 * text it either returns or throws a SyntaxError, and looks at each character about once.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { parseJsonBigintSafe, quoteLongIntegers, type ScanStats } from "../../src/core/json.ts";

const SEED = 12_012;

/** What the parser must give for a generated value: long integers as decimal strings. */
function expected(v: unknown): unknown {
  if (typeof v === "bigint")
    return v.toString().replace("-", "").length >= 16 ? v.toString() : Number(v);
  if (Array.isArray(v)) return v.map(expected);
  if (v !== null && typeof v === "object")
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, expected(x)]));
  return JSON.parse(JSON.stringify(v));
}

/** JSON values with u64-sized and huge integers written as bare literals. */
const bigLiteral = fc.oneof(
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }),
  fc.bigInt({ min: 2n ** 53n - 5n, max: 2n ** 64n - 1n }),
  fc.stringMatching(/^[1-9][0-9]{15,300}$/).map((d) => BigInt(d)),
);
const jsonWithBigints: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.string(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    bigLiteral,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 6 }),
    fc.dictionary(fc.string(), tie("value"), { maxKeys: 6 }),
  ),
})).value;

function toText(v: unknown): string {
  const s = JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? `\u0000n${x}` : x));
  return s.replace(/"\\u0000n(-?\d+)"/g, "$1");
}

describe("parseJsonBigintSafe fuzz (seed " + SEED + ")", () => {
  test("valid JSON holding big integers: exact decimal strings, the rest as JSON.parse", () => {
    fc.assert(
      fc.property(jsonWithBigints, (v) => {
        const text = toText(v);
        expect(parseJsonBigintSafe(text)).toEqual(expected(v));
      }),
      { seed: SEED, numRuns: 500 },
    );
  });

  test("any text: a value or a SyntaxError, each character looked at about once", () => {
    const noisy = fc.array(
      fc.oneof(
        fc.constantFrom('"', "\\", "-", ".", "e", "E", "+", "0", "{", "}", "[", "]", ",", ":", " "),
        fc.stringMatching(/^[0-9]{1,40}$/),
        fc.string({ maxLength: 8 }),
      ),
      { maxLength: 200 },
    );
    fc.assert(
      fc.property(noisy, (parts) => {
        const text = parts.join("");
        const stats: ScanStats = { steps: 0 };
        quoteLongIntegers(text, stats);
        expect(stats.steps).toBeLessThanOrEqual(text.length);
        try {
          parseJsonBigintSafe(text);
        } catch (e) {
          expect(e).toBeInstanceOf(SyntaxError);
        }
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });
});
