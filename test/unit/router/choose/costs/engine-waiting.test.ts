import { describe, expect, test } from "bun:test";
import { schedulerConfig } from "../../../../../src/router/choose/config.ts";
import { engineWaitingCost } from "../../../../../src/router/choose/costs/engine-waiting.ts";
import { endpoint } from "../../../../../src/router/choose/endpoints.ts";
import { findBestMatch } from "../../../../../src/router/choose/find-best-match.ts";
import { LoadTracker } from "../../../../../src/router/books/load-tracker.ts";
import { createPipeline } from "../../../../../src/router/choose/registry.ts";
import { readEngineLoad, waitingByRank } from "../../../../../src/fleet/engine-metrics.ts";
import { candidate, context, overlapsOf, request, seededRng } from "../helpers.ts";

describe("engine-waiting cost", () => {
  test("the rank's engine-reported waiting requests; unknown ranks cost nothing", () => {
    const ctx = context({ request: request({ engineWaiting: new Map([["1:0", 3]]) }) });
    expect(engineWaitingCost.cost(ctx, candidate(1))).toBe(3);
    expect(engineWaitingCost.cost(ctx, candidate(2))).toBe(0);
    expect(engineWaitingCost.cost(context(), candidate(1))).toBe(0);
  });

  test("in the kv pipeline only with a weight; then it moves a tie away from the queued engine", () => {
    expect(
      createPipeline("kv-blocks", schedulerConfig()).costs.map((c) => c.term.type),
    ).not.toContain("engine-waiting");
    const config = schedulerConfig({ engineWaitingWeight: 4 });
    const p = createPipeline("kv-blocks", config);
    expect(p.costs.find((c) => c.term.type === "engine-waiting")?.weight).toBe(4);
    for (let seed = 1; seed <= 20; seed++) {
      const sel = findBestMatch({
        overlaps: overlapsOf(),
        seqHashes: null,
        isl: 64,
        endpoints: [endpoint(1), endpoint(2)],
        tracker: new LoadTracker({ blockSize: 16 }),
        pipeline: p,
        config,
        now: 0,
        rng: seededRng(seed),
        engineWaiting: new Map([["1:0", 2]]),
      });
      expect(sel.worker.workerId, `seed ${seed}`).toBe(2n);
    }
  });

  test("waitingByRank keeps ranks with a queue, keyed by (worker, rank)", () => {
    const load = readEngineLoad(
      'vllm:num_requests_waiting{engine="0"} 0\nvllm:num_requests_waiting{engine="1"} 5\n',
      2,
    );
    expect([...waitingByRank([[9n, load]])]).toEqual([["9:1", 5]]);
  });
});
