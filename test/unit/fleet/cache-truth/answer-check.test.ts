import { describe, expect, test } from "bun:test";
import {
  checkAnswer,
  expectedCachedTokens,
  type AnswerFacts,
} from "../../../../src/fleet/cache-truth/answer-check.ts";

const base: AnswerFacts = {
  routerTokens: 100,
  predictedBlocks: 4,
  inFlightBlocks: 0,
  routedBlocks: 6,
  blockSize: 16,
  promptTokens: 100,
  cachedTokens: 64,
  speaksCached: true,
};

describe("expectedCachedTokens (vLLM's count)", () => {
  test("whole blocks only; a prompt cached whole recomputes its last token, so its last block", () => {
    expect(expectedCachedTokens(6, 100, 16)).toBe(96); // 100 tokens: 6 full blocks, all may hit
    expect(expectedCachedTokens(6, 96, 16)).toBe(80); // 96 = 6 blocks exactly: the last one is recomputed
    expect(expectedCachedTokens(2, 96, 16)).toBe(32);
    expect(expectedCachedTokens(0, 1, 16)).toBe(0);
  });
});

describe("checkAnswer", () => {
  test("agree when served what was predicted", () =>
    expect(checkAnswer(base).verdict).toBe("agree"));
  test("another prompt length: tokens_differ", () =>
    expect(checkAnswer({ ...base, promptTokens: 103 }).verdict).toBe("tokens_differ"));
  test("a hit that is not whole blocks: block_size", () =>
    expect(checkAnswer({ ...base, cachedTokens: 40 }).verdict).toBe("block_size"));
  test("less than predicted: missed_hits", () =>
    expect(checkAnswer({ ...base, cachedTokens: 32 }).verdict).toBe("missed_hits"));
  test("less than predicted, and the index still claims the blocks at the answer's end: missed_hits", () =>
    expect(checkAnswer({ ...base, cachedTokens: 32, indexBlocksNow: () => 4 }).verdict).toBe(
      "missed_hits",
    ));
  test("less than predicted because they were evicted meanwhile (the removals came by the answer's end): agree", () => {
    expect(checkAnswer({ ...base, cachedTokens: 32, indexBlocksNow: () => 2 }).verdict).toBe(
      "agree",
    );
    expect(checkAnswer({ ...base, cachedTokens: 0, indexBlocksNow: () => 0 }).verdict).toBe(
      "agree",
    );
    // Only part of the eviction seen: the index still holds more than was served.
    expect(checkAnswer({ ...base, cachedTokens: 0, indexBlocksNow: () => 1 }).verdict).toBe(
      "missed_hits",
    );
  });
  test("less than predicted on a rank that sent removal events meanwhile (evicted, maybe recomputed and stored again by the end): agree", () => {
    // The index holds the blocks again at the answer's end: without the removals, missed_hits.
    expect(
      checkAnswer({ ...base, cachedTokens: 0, indexBlocksNow: () => 4, evictedMeanwhile: true })
        .verdict,
    ).toBe("agree");
    expect(
      checkAnswer({ ...base, cachedTokens: 0, indexBlocksNow: () => 4 }, true, true).verdict,
    ).toBe("agree");
    // Removals explain less served, never more.
    expect(checkAnswer({ ...base, cachedTokens: 96, evictedMeanwhile: true }).verdict).toBe(
      "unexpected_hits",
    );
  });
  test("more than predicted: unexpected_hits", () =>
    expect(checkAnswer({ ...base, cachedTokens: 96 }).verdict).toBe("unexpected_hits"));
  test("more than the index, explained by a request in flight: agree", () =>
    expect(checkAnswer({ ...base, cachedTokens: 96, inFlightBlocks: 6 }).verdict).toBe("agree"));
  test("more than predicted, but the index holds it by the answer's end (events were on their way): agree; still not: unexpected", () => {
    expect(checkAnswer({ ...base, cachedTokens: 96, indexBlocksNow: () => 6 }).verdict).toBe(
      "agree",
    );
    expect(checkAnswer({ ...base, cachedTokens: 96, indexBlocksNow: () => 4 }).verdict).toBe(
      "unexpected_hits",
    );
  });
  test("deeper than the router hashed: agree", () =>
    expect(
      checkAnswer({
        ...base,
        predictedBlocks: 6,
        routedBlocks: 6,
        routerTokens: 200,
        promptTokens: 200,
        cachedTokens: 160,
      }).verdict,
    ).toBe("agree"));
  test("no count from an engine that never reported one: unchecked; from one that did: 0", () => {
    expect(checkAnswer({ ...base, cachedTokens: undefined, speaksCached: false }).verdict).toBe(
      "unchecked",
    );
    expect(checkAnswer({ ...base, cachedTokens: undefined, speaksCached: true }).verdict).toBe(
      "missed_hits",
    );
  });
});
