/**
 * The time-based kv policy's decisions on hand-built cases: a burst of siblings sharing a prompt
 * the first of them is computing, a slow engine, a restarted engine, a warm cache behind a long
 * queue, engines whose cache is smaller than one prompt, a new prompt on an idle fleet (the emptiest
 * cache, and with every cache full the one untouched longest, or with other routers a draw weighted
 * by how long each has gone untouched). Engines prefill at 0.01 ms per token with 1 ms of latency
 * (the predictor is taught that before each case), blocks of 16 tokens.
 */
import { describe, expect, test } from "bun:test";
import { storedEvent } from "../../../../../src/core/events.ts";
import type { OverlapScores } from "../../../../../src/core/overlap.ts";
import { LoadTracker } from "../../../../../src/router/books/load-tracker.ts";
import { RequestLease } from "../../../../../src/router/books/request-lease.ts";
import {
  firstTokenSampler,
  TtftPredictor,
} from "../../../../../src/router/books/ttft-predictor.ts";
import { schedulerConfig } from "../../../../../src/router/choose/config.ts";
import type { DelayToOthers } from "../../../../../src/router/choose/costs/delay-to-others.ts";
import { endpointsOf } from "../../../../../src/router/choose/endpoints.ts";
import { findBestMatch } from "../../../../../src/router/choose/find-best-match.ts";
import { createPipeline } from "../../../../../src/router/choose/registry.ts";
import { RadixTree } from "../../../../../src/router/kv-index/radix-tree.ts";
import { chain, overlapsOf, seededRng } from "../helpers.ts";

const BS = 16;
const MS_PER_TOKEN = 0.01;

function world(engines: number, speeds: Record<string, number> = {}) {
  const endpoints = endpointsOf(
    Array.from({ length: engines }, (_, i) => ({ workerId: BigInt(i + 1) })),
  );
  const config = schedulerConfig({ blockSize: BS });
  const tracker = new LoadTracker({ blockSize: BS });
  tracker.updateWorkers(endpoints.map((e) => e.worker));
  const ttft = new TtftPredictor({ blockSize: BS });
  // Teach it the engines: first tokens at 1 ms + msPerToken × tokens (some engines slower).
  const rng = seededRng(5);
  for (let round = 0; round < 12; round++) {
    for (const e of endpoints) {
      const tokens = 100 + Math.floor(rng() * 3000);
      ttft.observe({
        key: e.key,
        bookedAt: -1e6,
        at: -1e6 + 1 + (speeds[e.key] ?? MS_PER_TOKEN) * tokens,
        tokens,
      });
    }
  }
  const pipeline = createPipeline("kv", config);
  const rngPick = seededRng(1);
  const leases = new Map<string, RequestLease>();
  /** Choose and book as the router does; returns the chosen key. */
  const route = (
    id: string,
    hashes: BigUint64Array,
    now: number,
    overlaps: OverlapScores = overlapsOf(),
    isl = hashes.length * BS,
  ) => {
    const sel = findBestMatch({
      overlaps,
      seqHashes: hashes,
      isl,
      endpoints,
      tracker,
      pipeline,
      config,
      now,
      rng: rngPick,
      ttft,
    });
    const sample = firstTokenSampler(ttft, {
      key: sel.key,
      bookedAt: now,
      tokens: sel.ttftTokens!,
      predictedMs: sel.predictedTtftMs,
    });
    const booking = {
      requestId: id,
      worker: sel.worker,
      seqHashes: hashes,
      isl,
      overlap: sel.overlapBlocks,
    };
    leases.set(
      id,
      RequestLease.book(tracker, booking, now, BS, () => now, rngPick, sample),
    );
    return sel;
  };
  return { endpoints, tracker, ttft, pipeline, route, leases, config };
}

/** A prompt: the shared prefix (blocks of `base`) then its own blocks. */
function prompt(shared: number, own: number, base = 7, ownBase = 1000) {
  const h = new BigUint64Array(shared + own);
  h.set(chain(base, shared));
  h.set(chain(ownBase, own, shared), shared);
  return h;
}

