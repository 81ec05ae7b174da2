/**
 * The kv policy sees the whole load: running decodes in the prediction (a warm engine whose batch
 * is full of decodes), a new prefix group's placement priced for the traffic it brings (a group
 * whose siblings arrive fast vs slowly), and a burst of 16 new groups on 8 idle engines. Engines
 * prefill at 0.01 ms per token with 1 ms of latency, and every decode step takes 10 ms + 0.2 ms
 * per running decode; the predictor is taught that before each case (a first token waits for one
 * step, as on vLLM V1, unless a case says its engines never make it wait). Blocks of 16 tokens.
 */
import { describe, expect, test } from "bun:test";
import type { WorkerKey } from "../../../../../src/core/ids.ts";
import type { OverlapScores } from "../../../../../src/core/overlap.ts";
import { LoadTracker } from "../../../../../src/router/books/load-tracker.ts";
import { RequestLease } from "../../../../../src/router/books/request-lease.ts";
import {
  decodeSampler,
  firstTokenSampler,
  queueAtBooking,
  TtftPredictor,
} from "../../../../../src/router/books/ttft-predictor.ts";
import { schedulerConfig } from "../../../../../src/router/choose/config.ts";
import { endpointsOf } from "../../../../../src/router/choose/endpoints.ts";
import { findBestMatch } from "../../../../../src/router/choose/find-best-match.ts";
import { createPipeline } from "../../../../../src/router/choose/registry.ts";
import { countTraffic } from "../../../../../src/router/routing-service.ts";
import { chain, overlapsOf, seededRng } from "../helpers.ts";

const BS = 16;
const step = (decodes: number) => 10 + 0.2 * decodes;

