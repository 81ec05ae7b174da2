/**
 * createRouter (src/router/create-router.ts): the decision room as main.ts, the harness and the
 * benches build it — events in through recovery for registered ranks only, one Cleared
 * semantics (the named (worker, dp rank)), route -> decision + lease that frees once.
 */
import { describe, expect, test } from "bun:test";
import { clearedEvent, storedEvent } from "../../../src/core/events.ts";
import { portableBatchHasher } from "../../../src/core/block-hash.ts";
import { keyOf } from "../../../src/core/ids.ts";
import { RouterMetrics } from "../../../src/observe/names.ts";
import { createRouter } from "../../../src/router/create-router.ts";
import { MemoryAffinityStore } from "../../../src/router/sessions/memory-store.ts";
import { StickyRouter } from "../../../src/router/sessions/sticky.ts";
import { WorkerRegistry } from "../../../src/fleet/registry.ts";
import { seededRng } from "./choose/helpers.ts";

function build(opts: { rng?: () => number; otherRouters?: () => number } = {}) {
  let clock = 0;
  const registry = new WorkerRegistry();
  const dropped: number[] = [];
  const router = createRouter(
    { policy: "kv", scheduler: { blockSize: 4 }, sessionTtlMs: 60_000 },
    {
      hasher: portableBatchHasher,
      now: () => clock++,
      rng: opts.rng ?? (() => 0.5),
      workers: registry,
      sticky: new StickyRouter(
        new MemoryAffinityStore({ clock: { now: () => clock, every: () => () => {} } }),
      ),
      metrics: new RouterMetrics(),
      query: async () => ({ kind: "error", message: "none" }),
      sleep: async () => {},
      onDropped: (_reason, n) => dropped.push(n),
      otherRouters: opts.otherRouters,
    },
  );
  registry.add(1n, "http://w1:1", 2, true, "base");
  router.tracker.updateWorkers([
    { workerId: 1n, dpRank: 0 },
    { workerId: 1n, dpRank: 1 },
  ]);
  return { router, registry, dropped };
}

const block = (h: bigint) => [{ blockHash: h, tokensHash: h }];