describe("kv (predicted TTFT): a burst of siblings", () => {
  test("siblings arriving while the first computes their shared prompt wait for it there: the prompt is computed once", () => {
    const w = world(3);
    const first = w.route("a", prompt(100, 4, 7, 1000), 0);
    // 10 ms later the first has done 1000 of its 1664 tokens; each sibling needs its own 64.
    const siblings = [1, 2, 3, 4, 5].map((i) => w.route(`s${i}`, prompt(100, 4, 7, 1000 + i), 10));
    for (const s of siblings) expect(s.key).toBe(first.key);
    // The sibling's prediction: the rest of the first's prefill, the siblings ahead, its own blocks.
    expect(siblings[4]!.ttftTokens).toBeCloseTo(664 + 4 * 64 + 64, 6);
  });

  test("but not behind a first whose own tail takes longer than computing the shared prompt again elsewhere", () => {
    const w = world(3);
    const first = w.route("a", prompt(100, 300, 7, 1000), 0); // 1600 shared + 4800 of its own
    const sibling = w.route("b", prompt(100, 4, 7, 2000), 1);
    expect(sibling.key).not.toBe(first.key);
    expect(sibling.uncachedTokens).toBe(104 * BS);
  });
});

describe("kv (predicted TTFT): engines whose cache is smaller than one prompt", () => {
  /**
   * Engine 1 computes agent X's first call, then agent Y's (7 blocks each); engine 2 four short
   * unrelated prompts (3 blocks each). Then X's second call (X's 6 blocks + 1 of its own).
   */
  function siblingAfterAnotherAgent(capacity: number | undefined) {
    const w = world(2);
    const [e1, e2] = w.endpoints as [(typeof w.endpoints)[0], (typeof w.endpoints)[0]];
    for (const e of w.endpoints) w.tracker.setKvCapacity(e.worker, capacity);
    const book = (id: string, worker: typeof e1.worker, hashes: BigUint64Array) =>
      RequestLease.book(
        w.tracker,
        { requestId: id, worker, seqHashes: hashes, isl: hashes.length * BS, overlap: 0 },
        0,
        BS,
        () => 0,
        seededRng(2),
      );
    book("x1", e1.worker, prompt(6, 1, 7, 1000));
    book("y1", e1.worker, prompt(6, 1, 8, 2000));
    for (let i = 0; i < 4; i++) book(`z${i}`, e2.worker, prompt(3, 0, 100 + i));
    return { sel: w.route("x2", prompt(6, 1, 7, 1001), 0), e1, e2, w };
  }

  test("capacity unknown: the sibling counts on X's prompt in flight on engine 1 (224 tokens ahead + 16 of its own, against 192 + 112)", () => {
    const { sel, e1 } = siblingAfterAnotherAgent(undefined);
    expect(sel.key).toBe(e1.key);
    expect(sel.uncachedTokens).toBe(16);
  });

  test("4 blocks each: Y's prompt, queued last on engine 1, leaves none of X's there, so the sibling goes where less is queued", () => {
    const { sel, e2 } = siblingAfterAnotherAgent(4);
    expect(sel.key).toBe(e2.key);
    expect(sel.uncachedTokens).toBe(7 * BS);
    expect(sel.overlapBlocks).toBe(0);
    expect(sel.ttftTokens).toBe(4 * 3 * BS + 7 * BS);
  });

  test("kv-blocks keeps crediting the whole in-flight prefix whatever the capacity (it stays the kv before)", () => {
    const { w, e1 } = siblingAfterAnotherAgent(4);
    const hashes = prompt(6, 1, 7, 1002);
    const config = schedulerConfig({ blockSize: BS, inflightOverlap: true }); // kv-blocks as the CLI sets it
    const pipeline = createPipeline("kv-blocks", config);
    const sel = findBestMatch({
      overlaps: overlapsOf(),
      seqHashes: hashes,
      isl: hashes.length * BS,
      endpoints: w.endpoints,
      tracker: w.tracker,
      pipeline,
      config,
      now: 0,
      rng: seededRng(3),
    });
    expect(sel.candidates.find((c) => c.key === e1.key)!.overlapBlocks).toBe(6);
  });
});

