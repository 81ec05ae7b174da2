import { describe, expect, test } from "bun:test";
import { worker } from "../../../../src/core/ids.ts";
import { schedulerConfig } from "../../../../src/router/choose/config.ts";
import { endpointsOf } from "../../../../src/router/choose/endpoints.ts";
import { LoadTracker } from "../../../../src/router/books/load-tracker.ts";
import {
  POLICY_NAMES,
  createPipeline,
  isPolicyName,
  type PolicyName,
} from "../../../../src/router/choose/registry.ts";
import { chain, chooseAndBook, overlapsOf, seededRng } from "./helpers.ts";

const N = 4;
const BS = 16;
const endpoints = endpointsOf(Array.from({ length: N }, (_, i) => ({ workerId: BigInt(i + 1) })));

function setup(policy: PolicyName, partial: Parameters<typeof schedulerConfig>[0] = {}) {
  const config = schedulerConfig({ blockSize: BS, ...partial });
  const tracker = new LoadTracker({ blockSize: BS });
  tracker.updateWorkers(endpoints.map((e) => e.worker));
  return { config, tracker, pipeline: createPipeline(policy, config) };
}

/**
 * Place `count` 32-block requests whose first `shared` blocks are one prefix cached on
 * worker 1 (the rest unique per request); return the requests per worker.
 */
function placeHotPrefix(
  policy: PolicyName,
  count: number,
  partial: Parameters<typeof schedulerConfig>[0] = {},
  { shared = 32, seed = 1 } = {},
): number[] {
  const { config, tracker, pipeline } = setup(policy, partial);
  const rng = seededRng(seed);
  const overlaps = overlapsOf({ "1:0": shared }, { "1:0": shared });
  for (let i = 0; i < count; i++) {
    const hashes = new BigUint64Array(32);
    hashes.set(chain(7, shared));
    hashes.set(chain(100 + i, 32 - shared, shared), shared);
    chooseAndBook(
      {
        overlaps,
        seqHashes: hashes,
        isl: 32 * BS,
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

describe("policy registry", () => {
  test("knows our six policies and the peers' (llm-d in two profiles)", () => {
    expect([...POLICY_NAMES]).toEqual([
      "kv",
      "kv-blocks",
      "approx",
      "round-robin",
      "random",
      "least-loaded",
      "dynamo",
      "sglang",
      "llm-d",
      "llm-d-p2p",
      "prodstack-prefix",
      "prodstack-session",
    ]);
    expect(isPolicyName("kv")).toBe(true);
    expect(isPolicyName("fastest")).toBe(false);
  });

  test("kv prices predicted TTFT plus the delay to others, fastest-then-cache, in-flight prefixes always on", () => {
    const p = createPipeline(
      "kv",
      schedulerConfig({ inflightOverlap: false, overlapCredit: 32, prefillWaitFactor: 2 }),
    );
    expect(p.costs.map((c) => [c.term.type, c.weight])).toEqual([
      ["predicted-ttft", 1],
      ["delay-to-others", 1],
    ]);
    expect(p.picker.type).toBe("fastest-then-cache");
    expect(p.filters.map((f) => f.type)).toEqual(["allowed-worker-ids", "healthy", "engine-busy"]);
    expect(p.inflightOverlap).toBe(true);
    expect(p.predictsTtft).toBe(true);
  });

  test("kv-blocks (the old kv) and approx share the Dynamo cost and temperature picker", () => {
    for (const name of ["kv-blocks", "approx"] as const) {
      const p = createPipeline(name, schedulerConfig());
      expect(p.costs.map((c) => c.term.type)).toEqual(["dynamo-kv"]);
      expect(p.picker.type).toBe("temperature");
      expect(p.filters.map((f) => f.type)).toEqual([
        "allowed-worker-ids",
        "healthy",
        "engine-busy",
      ]);
    }
  });

  test("optional parts are enabled by config only", () => {
    const p = createPipeline(
      "kv-blocks",
      schedulerConfig({ busyThreshold: 2, loadGuardFactor: 1.25, activeRequestWeight: 0.5 }),
    );
    expect(p.filters.map((f) => f.type)).toEqual([
      "allowed-worker-ids",
      "healthy",
      "engine-busy",
      "busy-threshold",
      "load-guard",
    ]);
    expect(p.costs.map((c) => [c.term.type, c.weight])).toEqual([
      ["dynamo-kv", 1],
      ["active-requests", 0.5],
    ]);
  });

  test("round-robin spreads requests evenly whatever the cache says", () => {
    expect(placeHotPrefix("round-robin", 12)).toEqual([3, 3, 3, 3]);
  });

  test("random uses every worker over many requests (seed 4)", () => {
    const counts = placeHotPrefix("random", 200, {}, { seed: 4 });
    expect(counts.reduce((a, b) => a + b, 0)).toBe(200);
    for (const c of counts) expect(c).toBeGreaterThan(30);
  });

  test("least-loaded ignores the cache and fills the emptiest worker", () => {
    expect(placeHotPrefix("least-loaded", 8, {}, { shared: 0 })).toEqual([2, 2, 2, 2]);
  });

  test("pure kv piles a hot cached prefix onto one worker (the known failure mode)", () => {
    expect(placeHotPrefix("kv-blocks", 20)).toEqual([20, 0, 0, 0]);
  });

  test("kv with the load guard (requests) keeps max/mean ≤ 1.25 on the same workload", () => {
    const counts = placeHotPrefix("kv-blocks", 20, {
      loadGuardFactor: 1.25,
      loadGuardMetric: "requests",
    });
    expect(Math.max(...counts) / (20 / N)).toBeLessThanOrEqual(1.25);
  });

  test("the kv cost balances block load, not request count: cached requests look cheap", () => {
    // 28 of 32 blocks cached on worker 1: it ends with 5x the requests of the others while
    // block loads stay within 10%; only a request-count guard changes that.
    const pure = placeHotPrefix("kv-blocks", 40, {}, { shared: 28 });
    expect(pure[0]).toBeGreaterThan(3 * pure[1]!);
    const guarded = placeHotPrefix(
      "kv-blocks",
      40,
      { loadGuardFactor: 1.25, loadGuardMetric: "requests" },
      { shared: 28 },
    );
    expect(Math.max(...guarded) / 10).toBeLessThanOrEqual(1.25);
    expect(guarded[0]).toBe(Math.max(...guarded)); // the cached worker still gets the most
  });

  test("kv with an active-requests term also spreads the hot prefix", () => {
    const counts = placeHotPrefix("kv-blocks", 20, { activeRequestWeight: 20 });
    expect(Math.max(...counts)).toBeLessThan(20);
  });

  test("each created round-robin pipeline has its own position", () => {
    const a = createPipeline("round-robin", schedulerConfig());
    const b = createPipeline("round-robin", schedulerConfig());
    expect(a.picker).not.toBe(b.picker);
    expect(worker(1)).toEqual(endpoints[0]!.worker);
  });
});