describe("createRouter", () => {
  test("events of registered ranks go in; others are dropped and counted", () => {
    const { router, dropped } = build();
    const r = router.ingest(
      [
        storedEvent(1n, 0n, block(7n), null, 0),
        storedEvent(1n, 0n, block(8n), null, 2),
        storedEvent(9n, 0n, block(9n), null, 0),
      ],
      "admin",
    );
    expect(r).toEqual({ accepted: 1, dropped: 2 });
    expect(dropped).toEqual([2]);
    expect(router.index.findMatches(new BigUint64Array([7n])).scores.size).toBe(1);
  });

  test("Cleared clears the (worker, dp rank) it names, not the worker's other ranks", () => {
    const { router } = build();
    router.ingest(
      [storedEvent(1n, 0n, block(7n), null, 0), storedEvent(1n, 0n, block(7n), null, 1)],
      "admin",
    );
    expect(router.index.findMatches(new BigUint64Array([7n])).scores.size).toBe(2);
    router.ingest([clearedEvent(1n, 1n, 1)], "admin");
    expect([...router.index.findMatches(new BigUint64Array([7n])).scores.values()]).toEqual([1]);
    expect(router.index.findMatches(new BigUint64Array([7n])).scores.size).toBe(1);
  });

  test("a first token teaches the TTFT predictor, but not the decode half of a P/D pair (prefilled elsewhere)", async () => {
    const { router } = build();
    const tokens = new Uint32Array([1, 2, 3, 4, 5, 6, 7, 8]);
    // The decode half: its first token comes after another worker's prefill and the KV transfer.
    const decode = await router.routing.route({
      tokens,
      requestId: "decode-half",
      prefilledElsewhere: true,
    });
    decode.lease.firstToken();
    decode.lease.free();
    expect(router.ttft.speed("1:0").source).toBe("prior");
    expect(router.ttft.speed("1:1").source).toBe("prior");
    const own = await router.routing.route({ tokens, requestId: "own-prefill" });
    own.lease.firstToken();
    own.lease.free();
    expect(router.ttft.speed("1:0").source).toBe("fleet");
  });

  test("a first token's sample names the request's own uncached tokens apart from the prefill queued ahead of it", async () => {
    const { router } = build();
    const seen: { tokens: number; ownTokens?: number }[] = [];
    const observe = router.ttft.observe.bind(router.ttft);
    router.ttft.observe = (o) => {
      seen.push({ tokens: o.tokens, ownTokens: o.ownTokens });
      return observe(o);
    };
    // Three 4,000-token prompts with nothing in common on two ranks: the third waits behind one of the first two.
    const ds = [];
    for (let i = 0; i < 3; i++)
      ds.push(
        await router.routing.route({
          tokens: new Uint32Array(4000).fill(10 * (i + 1)),
          requestId: `q${i}`,
        }),
      );
    for (const d of ds) d.lease.firstToken();
    expect(seen.map((s) => s.ownTokens)).toEqual([4000, 4000, 4000]);
    expect(seen[2]!.tokens).toBeGreaterThan(7000);
  });

  test("route books the load on the chosen rank; the lease frees it exactly once", async () => {
    const { router } = build();
    const tokens = new Uint32Array([1, 2, 3, 4, 5, 6, 7, 8]);
    const booked = () => router.tracker.loads(1_000).reduce((a, l) => a + l.activePrefillTokens, 0);
    const d = await router.routing.route({ tokens, requestId: router.routing.nextRequestId() });
    expect(d.worker.workerId).toBe(1n);
    expect(booked()).toBeGreaterThan(0);
    expect(d.lease.free()).toBe(true);
    expect(d.lease.free()).toBe(false);
    expect(booked()).toBe(0);
  });

  test("the scheduler only chooses: the lease books, and a second booking of the same id is refused", async () => {
    const { router } = build();
    const tokens = new Uint32Array([1, 2, 3, 4]);
    const d = await router.routing.route({ tokens, requestId: "same" });
    expect(router.tracker.hasRequest("same")).toBe(true);
    await expect(router.routing.route({ tokens, requestId: "same" })).rejects.toMatchObject({
      code: "duplicate_request",
    });
    d.lease.free();
    expect(router.tracker.hasRequest("same")).toBe(false);
  });

  test("the other routers' count reaches the kv picker: alone, a new prompt takes the rank booked longest ago; with peers, both ranks are drawn", async () => {
    const picks = async (otherRouters?: () => number) => {
      const counts = new Map<string, number>();
      for (let seed = 1; seed <= 40; seed++) {
        const { router } = build({ rng: seededRng(seed), otherRouters });
        // Rank 0 last booked well before rank 1, both idle since (the router's clock starts at 0).
        router.tracker.addRequest(
          {
            requestId: "old",
            worker: { workerId: 1n, dpRank: 0 },
            seqHashes: null,
            isl: 8,
            overlap: 0,
          },
          -900,
        );
        router.tracker.addRequest(
          {
            requestId: "new",
            worker: { workerId: 1n, dpRank: 1 },
            seqHashes: null,
            isl: 8,
            overlap: 0,
          },
          -100,
        );
        router.tracker.free("old", -50);
        router.tracker.free("new", -50);
        const d = await router.routing.route({
          tokens: new Uint32Array(8).fill(seed),
          requestId: "x",
        });
        const key = keyOf(d.worker);
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      return counts;
    };
    expect(await picks()).toEqual(new Map([["1:0", 40]]));
    expect(await picks(() => 0)).toEqual(new Map([["1:0", 40]]));
    // At the decision rank 0 has gone 900 ms without a booking and rank 1 100: drawn 9 to 1 (a uniform draw would be even).
    const drawn = await picks(() => 2);
    expect(drawn.get("1:0")!).toBeGreaterThanOrEqual(30);
    expect(drawn.get("1:1")!).toBeGreaterThanOrEqual(1);
  });

  test("expireLoad forgets POST /v1/route bookings whose load the tracker no longer holds", async () => {
    const { router } = build();
    const d = await router.routing.route({
      tokens: new Uint32Array([1, 2, 3, 4]),
      requestId: "ext-1",
    });
    router.leases.add(d.lease);
    expect(router.leases.size).toBe(1);
    router.tracker.removeWorker(1n);
    router.expireLoad(10);
    expect(router.leases.size).toBe(0);
  });
});

describe("createRouter.ingestLossy (vLLM ZMQ: no replay)", () => {
  test("an id gap wipes the rank before the next event; Cleared clears its rank; unknown workers are dropped", () => {
    const { router, dropped } = build();
    const has = (h: bigint) => router.index.findMatches(new BigUint64Array([h])).scores.size;
    router.ingestLossy([
      storedEvent(1n, 0n, block(7n), null, 0),
      storedEvent(1n, 1n, block(8n), null, 0),
      storedEvent(1n, 0n, block(7n), null, 1),
    ]);
    expect(has(7n)).toBe(2);
    // Ids 2..4 lost for good on rank 0: its blocks (7, 8) go before id 5 applies.
    router.ingestLossy([storedEvent(1n, 5n, block(9n), null, 0)]);
    expect(has(8n)).toBe(0);
    expect(has(7n)).toBe(1); // rank 1 keeps its copy
    expect(has(9n)).toBe(1);
    router.ingestLossy([clearedEvent(1n, 1n, 1)]);
    expect(has(7n)).toBe(0);
    expect(has(9n)).toBe(1); // rank 0 untouched by rank 1's Cleared
    expect(router.ingestLossy([storedEvent(5n, 0n, block(1n), null, 0)])).toEqual({
      accepted: 0,
      dropped: 1,
    });
    expect(dropped).toEqual([1]);
  });
});

describe("createRouter.members (worker registration's hooks)", () => {
  test("a removed worker's blocks leave the index and the approximate one; its load slots go with updateWorkers", async () => {
    const { router } = build();
    router.ingest([storedEvent(1n, 0n, block(7n), null, 0)], "admin");
    // A decision on an inexact prompt lands in the approximate index.
    await router.routing.route({
      tokens: new Uint32Array([1, 2, 3, 4]),
      requestId: "a",
      approximate: true,
    });
    expect(router.approxIndex!.size()).toBeGreaterThan(0);
    router.members.updateWorkers([]);
    router.members.removeWorker(1n);
    expect(router.index.findMatches(new BigUint64Array([7n])).scores.size).toBe(0);
    expect(router.approxIndex!.size()).toBe(0);
    expect(router.tracker.hasRequest("a")).toBe(false);
  });
});
