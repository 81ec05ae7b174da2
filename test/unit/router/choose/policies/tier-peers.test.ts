/**
 * The peers' tier policies as their sources define them: Dynamo's fixed host / disk credits
 * (0.75 / 0.25 of each block beyond the GPU prefix), llm-d's tier weights (GPU 1, CPU 0.8) and
 * its P2P source producer's static minCachedTokenDelta.
 */
import { describe, expect, test } from "bun:test";
import type { KvMedium } from "../../../../../src/core/events.ts";
import type { WorkerKey } from "../../../../../src/core/ids.ts";
import type { OverlapScores } from "../../../../../src/core/overlap.ts";
import { dynamoKvCost } from "../../../../../src/router/choose/costs/dynamo-kv.ts";
import {
  DYNAMO_TIER_WEIGHTS,
  dynamoTieredKvCost,
} from "../../../../../src/router/choose/policies/dynamo.ts";
import {
  LLMD_MIN_CACHED_TOKEN_DELTA,
  LLMD_TIER_WEIGHTS,
  llmdP2pPicker,
} from "../../../../../src/router/choose/policies/llm-d-p2p.ts";
import { candidate, context, request, seededRng } from "../helpers.ts";

const BS = 512;

function overlaps(
  gpu: Record<WorkerKey, number>,
  tiers: Partial<Record<KvMedium, Record<WorkerKey, number>>> = {},
): OverlapScores {
  const t = new Map<KvMedium, Map<WorkerKey, number>>();
  for (const [m, s] of Object.entries(tiers)) t.set(m as KvMedium, new Map(Object.entries(s)));
  return {
    scores: new Map(Object.entries(gpu)),
    treeSizes: new Map(),
    frequencies: [],
    tierScores: t.size > 0 ? t : undefined,
  };
}
const ctxOf = (o: OverlapScores, blocks = 20) =>
  context({
    blockSize: BS,
    rng: seededRng(3),
    request: request({ isl: blocks * BS, overlaps: o }),
  });

describe("dynamo: fixed tier credits", () => {
  test("the weights are Dynamo's defaults", () => {
    expect(DYNAMO_TIER_WEIGHTS).toEqual({ cpu: 0.75, disk: 0.25 });
  });

  test("host blocks beyond the GPU prefix earn 0.75 each, disk blocks beyond them 0.25", () => {
    // 20-block prompt; 4 on GPU, CPU reaches 10, disk 16: 6 host and 6 disk blocks beyond.
    const ctx = ctxOf(overlaps({ "1:0": 4 }, { cpu: { "1:0": 10 }, disk: { "1:0": 16 } }));
    const c = candidate(1, { prefillTokens: 16 * BS, decodeBlocks: 20 });
    expect(dynamoTieredKvCost.cost(ctx, c)).toBeCloseTo(16 - 0.75 * 6 - 0.25 * 6 + 20, 9);
  });

  test("an engine without tiers is priced exactly as Dynamo's GPU-only cost", () => {
    const ctx = ctxOf(overlaps({ "1:0": 4 }, { cpu: { "2:0": 10 } }));
    const c = candidate(1, { prefillTokens: 16 * BS + 300, decodeBlocks: 21 });
    expect(dynamoTieredKvCost.cost(ctx, c)).toBe(dynamoKvCost.cost(ctx, c));
  });

  test("the credit never takes the prefill below zero", () => {
    const ctx = ctxOf(overlaps({}, { cpu: { "1:0": 20 } }));
    const c = candidate(1, { prefillTokens: 2 * BS, decodeBlocks: 20 });
    expect(dynamoTieredKvCost.cost(ctx, c)).toBe(20);
  });
});

describe("llm-d-p2p: tier weights and a static pull threshold", () => {
  test("the weights and threshold are llm-d's", () => {
    expect(LLMD_TIER_WEIGHTS).toEqual({ gpu: 1.0, cpu: 0.8 });
    expect(LLMD_MIN_CACHED_TOKEN_DELTA).toBe(2048);
  });

  test("a GPU hit outscores the same blocks on CPU (1 against 0.8 a block)", () => {
    const ctx = ctxOf(overlaps({ "1:0": 10 }, { cpu: { "2:0": 10 } }));
    const chosen = llmdP2pPicker().pick(ctx, [candidate(1), candidate(2)]);
    expect(chosen.key).toBe("1:0");
    expect(chosen.kvPlan).toBeUndefined();
  });

  test("a busier holder loses to an idle engine, which is told to pull from it past the threshold", () => {
    // Engine 1 holds 12 blocks (6,144 tokens) and runs 10 requests; 2 and 3 are idle and cold.
    const ctx = ctxOf(overlaps({ "1:0": 12 }));
    const cs = [candidate(1, { activeRequests: 10 }), candidate(2), candidate(3)];
    const chosen = llmdP2pPicker().pick(ctx, cs);
    expect(chosen.key).not.toBe("1:0");
    expect(chosen.kvPlan?.kind).toBe("pull");
    expect(chosen.kvPlan?.fromKey).toBe("1:0");
    expect(chosen.kvPlan?.fromBlock).toBe(0);
    expect(chosen.kvPlan?.blocks).toBe(12);
  });

  test("below minCachedTokenDelta no pull is named", () => {
    // The holder is 3 blocks (1,536 tokens) ahead of the chosen one: under 2,048.
    const ctx = ctxOf(overlaps({ "1:0": 12, "2:0": 9 }));
    const cs = [candidate(1, { activeRequests: 10 }), candidate(2)];
    const chosen = llmdP2pPicker().pick(ctx, cs);
    expect(chosen.key).toBe("2:0");
    expect(chosen.kvPlan).toBeUndefined();
    // With a threshold of one token (the code's default) the same decision pulls.
    expect(llmdP2pPicker(1).pick(ctx, cs).kvPlan?.blocks).toBe(3);
  });
});
