import { describe, expect, test } from "bun:test";
import { schedulerConfig } from "../../../../../src/router/choose/config.ts";
import { endpointsOf } from "../../../../../src/router/choose/endpoints.ts";
import { findBestMatch } from "../../../../../src/router/choose/find-best-match.ts";
import { LoadTracker } from "../../../../../src/router/books/load-tracker.ts";
import { createPipeline } from "../../../../../src/router/choose/registry.ts";
import { chain, chooseAndBook, overlapsOf, seededRng } from "../helpers.ts";

describe("dynamo policy", () => {
  test("Dynamo's cost alone, whatever kv's credit / in-flight / wait-bound settings", () => {
    const config = schedulerConfig({
      overlapCredit: 32,
      inflightOverlap: true,
      prefillWaitFactor: 2,
    });
    const p = createPipeline("dynamo", config);
    expect(p.costs.map((c) => `${c.term.type}x${c.weight}`)).toEqual(["dynamo-tiered-kvx1"]);
    expect(p.inflightOverlap).toBe(false);
    expect(p.filters.map((f) => f.type)).toEqual(["allowed-worker-ids", "healthy", "engine-busy"]);
  });

  test("a warm worker with a queue loses to an idle cold one (no credit), unlike kv-blocks", () => {
    const BS = 16;
    const endpoints = endpointsOf([{ workerId: 1n }, { workerId: 2n }]);
    const pick = (policy: "dynamo" | "kv-blocks") => {
      const config = schedulerConfig({ blockSize: BS, overlapCredit: 32 });
      const tracker = new LoadTracker({ blockSize: BS });
      tracker.updateWorkers(endpoints.map((e) => e.worker));
      const pipeline = createPipeline(policy, config);
      // worker 1 is busy with an unrelated 64-block prompt
      chooseAndBook(
        {
          overlaps: overlapsOf(),
          seqHashes: chain(50, 64),
          isl: 64 * BS,
          endpoints: [endpoints[0]!],
          tracker,
          pipeline,
          config,
          now: 0,
          rng: seededRng(1),
        },
        "busy",
      );
      // the new prompt has 16 of 20 blocks cached on worker 1
      return findBestMatch({
        overlaps: overlapsOf({ "1:0": 16 }),
        seqHashes: chain(1, 20),
        isl: 20 * BS,
        endpoints,
        tracker,
        pipeline,
        config,
        now: 0,
        rng: seededRng(1),
      }).key;
    };
    expect(pick("dynamo")).toBe("2:0");
    expect(pick("kv-blocks")).toBe("1:0");
  });
});
