import { describe, expect, test } from "bun:test";
import { worker, workerKey } from "../../../../src/core/ids.ts";
import { schedulerConfig, type SchedulerConfig } from "../../../../src/router/choose/config.ts";
import { endpoint, endpointsOf } from "../../../../src/router/choose/endpoints.ts";
import {
  findBestMatch,
  type FindBestMatchInput,
} from "../../../../src/router/choose/find-best-match.ts";
import { LoadTracker } from "../../../../src/router/books/load-tracker.ts";
import { createPipeline } from "../../../../src/router/choose/registry.ts";
import type { Endpoint } from "../../../../src/router/choose/types.ts";
import { routerErrorCode as codeOf } from "../../../support/errors.ts";
import { chain, chooseAndBook, overlapsOf, seededRng } from "./helpers.ts";

const BS = 16;
const K1 = workerKey(1n);
const K2 = workerKey(2n);

function setup(
  endpoints: Endpoint[] = endpointsOf([{ workerId: 1n }, { workerId: 2n }]),
  partial: Partial<SchedulerConfig> = {},
) {
  const config = schedulerConfig({ blockSize: BS, ...partial });
  const tracker = new LoadTracker({ blockSize: BS });
  tracker.updateWorkers(endpoints.map((e) => e.worker));
  const pipeline = createPipeline("kv-blocks", config);
  const base = {
    endpoints,
    tracker,
    pipeline,
    config,
    now: 0,
    rng: seededRng(1),
    seqHashes: null,
    overlaps: overlapsOf(),
    isl: 64,
  };
  return {
    config,
    tracker,
    pipeline,
    run: (over: Partial<FindBestMatchInput> = {}) => findBestMatch({ ...base, ...over }),
    /** Choose, then book through the request's lease, as the router does. */
    book: (requestId: string, over: Partial<FindBestMatchInput> = {}, loraName?: string) =>
      chooseAndBook({ ...base, ...over }, requestId, loraName).selection,
  };
}

