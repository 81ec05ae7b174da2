/**
 * Issue 14's burst: 400 concurrent requests sharing a 2000-token prefix over 4 workers. With
 * the credit alone (the old default) they went 201/199 to two workers and left two idle; with
 * the prefill-wait bound the hot prefix is copied to every worker once the first is busy.
 */
import { describe, expect, test } from "bun:test";
import { schedulerConfig, type SchedulerConfig } from "../../../../../src/router/choose/config.ts";
import { endpointsOf } from "../../../../../src/router/choose/endpoints.ts";
import { LoadTracker } from "../../../../../src/router/books/load-tracker.ts";
import { createPipeline } from "../../../../../src/router/choose/registry.ts";
import { chain, chooseAndBook, overlapsOf, seededRng } from "../helpers.ts";

const BS = 16;
const PREFIX = 125; // 2000 tokens
const endpoints = endpointsOf([1n, 2n, 3n, 4n].map((workerId) => ({ workerId })));

function burst(config: SchedulerConfig, seed = 1): number[] {
  const tracker = new LoadTracker({ blockSize: BS });
  tracker.updateWorkers(endpoints.map((e) => e.worker));
  const pipeline = createPipeline("kv-blocks", config);
  const rng = seededRng(seed);
  for (let i = 0; i < 400; i++) {
    const hashes = new BigUint64Array(PREFIX + 4);
    hashes.set(chain(7, PREFIX));
    hashes.set(chain(1000 + i, 4, PREFIX), PREFIX);
    // Nothing is indexed yet (no prefill finished): only in-flight prefixes are known.
    chooseAndBook(
      {
        overlaps: overlapsOf(),
        seqHashes: hashes,
        isl: hashes.length * BS,
        endpoints,
        tracker,
        pipeline,
        config,
        now: 0,
        rng,
      },
      `r${i}`,
    );
  }
  return endpoints.map((e) => tracker.activeRequests(e.key));
}

// The router's defaults (src/config/schema.ts).
const DEFAULTS = {
  blockSize: BS,
  overlapCredit: 16,
  inflightOverlap: true,
  prefillWaitFactor: 1.05,
  prefillWaitQueueShare: 0.75,
};

describe("kv-blocks (the old kv default) on a burst sharing one prefix", () => {
  test("credit alone (old default, no bound): the burst piles onto one worker", () => {
    const counts = burst(
      schedulerConfig({ ...DEFAULTS, overlapCredit: 32, prefillWaitFactor: null }),
    );
    expect(Math.max(...counts)).toBeGreaterThan(200);
    expect(counts.filter((c) => c === 0).length).toBeGreaterThanOrEqual(2);
  });

  test("with the prefill-wait bound every worker takes a share, none above 1.25x the mean", () => {
    for (const seed of [1, 2, 3]) {
      const counts = burst(schedulerConfig(DEFAULTS), seed);
      expect({ seed, idle: counts.filter((c) => c === 0).length }).toEqual({ seed, idle: 0 });
      expect(Math.max(...counts)).toBeLessThanOrEqual(1.25 * 100);
    }
  });
});
