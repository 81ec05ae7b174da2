import { describe, expect, test } from "bun:test";
import { RouterError } from "../../../../../src/core/errors.ts";
import { engineBusy } from "../../../../../src/router/choose/filters/engine-busy.ts";
import { findBestMatch } from "../../../../../src/router/choose/find-best-match.ts";
import { schedulerConfig } from "../../../../../src/router/choose/config.ts";
import { endpoint } from "../../../../../src/router/choose/endpoints.ts";
import { LoadTracker } from "../../../../../src/router/books/load-tracker.ts";
import { createPipeline } from "../../../../../src/router/choose/registry.ts";
import { candidate, context, overlapsOf, request, seededRng } from "../helpers.ts";

describe("engine-busy filter", () => {
  const cs = [candidate(1), candidate(2), candidate(3)];

  test("no busy keys: every candidate stays (same array)", () => {
    expect(engineBusy.filter(context(), cs)).toBe(cs);
    expect(engineBusy.filter(context({ request: request({ busyKeys: new Set() }) }), cs)).toBe(cs);
  });

  test("while any candidate is not busy nothing is filtered (the test triggers the queue, it does not steer)", () => {
    const ctx = context({ request: request({ busyKeys: new Set(["2:0", "9:0"]) }) });
    expect(engineBusy.filter(ctx, cs)).toBe(cs);
    const all = context({ request: request({ busyKeys: new Set(["1:0", "2:0", "3:0"]) }) });
    expect(engineBusy.filter(all, cs)).toEqual([]);
  });

  test("every rank busy: the pipeline fails with all_workers_busy (the admission queue's cue)", () => {
    const config = schedulerConfig();
    const run = (busyKeys: Set<string>) =>
      findBestMatch({
        overlaps: overlapsOf(),
        seqHashes: null,
        isl: 32,
        endpoints: [endpoint(1), endpoint(2)],
        tracker: new LoadTracker({ blockSize: 16 }),
        pipeline: createPipeline("kv", config),
        config,
        now: 0,
        rng: seededRng(7),
        busyKeys,
      });
    expect(run(new Set(["1:0"])).worker.workerId).toBeOneOf([1n, 2n]);
    let err: unknown;
    try {
      run(new Set(["1:0", "2:0"]));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(RouterError);
    expect((err as RouterError).code).toBe("all_workers_busy");
  });
});
