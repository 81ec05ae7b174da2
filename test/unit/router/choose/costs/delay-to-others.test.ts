import { describe, expect, test } from "bun:test";
import { TtftPredictor } from "../../../../../src/router/books/ttft-predictor.ts";
import {
  delayToOthersCost,
  meanQueueLength,
} from "../../../../../src/router/choose/costs/delay-to-others.ts";
import { predictedTtftCost } from "../../../../../src/router/choose/costs/predicted-ttft.ts";
import { candidate, context } from "../helpers.ts";

describe("delay-to-others cost (kv)", () => {
  test("its weight is M/M/1's queue length at the busy share its decisions saw, smoothed over about a hundred", () => {
    const cost = delayToOthersCost();
    const busy = [candidate(1, { prefillingRequests: 2 }), candidate(2, { prefillingRequests: 0 })];
    cost.prepare!(context(), busy);
    expect(cost.rho).toBeCloseTo(0.005, 10);
    for (let i = 0; i < 2000; i++) cost.prepare!(context(), busy);
    expect(cost.rho).toBeCloseTo(0.5, 3);
    expect(cost.queueWeight).toBeCloseTo(meanQueueLength(0.5), 3);
    expect(meanQueueLength(0.5)).toBe(0.5);
    // Every engine busy for long: held below 1 (the queue would be infinite).
    for (let i = 0; i < 5000; i++)
      cost.prepare!(context(), [candidate(1, { prefillingRequests: 1 })]);
    expect(cost.queueWeight).toBeCloseTo(meanQueueLength(0.98), 3);
  });

  test("the cost is the weight × the candidate's own uncached tokens at its engine's speed; nothing without a predictor", () => {
    const cost = delayToOthersCost();
    for (let i = 0; i < 2000; i++)
      cost.prepare!(context(), [candidate(1, { prefillingRequests: 1 }), candidate(2)]);
    const ttft = new TtftPredictor({ blockSize: 16 });
    const c = candidate(1, { uncachedTokens: 1000 });
    expect(cost.cost(context({ ttft }), c)).toBeCloseTo(
      cost.queueWeight * ttft.speed("1:0").msPerToken * 1000,
      6,
    );
    expect(cost.cost(context(), c)).toBe(0);
  });
});

describe("predicted-ttft cost (kv)", () => {
  test("is the candidate's predicted TTFT; a candidate without one is never chosen over one with", () => {
    expect(predictedTtftCost.cost(context(), candidate(1, { predictedTtftMs: 12.5 }))).toBe(12.5);
    expect(predictedTtftCost.cost(context(), candidate(1))).toBe(Infinity);
  });
});