describe("kv (predicted TTFT): engine speeds", () => {
  test("a slow engine (twice the time per token) gets a third of a burst, the fast one two thirds", () => {
    const w = world(2, { "2:0": 2 * MS_PER_TOKEN });
    // The fleet's line runs through both engines' samples: against it the slow one is ~1.8 x.
    expect(w.ttft.speed("2:0").factor).toBeGreaterThan(1.5);
    const chosen = Array.from(
      { length: 12 },
      (_, i) => w.route(`r${i}`, prompt(0, 64, 7, 100 + i), 0).key,
    );
    expect(chosen.filter((k) => k === "1:0").length).toBe(8);
    expect(chosen.filter((k) => k === "2:0").length).toBe(4);
  });

  test("a restarted engine: its cache is gone from the index, and the stalled first token of the restart does not make it look slow", () => {
    const w = world(2);
    const hot = prompt(90, 10, 7, 3000);
    // Engine 1 holds the prompt's first 90 blocks and is computing an unrelated 800-token prompt.
    w.route("busy", prompt(0, 50, 9, 9), 0, overlapsOf({}), 800);
    expect(w.tracker.activeTokens("1:0")).toBe(800);
    expect(w.route("warm", hot, 1, overlapsOf({ "1:0": 90 })).key).toBe("1:0");
    // The restart: what was in flight there fails (freed), one request stalled through it.
    w.leases.get("busy")!.free();
    w.leases.get("warm")!.free();
    w.ttft.observe({ key: "1:0", bookedAt: 0, at: 30_000, tokens: 800 });
    expect(w.ttft.speed("1:0").factor).toBe(1);
    // Nothing is cached anywhere now and both are idle: they are equal, and each gets half of a burst.
    const chosen = Array.from(
      { length: 8 },
      (_, i) => w.route(`c${i}`, prompt(0, 40, 11, 200 + i), 100).key,
    );
    expect(chosen.filter((k) => k === "1:0").length).toBe(4);
  });
});

describe("kv (predicted TTFT): a warm cache behind a long queue", () => {
  // Engine 1 holds 80 of the prompt's 100 blocks (1280 of 1600 tokens) and has `queued` tokens to
  // prefill first; engine 2 is idle and cold. Waiting costs `queued`, going cold 1280 more tokens.
  const decide = (queued: number, warmUp = 0) => {
    const w = world(2);
    const costs = w.pipeline.costs.map((c) => c.term);
    // The busy share the delay-to-others weight is read from, as a loaded cluster shows it.
    for (let i = 0; i < warmUp; i++) {
      for (const c of costs)
        c.prepare?.({} as never, [{ prefillingRequests: 1 }, { prefillingRequests: 1 }] as never);
    }
    if (queued > 0) w.route("q", prompt(0, queued / BS, 9, 9), 0, overlapsOf({}), queued);
    const hot = prompt(80, 20, 7, 5000);
    if (queued > 0) expect(w.tracker.activeTokens("1:0")).toBe(queued);
    const sel = w.route("r", hot, 0, overlapsOf({ "1:0": 80 }));
    return {
      key: sel.key,
      weight: (costs.find((c) => c.type === "delay-to-others") as DelayToOthers).queueWeight,
    };
  };

  test("a short queue: the warm engine, sooner by the cached 1280 tokens less the queue", () => {
    expect(decide(800).key).toBe("1:0");
  });

  test("a queue longer than what the cache saves: the cold idle engine, on an idle cluster", () => {
    const d = decide(2400);
    expect(d.weight).toBeLessThan(0.01);
    expect(d.key).toBe("2:0");
  });

  test("the same queue on a loaded cluster: the warm engine, because computing the prompt again would delay the requests queuing behind it", () => {
    const d = decide(2400, 400);
    expect(d.weight).toBeGreaterThan(10);
    expect(d.key).toBe("1:0");
  });
});

