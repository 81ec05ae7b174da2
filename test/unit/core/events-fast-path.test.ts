/**
 * fastRouterEventBatch (src/core/events.ts), the hand-written pass over HTTP event batches, is
 * the schema's twin: on every batch it takes it returns exactly what RouterEventBatchSchema
 * outputs, and on every batch the schema rejects it gives up (undefined) so the schema names
 * the problem. Checked on hand-picked edge cases and on seeded random batches mixing valid and
 * broken fields.
 */
import { describe, expect, test } from "bun:test";
import * as v from "valibot";
import { fastRouterEventBatch, RouterEventBatchSchema } from "../../../src/core/events.ts";
import { mulberry32 } from "../../support/prng.ts";

function agree(json: unknown): "fast" | "fallback" {
  const fast = fastRouterEventBatch(json);
  const slow = v.safeParse(RouterEventBatchSchema, json);
  if (fast === undefined) return "fallback";
  expect(slow.success).toBe(true);
  if (slow.success) expect(fast).toEqual(slow.output);
  return "fast";
}

const stored = (blocks: unknown[], extra: Record<string, unknown> = {}) => ({
  stored: { parent_hash: "123", blocks, ...extra },
});
const block = (b: unknown, t: unknown) => ({ block_hash: b, tokens_hash: t });
const ev = (data: unknown, extra: Record<string, unknown> = {}) => ({
  worker_id: "18446744073709551615",
  event: { event_id: 7, data, ...extra },
});

describe("fastRouterEventBatch", () => {
  test("the batches engines send take the fast path and equal the schema's output", () => {
    const cases: unknown[] = [
      [],
      [ev(stored([block("1", "2"), block(3, 4), block("-1", "9223372036854775807")]))],
      [ev(stored([block("1", "2")], { parent_hash: null, start_position: 16 }))],
      [ev({ stored: { blocks: [block("5", "6")] } }, { dp_rank: 3 })],
      [ev({ removed: { block_hashes: ["1", 2, "18446744073709551615"] } })],
      [ev("cleared")],
      [ev(stored([{ ...block("1", "2"), mm_extra_info: { x: 1 } }]))],
      [ev({ stored: { blocks: [block("1", "2")] }, removed: { block_hashes: ["3"] } })],
      [{ ...ev("cleared"), extra: true }],
    ];
    for (const c of cases) expect(agree(c)).toBe("fast");
  });

  test("whatever the schema rejects (or reads through a fallback branch) goes to the schema", () => {
    const cases: unknown[] = [
      {},
      [null],
      [ev(stored([block("1.5", "2")]))],
      [ev(stored([block(1.5, 2)]))],
      [ev(stored([block(2 ** 60, 2)]))],
      [ev(stored([block("18446744073709551616", "2")]))],
      [ev(stored([block("-9223372036854775809", "2")]))],
      [ev(stored([block(null, "2")]))],
      [ev(stored(["x"]))],
      [ev(stored([block("1", "2")], { parent_hash: "abc" }))],
      [ev(stored([block("1", "2")], { start_position: "16" }))],
      [ev(stored([block("1", "2")]), { dp_rank: -1 })],
      [ev(stored([block("1", "2")]), { dp_rank: 1.5 })],
      [ev(stored([block("1", "2")]), { dp_rank: null })],
      [ev("CLEARED")],
      [ev({ removed: { block_hashes: "1" } })],
      [ev({ stored: { blocks: "x" }, removed: { block_hashes: ["3"] } })],
      [{ worker_id: 1.5, event: { event_id: 1, data: "cleared" } }],
      [{ worker_id: 1, event: [] }],
    ];
    for (const c of cases) expect(agree(c)).toBe("fallback");
  });

  test("seeded random batches: the fast path never disagrees with the schema (seed 24)", () => {
    const rng = mulberry32(24);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)]!;
    const u64s = [
      "0",
      "1",
      "-1",
      "18446744073709551615",
      "18446744073709551616",
      "9223372036854775807",
      "-9223372036854775808",
      "-9223372036854775809",
      "12a",
      "",
      0,
      7,
      -3,
      2 ** 53,
      1.5,
      null,
      true,
      {},
    ];
    const hash = () => (rng() < 0.9 ? String(Math.floor(rng() * 2 ** 52)) : pick(u64s));
    let fast = 0;
    for (let i = 0; i < 2000; i++) {
      const batch = Array.from({ length: 1 + Math.floor(rng() * 3) }, () => {
        const r = rng();
        const data =
          r < 0.6
            ? {
                stored: {
                  ...(rng() < 0.5 ? { parent_hash: rng() < 0.8 ? hash() : null } : {}),
                  blocks: Array.from({ length: Math.floor(rng() * 5) }, () =>
                    block(hash(), hash()),
                  ),
                },
              }
            : r < 0.85
              ? { removed: { block_hashes: Array.from({ length: Math.floor(rng() * 5) }, hash) } }
              : pick(["cleared", "x", null, { other: 1 }]);
        const event: Record<string, unknown> = {
          event_id: rng() < 0.95 ? hash() : pick(u64s),
          data,
        };
        if (rng() < 0.5) event.dp_rank = pick([0, 1, 3, -1, 0.5, 2 ** 32, "1"]);
        return { worker_id: hash(), event };
      });
      if (agree(batch) === "fast") fast++;
    }
    expect(fast).toBeGreaterThan(200);
  });
});