/** `waits`: how many decode steps a first token waits for on these engines (1: vLLM V1; 0: a separate prefill lane). */
function world(engines: number, waits = 1) {
  const endpoints = endpointsOf(
    Array.from({ length: engines }, (_, i) => ({ workerId: BigInt(i + 1) })),
  );
  const config = schedulerConfig({ blockSize: BS });
  const tracker = new LoadTracker({ blockSize: BS });
  tracker.updateWorkers(endpoints.map((e) => e.worker));
  const ttft = new TtftPredictor({ blockSize: BS });
  const rng = seededRng(5);
  for (let i = 0; i < 64; i++) {
    const e = endpoints[i % engines]!;
    const d = 1 + Math.floor(rng() * 60);
    ttft.steps.observe({ key: e.key, gapMs: step(d), decodes: d });
  }
  for (let i = 0; i < 48; i++) {
    const e = endpoints[i % engines]!;
    const tokens = 100 + Math.floor(rng() * 3000);
    const stepMs = step(1 + Math.floor(rng() * 60));
    ttft.observe({
      key: e.key,
      bookedAt: -1e6,
      at: -1e6 + 1 + 0.01 * tokens + waits * stepMs,
      tokens,
      stepMs,
    });
  }
  const pipeline = createPipeline("kv", config);
  const rngPick = seededRng(1);
  const clock = { now: 0 };
  const leases = new Map<string, RequestLease>();
  /** Choose, count the group's arrival and book, as the routing service does; returns the selection. */
  const route = (
    id: string,
    hashes: BigUint64Array | null,
    isl: number,
    overlaps: OverlapScores = overlapsOf(),
  ) => {
    const now = clock.now;
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
    countTraffic(ttft.traffic, sel, now, hashes?.length ?? 0);
    const sample = firstTokenSampler(ttft, {
      key: sel.key,
      bookedAt: now,
      tokens: sel.ttftTokens!,
      predictedMs: sel.predictedTtftMs,
      stepMs: sel.stepMs,
      queue: queueAtBooking(tracker.slotOf(sel.key)),
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
      RequestLease.book(
        tracker,
        booking,
        now,
        BS,
        () => clock.now,
        rngPick,
        sample,
        decodeSampler(ttft, sel.key, now, tracker.slotOf(sel.key)),
      ),
    );
    return sel;
  };
  /** `n` requests decoding on engine `i` (booked there, their first tokens seen). */
  const decoding = (i: number, n: number) => {
    const worker = endpoints[i]!.worker;
    for (let k = 0; k < n; k++) {
      const lease = RequestLease.book(
        tracker,
        { requestId: `dec-${i}-${k}`, worker, seqHashes: null, isl: 32, overlap: 0 },
        clock.now,
        BS,
        () => clock.now,
        rngPick,
      );
      lease.firstToken();
    }
  };
  /** A prefill of `tokens` booked on engine `i` and not done yet. */
  const queued = (i: number, tokens: number) => {
    RequestLease.book(
      tracker,
      {
        requestId: `q-${i}-${tokens}`,
        worker: endpoints[i]!.worker,
        seqHashes: null,
        isl: tokens,
        overlap: 0,
      },
      clock.now,
      BS,
      () => clock.now,
      rngPick,
    );
  };
  return {
    endpoints,
    keys: endpoints.map((e) => e.key),
    tracker,
    ttft,
    route,
    leases,
    clock,
    decoding,
    queued,
  };
}

/** A group's prompt: its 128-block (2,048-token) system prompt, then `own` blocks of question. */
function groupPrompt(group: number, question: number, own = 8): BigUint64Array {
  const h = new BigUint64Array(128 + own);
  h.set(chain(100 + group, 128));
  h.set(chain(10_000 + 100 * group + question, own, 128), 128);
  return h;
}

describe("kv sees the whole load: a burst of new groups", () => {
  test("16 new groups on 8 idle engines, one a millisecond: two groups on every engine; their siblings follow them, 32 requests and the same prefill work on each", () => {
    const w = world(8);
    const home = new Map<number, WorkerKey>();
    for (let g = 0; g < 16; g++) {
      w.clock.now = g;
      home.set(g, w.route(`g${g}-0`, groupPrompt(g, 0), 136 * BS).key);
    }
    const groupsOn = new Map<WorkerKey, number>();
    for (const k of home.values()) groupsOn.set(k, (groupsOn.get(k) ?? 0) + 1);
    expect([...groupsOn.values()]).toEqual(new Array(8).fill(2));
    // The first prefills are done (2,176 tokens each: 22 ms, two per engine); their decodes run on.
    w.clock.now = 60;
    for (let g = 0; g < 16; g++) w.leases.get(`g${g}-0`)!.firstToken();
    // The siblings: 15 per group, shuffled, one every 4 ms, each prefilled before the next comes.
    const order: [number, number][] = [];
    for (let g = 0; g < 16; g++) for (let q = 1; q < 16; q++) order.push([g, q]);
    const rng = seededRng(7);
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(rng() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    const requests = new Map<WorkerKey, number>(w.keys.map((k) => [k, 2]));
    const work = new Map<WorkerKey, number>(w.keys.map((k) => [k, 2 * 136 * BS]));
    for (const [g, q] of order) {
      w.clock.now += 4;
      const sel = w.route(`g${g}-${q}`, groupPrompt(g, q), 136 * BS);
      requests.set(sel.key, requests.get(sel.key)! + 1);
      work.set(sel.key, work.get(sel.key)! + sel.uncachedTokens!);
      w.leases.get(`g${g}-${q}`)!.firstToken();
    }
    expect([...requests.values()]).toEqual(new Array(8).fill(32));
    const meanWork = [...work.values()].reduce((s, x) => s + x, 0) / 8;
    expect(Math.max(...work.values()) / meanWork).toBeLessThanOrEqual(1.25);
  });
});

describe("kv sees the whole load: running decodes", () => {
  test("a warm engine whose batch is full of decodes: a short prompt is computed again on an idle engine, since the first token there would wait for a 22 ms step", () => {
    const w = world(2);
    w.decoding(0, 60);
    const hashes = chain(3, 65);
    // Engine 1 holds the first 64 blocks; engine 2 nothing. 1,040 tokens.
    const overlaps = overlapsOf({ [w.keys[0]!]: 64 });
    const sel = w.route("r", hashes, 65 * BS, overlaps);
    expect(sel.key).toBe(w.keys[1]!);
    const warm = sel.candidates.find((c) => c.key === w.keys[0])!;
    expect(warm.stepMs).toBeCloseTo(step(60), 0);
    expect(warm.predictedTtftMs! - sel.predictedTtftMs!).toBeGreaterThan(5);
  });

  test("the same on engines whose prefills never wait for decodes: the warm engine, as before", () => {
    const w = world(2, 0);
    expect(w.ttft.decodeWeight).toBeLessThan(0.15);
    w.decoding(0, 60);
    const sel = w.route("r", chain(3, 65), 65 * BS, overlapsOf({ [w.keys[0]!]: 64 }));
    expect(sel.key).toBe(w.keys[0]!);
  });
});

describe("kv sees the whole load: a group's traffic", () => {
  /**
   * Engine 3 holds the group's system prompt but has 20,000 tokens of prefill queued and 40
   * decodes; engine 1 runs 20 decodes and nothing queued; engine 2 runs 8 decodes behind 500
   * queued tokens. A request of the group is predicted fastest on engine 1 (37 ms against 39
   * and 220), but wherever it goes the group's coming requests follow.
   */
  function placed(msBetweenSiblings: number) {
    const w = world(3);
    const now = 100_000;
    w.clock.now = now;
    w.decoding(0, 20);
    w.decoding(1, 8);
    w.queued(1, 500);
    w.decoding(2, 40);
    w.queued(2, 20_000);
    const prompt = groupPrompt(1, 99);
    for (let t = now - 30 * msBetweenSiblings; t < now; t += msBetweenSiblings)
      w.ttft.traffic.arrive(prompt[127]!, t);
    // A request stays on its engine 2 s (prefill and decode).
    w.ttft.traffic.finished(2000);
    const sel = w.route("r", prompt, 136 * BS, overlapsOf({ [w.keys[2]!]: 128 }));
    const byKey = new Map(sel.candidates.map((c) => [c.key, c]));
    return { w, sel, byKey };
  }

  test("siblings every 50 ms (40 of them running at once): the group goes where the batch it brings makes the smallest steps, not to the engine that is fastest for this one request", () => {
    const { w, sel, byKey } = placed(50);
    expect(byKey.get(w.keys[0]!)!.predictedTtftMs!).toBeLessThan(
      byKey.get(w.keys[1]!)!.predictedTtftMs!,
    );
    expect(sel.key).toBe(w.keys[1]!);
  });

  test("siblings every 10 s: priced as one request, the fastest engine", () => {
    const { w, sel } = placed(10_000);
    expect(sel.key).toBe(w.keys[0]!);
  });
});

describe("kv sees the whole load: a new group placed for the traffic it will meet", () => {
  /**
   * Eight idle engines (nothing queued, nothing decoding). Engines 1-4 each hold two groups whose
   * siblings come every 100 ms, engines 5-8 one; engines 5-8 were booked last, so the coldest
   * cache is on 1-4. A new group's prompt costs the same prefill everywhere, but the requests
   * that arrive behind it differ: twice as many on engines 1-4.
   */
  function warm(counted: boolean) {
    const w = world(8);
    const now = 10_000;
    let key = 1n;
    const homes: number[] = [0, 0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 7];
    for (const e of homes) {
      const k = w.keys[e]!;
      const group = key++;
      if (counted) {
        w.ttft.traffic.startedPrefix(k, now - 3000);
        for (let t = now - 2900; t < now; t += 100)
          w.ttft.traffic.arrive(group, t + e, k, w.ttft.traffic.knows(group) ? undefined : [k]);
      }
    }
    // Engines 5-8 booked most recently (a request each, done): the coldest are 1-4.
    for (let e = 0; e < 8; e++) {
      w.clock.now = now - 100 + (e >= 4 ? 50 : 0) + e;
      const id = `last-${e}`;
      RequestLease.book(
        w.tracker,
        { requestId: id, worker: w.endpoints[e]!.worker, seqHashes: null, isl: 32, overlap: 0 },
        w.clock.now,
        BS,
        () => w.clock.now,
        seededRng(3),
      ).free();
    }
    w.clock.now = now;
    return w;
  }

  test("counted: the new group goes to an engine whose groups draw the least traffic, priced above the prediction by the requests that will queue behind its prompt", () => {
    const w = warm(true);
    const sel = w.route("new", groupPrompt(99, 0), 136 * BS);
    expect(w.keys.indexOf(sel.key)).toBeGreaterThanOrEqual(4);
    const busy = sel.candidates.find((c) => c.key === w.keys[0])!;
    const chosen = sel.candidates.find((c) => c.key === sel.key)!;
    expect(busy.predictedTtftMs).toBeCloseTo(chosen.predictedTtftMs!, 6);
    expect(busy.cost - chosen.cost).toBeGreaterThan(0.5);
  });

  test("a burst: four new groups, each prefilled before the next, go to engines 5-8, one each", () => {
    const w = warm(true);
    const placed: number[] = [];
    for (let g = 0; g < 4; g++) {
      const sel = w.route(`new-${g}`, groupPrompt(200 + g, 0), 136 * BS);
      placed.push(w.keys.indexOf(sel.key));
      w.clock.now += 40;
      w.leases.get(`new-${g}`)!.firstToken();
    }
    expect(placed.sort()).toEqual([4, 5, 6, 7]);
  });

  test("not counted (no traffic known): the coldest cache, one of engines 1-4, as before", () => {
    const w = warm(false);
    const sel = w.route("new", groupPrompt(99, 0), 136 * BS);
    expect(w.keys.indexOf(sel.key)).toBeLessThan(4);
  });
});

describe("kv sees the whole load: a prompt sent twice", () => {
  test("a client's warm-up sent again whole names no group (its engine would read two groups' traffic for one); the first sibling names the system prompt's", () => {
    const w = world(2);
    const warmup = groupPrompt(1, 0);
    w.route("warm", warmup, 136 * BS);
    w.clock.now = 30;
    w.leases.get("warm")!.firstToken();
    const home = w.route("again", warmup, 136 * BS, overlapsOf({})).key;
    expect(w.ttft.traffic.size).toBe(0);
    // A sibling names the system prompt's group, homed where the warm-up went.
    w.clock.now = 60;
    w.route("sibling", groupPrompt(1, 1), 136 * BS);
    expect(w.ttft.traffic.size).toBe(1);
    expect(w.ttft.traffic.knows(warmup[127]!)).toBe(true);
    expect(w.route("sibling-2", groupPrompt(1, 2), 136 * BS).key).toBe(home);
  });
});

describe("kv sees the whole load: a sibling while its group's first prompt is still computed", () => {
  /**
   * Two engines. Engine 2 holds a group whose siblings come every 100 ms. A new group's first
   * request went to engine 1 a millisecond ago and is still prefilling its 2,176 tokens there; its
   * sibling now predicts a little faster computed again on engine 2 than waiting for that prefill.
   */
  function sibling(counted: boolean) {
    const w = world(2);
    const now = 10_000;
    if (counted) {
      w.ttft.traffic.startedPrefix(w.keys[1]!, now - 3000);
      for (let t = now - 2900; t < now; t += 100)
        w.ttft.traffic.arrive(
          1n,
          t,
          w.keys[1]!,
          w.ttft.traffic.knows(1n) ? undefined : [w.keys[1]!],
        );
    }
    w.clock.now = now;
    // Engine 2 is the coldest cache, so the new group goes to engine 1.
    RequestLease.book(
      w.tracker,
      { requestId: "old", worker: w.endpoints[0]!.worker, seqHashes: null, isl: 32, overlap: 0 },
      now - 1,
      BS,
      () => w.clock.now,
      seededRng(3),
    ).free();
    const first = w.route("first", groupPrompt(7, 0), 136 * BS);
    w.clock.now = now + 1;
    const second = w.route("second", groupPrompt(7, 1), 136 * BS);
    return { w, first, second };
  }

  test("counted: it waits on the group's home, where the next step will find the prefix, rather than place the group a second time where others' traffic would queue behind it", () => {
    const { first, second } = sibling(true);
    expect(second.key).toBe(first.key);
    const away = second.candidates.find((c) => c.key !== first.key)!;
    const home = second.candidates.find((c) => c.key === first.key)!;
    expect(away.predictedTtftMs!).toBeLessThan(home.predictedTtftMs!);
  });

  test("no traffic known anywhere: computed again where it is predicted fastest, as before", () => {
    const { first, second } = sibling(false);
    expect(second.key).not.toBe(first.key);
  });
});
