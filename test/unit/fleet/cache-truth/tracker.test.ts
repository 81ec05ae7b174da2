import { describe, expect, test } from "bun:test";
import { CacheTruth, type AnswerInput } from "../../../../src/fleet/cache-truth/tracker.ts";
import { removedEvent, storedEvent } from "../../../../src/core/events.ts";
import type { WorkerId } from "../../../../src/core/ids.ts";

const W = 7n as WorkerId;
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

/** An answer that served none of the 4 blocks predicted, while the index still holds them at its end. */
const missed = (removalsAtRoute: number | undefined): AnswerInput => ({
  routerTokens: 100,
  predictedBlocks: 4,
  inFlightBlocks: 0,
  routedBlocks: 6,
  indexBlocksNow: () => 4,
  blockSize: 16,
  promptTokens: 100,
  cachedTokens: 0,
  removalsAtRoute,
});

describe("CacheTruth", () => {
  test("removal events from a rank between routing and the answer's end excuse a shallower hit there, and only there", () => {
    const warned: string[] = [];
    const t = new CacheTruth({
      now: () => 1000,
      log: { ...quiet, warn: (m: string) => warned.push(m) } as never,
    });
    t.eventsApplied([storedEvent(W, 1n, [])]);
    expect(t.removalsSeen(W, 0)).toBe(0);
    // Each answer was routed before an eviction on its rank: no evidence against the index.
    for (let i = 0; i < 6; i++) {
      const at = t.removalsSeen(W, 0);
      t.eventsApplied([removedEvent(W, BigInt(2 + i), [BigInt(i)])]);
      t.answer(W, 0, missed(at));
    }
    expect(t.removalsSeen(W, 0)).toBe(6);
    expect(t.removalsSeen(W, 1)).toBe(0);
    expect(t.state(W, 0)).toBe("exact");
    expect(warned).toEqual([]);
    // No removal since routing (or none known): the same answers are a stale index (half the window).
    for (let i = 0; i < 6; i++) t.answer(W, 0, missed(i === 0 ? undefined : t.removalsSeen(W, 0)));
    expect(t.state(W, 0)).toBe("degraded");
    expect(t.causeOf(W, 0)).toBe("stale_index");
    expect(warned.length).toBe(1);
  });
  test("a rank speaks cached tokens once one of its answers carried a count (the canary then reads a missing one as 0)", () => {
    const t = new CacheTruth({ now: () => 1000, log: quiet as never });
    t.answer(W, 0, { ...missed(undefined), predictedBlocks: 0, cachedTokens: undefined });
    expect(t.speaksCached(W, 0)).toBe(false);
    t.answer(W, 0, { ...missed(undefined), predictedBlocks: 0 });
    expect(t.speaksCached(W, 0)).toBe(true);
    expect(t.speaksCached(W, 1)).toBe(false);
    expect(t.state(W, 0)).toBe("exact");
  });
});