describe("findBestMatch", () => {
  test("prefers the worker with the cached prefix when loads are equal", () => {
    const { run } = setup();
    const s = run({ overlaps: overlapsOf({ [K2]: 3 }), seqHashes: chain(1, 4) });
    expect(s.worker).toEqual(worker(2));
    expect(s.overlapBlocks).toBe(3);
    expect(s.requiredBlocks).toBe(4);
  });

  test("costs are Dynamo's logits: weight × (uncached + active prefill)/bs + new + active blocks", () => {
    const { run, tracker } = setup();
    tracker.addRequest(
      { requestId: "busy", worker: worker(2), seqHashes: chain(9, 10), isl: 160, overlap: 0 },
      0,
    );
    const s = run({ overlaps: overlapsOf({ [K2]: 3 }), seqHashes: chain(1, 4), isl: 70 });
    const cost = new Map(s.candidates.map((c) => [c.key, c.cost]));
    expect(cost.get(K1)).toBe(70 / 16 + 4);
    expect(cost.get(K2)).toBe((70 - 48 + 160) / 16 + (4 + 10));
    expect(s.worker).toEqual(worker(1)); // the cache does not outweigh the queue
    expect(s.requiredBlocks).toBe(5);
  });

  test("blocks the request shares with a worker's active requests are not new there", () => {
    const { run, tracker } = setup();
    const prompt = chain(3, 8);
    tracker.addRequest(
      { requestId: "a", worker: worker(1), seqHashes: prompt.slice(0, 6), isl: 96, overlap: 0 },
      0,
    );
    tracker.markPrefillCompleted("a", 0);
    const s = run({ seqHashes: prompt, isl: 128 });
    const c1 = s.candidates.find((c) => c.key === K1)!;
    expect(c1.decodeBlocks).toBe(2 + 6);
    expect(s.candidates.find((c) => c.key === K2)!.decodeBlocks).toBe(8);
  });

  test("choosing books nothing; the lease books the chosen worker with its overlap", () => {
    const { run, book, tracker } = setup();
    run({ overlaps: overlapsOf({ [K1]: 2 }), seqHashes: chain(1, 4) });
    expect(tracker.activeRequests(K1)).toBe(0);
    book("r1", { overlaps: overlapsOf({ [K1]: 2 }), seqHashes: chain(1, 4) }, "l");
    expect(tracker.workerOf("r1")).toEqual(worker(1));
    expect(tracker.activeTokens(K1)).toBe(64 - 32);
    expect(tracker.activeBlocks(K1)).toBe(4);
    expect(tracker.activeLoraCounts().get("l")).toBe(1);
  });

  test("a second booking under the same id is a duplicate_request", () => {
    const { book } = setup();
    book("r");
    expect(codeOf(() => book("r"))).toBe("duplicate_request");
  });

  test("bad input: an empty prompt", () => {
    const { run } = setup();
    expect(codeOf(() => run({ isl: 0 }))).toBe("invalid_request");
  });

  test("no endpoints, or none allowed, is no_endpoints", () => {
    const { run } = setup();
    expect(codeOf(() => run({ endpoints: [] }))).toBe("no_endpoints");
    expect(codeOf(() => run({ allowedWorkerIds: new Set([5n]) }))).toBe("no_endpoints");
    expect(
      run({ allowedWorkerIds: new Set([2n]), overlaps: overlapsOf({ [K1]: 4 }) }).worker,
    ).toEqual(worker(2));
  });

  test("unhealthy endpoints are never chosen", () => {
    const eps = [endpoint(1, 0, { healthy: false }), endpoint(2)];
    const { run } = setup(eps);
    expect(run({ overlaps: overlapsOf({ [K1]: 4 }) }).worker).toEqual(worker(2));
  });

  test("busy threshold: busy ranks are skipped; all busy is all_workers_busy", () => {
    const eps = [
      endpoint(1, 0, { maxNumBatchedTokens: 100 }),
      endpoint(2, 0, { maxNumBatchedTokens: 100 }),
    ];
    const { run, tracker } = setup(eps, { busyThreshold: 1 });
    tracker.addRequest(
      { requestId: "a", worker: worker(1), seqHashes: null, isl: 150, overlap: 0 },
      0,
    );
    expect(run({ overlaps: overlapsOf({ [K1]: 4 }) }).worker).toEqual(worker(2));
    tracker.addRequest(
      { requestId: "b", worker: worker(2), seqHashes: null, isl: 150, overlap: 0 },
      0,
    );
    expect(codeOf(() => run())).toBe("all_workers_busy");
  });

  test("the config's weight and temperature: weight 0 ignores the cache; temperature samples", () => {
    const o = overlapsOf({ [K2]: 4 });
    const busyOn2 = (partial: Partial<SchedulerConfig>) => {
      const s = setup(undefined, partial);
      s.tracker.addRequest(
        { requestId: "a", worker: worker(2), seqHashes: chain(5, 3), isl: 48, overlap: 3 },
        0,
      );
      return s.run;
    };
    expect(busyOn2({})({ overlaps: o, seqHashes: chain(1, 4) }).worker).toEqual(worker(2));
    expect(
      busyOn2({ overlapScoreWeight: 0 })({ overlaps: o, seqHashes: chain(1, 4) }).worker,
    ).toEqual(worker(1));
    const hot = busyOn2({ temperature: 10 });
    const seen = new Set<string>();
    const rng = seededRng(8);
    for (let i = 0; i < 60; i++) seen.add(hot({ overlaps: o, seqHashes: chain(1, 4), rng }).key);
    expect(seen).toEqual(new Set([K1, K2]));
  });

  test("equal costs are broken by the smaller index tree, then at random", () => {
    const { run } = setup();
    expect(run({ overlaps: overlapsOf({}, { [K1]: 900, [K2]: 100 }) }).worker).toEqual(worker(2));
    const seen = new Set<string>();
    const rng = seededRng(21);
    for (let i = 0; i < 40; i++) seen.add(run({ rng }).key);
    expect(seen).toEqual(new Set([K1, K2]));
  });

  test("an endpoint the tracker does not know gets Dynamo's fallbacks and is registered when booked", () => {
    const eps = [endpoint(1), endpoint(7)];
    const { book, tracker } = setup(eps);
    tracker.updateWorkers([worker(1)]);
    tracker.addRequest(
      { requestId: "a", worker: worker(1), seqHashes: chain(2, 20), isl: 320, overlap: 0 },
      0,
    );
    const s = book("r", { isl: 40 });
    const c7 = s.candidates.find((c) => c.key === "7:0")!;
    expect(c7.tracked).toBe(false);
    expect(c7.prefillTokens).toBe(40);
    expect(c7.decodeBlocks).toBe(2); // floor(40 / 16)
    expect(s.worker).toEqual(worker(7));
    expect(tracker.workerOf("r")).toEqual(worker(7));
  });

  test("data-parallel ranks are separate candidates", () => {
    const eps = endpointsOf([{ workerId: 4n, dpStart: 0, dpSize: 2 }]);
    expect(eps.map((e) => e.key)).toEqual(["4:0", "4:1"]);
    const { book, tracker } = setup(eps);
    const s = book("r", { overlaps: overlapsOf({ "4:1": 2 }) });
    expect(s.worker).toEqual(worker(4, 1));
    expect(tracker.workerOf("r")).toEqual(worker(4, 1));
  });

  test("inflightOverlap: a prefix held by an in-flight request counts as cached on its worker", () => {
    for (const inflightOverlap of [false, true]) {
      const { run, tracker } = setup(undefined, { inflightOverlap, overlapScoreWeight: 4 });
      const seq = chain(7, 8);
      // A ran its prefill on worker 1, but its Stored event has not reached the index yet.
      tracker.addRequest(
        { requestId: "a", worker: worker(1), seqHashes: seq, isl: 128, overlap: 0 },
        0,
      );
      tracker.markPrefillCompleted("a", 0);
      // Worker 2 has the smaller tree, which wins Dynamo's ties.
      const b = run({
        seqHashes: seq,
        isl: 128,
        overlaps: overlapsOf({}, { [K1]: 100, [K2]: 50 }),
      });
      if (inflightOverlap) {
        // Worker 1: 0 new tokens + 8 active blocks = 8; worker 2: 4 × 8 prefill blocks + 8 = 40.
        expect(b.worker).toEqual(worker(1));
        expect(b.overlapBlocks).toBe(8);
      } else {
        // Dynamo: worker 1 = 4 × 8 prefill blocks + 8 active = 40 = worker 2's 4 × 8 + 8 new; tie → smaller tree.
        expect(b.worker).toEqual(worker(2));
        expect(b.overlapBlocks).toBe(0);
      }
    }
  });

  test("overlapCredit: a warm worker with a prefill queue wins over an idle cold one once cache is credited", () => {
    for (const overlapCredit of [0, 2]) {
      const { run, tracker } = setup(undefined, { overlapCredit });
      // Worker 1 holds the 8-block prefix but is prefilling another 96-token request.
      tracker.addRequest(
        { requestId: "busy", worker: worker(1), seqHashes: chain(3, 6), isl: 96, overlap: 0 },
        0,
      );
      const b = run({ seqHashes: chain(9, 10), isl: 160, overlaps: overlapsOf({ [K1]: 8 }) });
      // Costs: worker 1 = (32 new + 96 queued)/16 = 8 prefill + (10 new + 6 active) decode = 24 − credit × 8;
      //        worker 2 = 160/16 = 10 prefill + 10 new decode = 20.
      expect(b.worker).toEqual(overlapCredit === 0 ? worker(2) : worker(1));
    }
  });
});