describe("kv (predicted TTFT): a new prompt on an idle fleet", () => {
  /** Engine `workerId` stores `n` blocks of a prompt of its own (chain `base`), as its KV events say. */
  const fill = (index: RadixTree, workerId: bigint, base: number, n: number) => {
    const hashes = chain(base, n);
    index.applyEvent(
      storedEvent(
        workerId,
        0n,
        [...hashes].map((t, i) => ({ blockHash: BigInt(base * 1000 + i), tokensHash: t })),
      ),
    );
  };

  /** Engines 1-3 hold 40, 8 and 24 blocks of other prompts in a real index; engine 4 is empty. */
  function fleet() {
    const index = new RadixTree();
    fill(index, 1n, 100, 40);
    fill(index, 2n, 200, 8);
    fill(index, 3n, 300, 24);
    return index;
  }

  test("goes to the engine whose cache is emptiest, whatever the draw: the index's size for every engine, not only the matching ones", () => {
    const index = fleet();
    const cold = prompt(0, 30, 7, 9000);
    const overlaps = index.findMatches(cold);
    // Nothing matches, so Dynamo's tree sizes name no engine; the tie-break reads every engine's.
    expect(overlaps.scores.size).toBe(0);
    expect(overlaps.treeSizes.size).toBe(0);
    expect(
      [1, 2, 3, 4].map((w) => overlaps.indexBlocksOf?.({ workerId: BigInt(w), dpRank: 0 })),
    ).toEqual([40, 8, 24, 0]);
    for (let seed = 1; seed <= 20; seed++) {
      const w = world(4);
      const sel = findBestMatch({
        overlaps,
        seqHashes: cold,
        isl: cold.length * BS,
        endpoints: w.endpoints,
        tracker: w.tracker,
        pipeline: w.pipeline,
        config: w.config,
        now: 0,
        rng: seededRng(seed),
        ttft: w.ttft,
      });
      expect({ seed, key: sel.key }).toEqual({ seed, key: "4:0" });
    }
  });

  test("then the next emptiest once the empty one is busy past the tolerance", () => {
    const index = fleet();
    const w = world(4);
    const first = prompt(0, 30, 7, 9000);
    expect(w.route("a", first, 0, index.findMatches(first)).key).toBe("4:0");
    const second = prompt(0, 30, 8, 9500);
    expect(w.route("b", second, 0, index.findMatches(second)).key).toBe("2:0");
  });

  /**
   * Four engines with every cache full (24 blocks each in the index: its size tells them apart
   * no more), each idle since its last request: engine 4 at 100 ms, engine 2 at 500, then two
   * prompt families, on engines 3 (at 1 s) and 1 (at 2 s), each sent to where its prompt is
   * cached. Returns a decision at 3 s on a new prompt none of them holds.
   */
  function fullFleet() {
    const index = new RadixTree();
    for (let w = 1; w <= 4; w++) fill(index, BigInt(w), 100 * w, 24);
    const cold = prompt(0, 30, 7, 9000);
    expect(
      [1, 2, 3, 4].map((w) =>
        index.findMatches(cold).indexBlocksOf?.({ workerId: BigInt(w), dpRank: 0 }),
      ),
    ).toEqual([24, 24, 24, 24]);
    const w = world(4);
    const last: [string, number][] = [
      ["4:0", 100],
      ["2:0", 500],
      ["3:0", 1000],
      ["1:0", 2000],
    ];
    for (const [key, at] of last) {
      const own = prompt(0, 30, 50 + at, 50_000 + at);
      expect(w.route(`at${at}`, own, at, overlapsOf({ [key]: 30 })).key).toBe(key);
      w.leases.get(`at${at}`)!.free();
    }
    return (seed: number, otherRouters?: number) =>
      findBestMatch({
        overlaps: index.findMatches(cold),
        seqHashes: cold,
        isl: cold.length * BS,
        endpoints: w.endpoints,
        tracker: w.tracker,
        pipeline: w.pipeline,
        config: w.config,
        now: 3000,
        rng: seededRng(seed),
        ttft: w.ttft,
        otherRouters,
      }).key;
  }

  test("with every cache full (as in service), a router alone goes to the engine untouched longest, not beside another prompt family's traffic, whatever the draw", () => {
    const decide = fullFleet();
    for (let seed = 1; seed <= 20; seed++)
      expect({ seed, key: decide(seed) }).toEqual({ seed, key: "4:0" });
  });

  test("with every cache full and other routers deciding on the same books, drawn by how long each engine has gone untouched: the one untouched longest most often, the latest prompt family's least, rarely all four routers on one", () => {
    const decideAt = fullFleet();
    const decide = (seed: number) => decideAt(seed, 3);
    // At 3 s they have been untouched 2.9, 2.5, 2 and 1 s: drawn with those weights (0.35, 0.30,
    // 0.24, 0.12 of 8.4 s), so routers that decide on the same books at once spread out instead
    // of all taking the one coldest engine.
    const counts = new Map<string, number>();
    const draws = 2000;
    for (let seed = 1; seed <= draws; seed++) {
      const key = decide(seed);
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    const share = (key: string) => (counts.get(key) ?? 0) / draws;
    expect(share("4:0")).toBeGreaterThan(share("2:0"));
    expect(share("2:0")).toBeGreaterThan(share("3:0"));
    expect(share("3:0")).toBeGreaterThan(share("1:0"));
    // Expected 0.345 and 0.119; the binomial's standard deviation over 2000 draws is at most 0.011.
    expect(Math.abs(share("4:0") - 2.9 / 8.4)).toBeLessThan(0.04);
    expect(Math.abs(share("1:0") - 1 / 8.4)).toBeLessThan(0.04);
    // Four routers at one instant (seeds 1-4, 5-8, ...): all four on one engine in under 5 of 50 such instants (chance 0.026 each; taking the coldest, all 50).
    let herded = 0;
    for (let i = 0; i < 50; i++)
      if (new Set([1, 2, 3, 4].map((k) => decide(4 * i + k))).size === 1) herded++;
    expect(herded).toBeLessThan(5);
  });
});
