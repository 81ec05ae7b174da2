import { describe, expect, test } from "bun:test";
import { dynamoKvCost, explainDynamoKvCost } from "../../../../../src/router/choose/costs/dynamo-kv.ts";
import { candidate, context, request } from "../helpers.ts";

describe("dynamo-kv cost (§4.4)", () => {
  test("weight × prefillTokens / blockSize + decodeBlocks, fractional prefill blocks kept", () => {
    const c = candidate(1, { prefillTokens: 40, decodeBlocks: 3 });
    expect(dynamoKvCost.cost(context({ blockSize: 16 }), c)).toBe(2.5 + 3);
    expect(dynamoKvCost.cost(context({ blockSize: 16, overlapScoreWeight: 2 }), c)).toBe(5 + 3);
    expect(dynamoKvCost.cost(context({ blockSize: 16, overlapScoreWeight: 0 }), c)).toBe(3);
  });

  test("the explanation shows the arithmetic", () => {
    const c = candidate(3, { prefillTokens: 40, decodeBlocks: 3, overlapBlocks: 2 });
    expect(explainDynamoKvCost(context({ blockSize: 16 }), c)).toStartWith("cost=5.500 = 1·40/16 + 3 (worker=3:0 overlap=2");
  });

  test("§4.4 worked example: shared pool hits beyond a worker's prefix are credited", () => {
    // bs 1, isl 4, weight 1, multiplier 0.5, the pool holds blocks [0, 4).
    const ctx = context({
      blockSize: 1,
      sharedCacheMultiplier: 0.5,
      request: request({ isl: 4, sharedCacheHits: { ranges: [[0, 4]] } }),
    });
    const w0 = candidate(0, { overlapBlocks: 2, prefillTokens: 4, decodeBlocks: 0 }); // beyond 2: 4 − 0.5·2 = 3
    const w1 = candidate(1, { overlapBlocks: 0, prefillTokens: 4, decodeBlocks: 0 }); // beyond 4: 4 − 2 = 2
    expect(dynamoKvCost.cost(ctx, w0)).toBe(3);
    expect(dynamoKvCost.cost(ctx, w1)).toBe(2);
  });

  test("the shared-pool credit truncates to whole tokens and never goes below zero", () => {
    const hits = { ranges: [[0, 10]] as [number, number][] };
    const ctx = context({ blockSize: 16, sharedCacheMultiplier: 0.3, request: request({ sharedCacheHits: hits }) });
    expect(dynamoKvCost.cost(ctx, candidate(1, { overlapBlocks: 9, prefillTokens: 100 }))).toBe(Math.trunc(100 - 0.3 * 16) / 16);
    expect(dynamoKvCost.cost(ctx, candidate(1, { overlapBlocks: 0, prefillTokens: 20 }))).toBe(0);
    const off = context({ blockSize: 16, request: request({ sharedCacheHits: hits }) });
    expect(dynamoKvCost.cost(off, candidate(1, { prefillTokens: 32 }))).toBe(2);
  });
});
