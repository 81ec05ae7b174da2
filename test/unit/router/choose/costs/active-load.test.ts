import { describe, expect, test } from "bun:test";
import { activeLoadCost } from "../../../../../src/router/choose/costs/active-load.ts";
import { candidate, context } from "../helpers.ts";

describe("active-load cost (least-loaded baseline)", () => {
  test("ignores the cache: active prefill in blocks plus active blocks", () => {
    const c = candidate(1, {
      activePrefillTokens: 32,
      activeDecodeBlocks: 5,
      prefillTokens: 999,
      overlapBlocks: 9,
    });
    expect(activeLoadCost.cost(context({ blockSize: 16 }), c)).toBe(7);
  });
});
