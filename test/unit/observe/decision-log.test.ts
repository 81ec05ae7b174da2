import { describe, expect, test } from "bun:test";
import { DecisionLog, type CandidateView } from "../../../src/observe/decision-log.ts";

function candidate(workerId: bigint, over: Partial<CandidateView>): CandidateView {
  return {
    endpoint: { worker: { workerId, dpRank: 0 } },
    overlapBlocks: 0,
    prefillTokens: 64,
    decodeBlocks: 4,
    activePrefillTokens: 0,
    activeDecodeBlocks: 0,
    activeRequests: 0,
    cost: 0,
    ...over,
  };
}

describe("the decision log's arithmetic", () => {
  test("the time-based kv: the predicted TTFT is its own term, the delay to others the remainder; they add up to the cost", () => {
    const log = new DecisionLog({
      policy: "kv",
      costs: [
        { term: { type: "predicted-ttft" }, weight: 1 },
        { term: { type: "delay-to-others" }, weight: 1 },
      ],
      blockSize: 16,
      overlapWeight: 1,
    });
    const c = candidate(7n, { predictedTtftMs: 12.5, ttftTokens: 96, cost: 15 });
    const terms = log.terms(c);
    expect(terms.map((t) => [t.term, t.value])).toEqual([
      ["predicted-ttft", 12.5],
      ["delay-to-others", 2.5],
    ]);
    expect(terms[0]!.detail).toContain("96 tokens");
    expect(log.formula()).toBe("1×predicted-ttft + 1×delay-to-others");
  });

  test("two terms it cannot recompute share one line with their weighted sum, never one of them taking the other's part", () => {
    const log = new DecisionLog({
      policy: "kv",
      costs: [
        { term: { type: "predicted-ttft" }, weight: 1 },
        { term: { type: "delay-to-others" }, weight: 1 },
      ],
      blockSize: 16,
      overlapWeight: 1,
    });
    // No prediction recorded (a pipeline that got none): both are remainders.
    const terms = log.terms(candidate(7n, { cost: 9 }));
    expect(terms).toEqual([
      {
        term: "1×predicted-ttft + 1×delay-to-others",
        weight: 1,
        value: 9,
        detail: "read at decision time",
      },
    ]);
  });
});
