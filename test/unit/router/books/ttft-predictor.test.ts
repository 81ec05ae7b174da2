/**
 * The TTFT predictor (books/ttft-predictor.ts): the queue it counts from the books, the line it
 * learns from first tokens, the per-engine factor, and what it does with noise, restarts and
 * engines that leave.
 */
import { describe, expect, test } from "bun:test";
import { ActiveSequences } from "../../../../src/router/books/active-sequences.ts";
import { RequestLease } from "../../../../src/router/books/request-lease.ts";
import { LoadTracker } from "../../../../src/router/books/load-tracker.ts";
import {
  FLEET_WINDOW,
  MIN_OWN_SAMPLES,
  PRIOR,
  firstTokenSampler,
  queueAtBooking,
  tokensInHindsight,
  TtftPredictor,
  type FirstTokenObservation,
} from "../../../../src/router/books/ttft-predictor.ts";
import { seededRng } from "../choose/helpers.ts";

const BS = 16;

/** Feed `n` first tokens on `key` from an engine whose TTFT is latency + msPerToken × tokens (× (1 ± jitter)). */
function feed(
  p: TtftPredictor,
  key: string,
  n: number,
  msPerToken: number,
  latencyMs: number,
  { jitter = 0, seed = 1, from = 0 } = {},
) {
  const rng = seededRng(seed);
  for (let i = 0; i < n; i++) {
    const tokens = 64 + Math.floor(rng() * 4000);
    const ms = (latencyMs + msPerToken * tokens) * (1 + jitter * (2 * rng() - 1));
    p.observe({ key, bookedAt: from + i * 1000, at: from + i * 1000 + ms, tokens });
  }
}

describe("TtftPredictor: what it predicts", () => {
  test("before any first token: the prior speed, by tokens alone (no latency)", () => {
    const p = new TtftPredictor({ blockSize: BS });
    expect(p.speed("1:0")).toEqual(PRIOR);
    expect(p.predict(undefined, "1:0", 1000, 0)).toEqual({
      ms: PRIOR.msPerToken * 1000,
      tokens: 1000,
    });
  });

  test("an idle rank: latency + its own uncached tokens; a busy one adds the prefill queued ahead, less the oldest one's progress", () => {
    const p = new TtftPredictor({ blockSize: BS });
    feed(p, "1:0", 40, 0.02, 3);
    const sp = p.speed("1:0");
    expect(sp.msPerToken).toBeCloseTo(0.02, 6);
    expect(sp.latencyMs).toBeCloseTo(3, 6);
    const seqs = new ActiveSequences(BS);
    expect(p.predict(seqs, "1:0", 500, 0).ms).toBeCloseTo(3 + 0.02 * 500, 6);
    // Two prefills booked at t = 0 (1000 and 2000 tokens): at t = 10 ms the first has done 500.
    seqs.add({ requestId: "a", seqHashes: null, isl: 1000, overlap: 0 }, 0);
    seqs.add({ requestId: "b", seqHashes: null, isl: 2000, overlap: 0 }, 0);
    const busy = p.predict(seqs, "1:0", 500, 10);
    expect(busy.tokens).toBeCloseTo(500 + 2000 + 500, 6);
    expect(busy.ms).toBeCloseTo(3 + 0.02 * 3000, 6);
    // The oldest finished at t = 15 (seen done): the second could only start then.
    seqs.markPrefillCompleted("a", 15);
    expect(p.predict(seqs, "1:0", 500, 25).tokens).toBeCloseTo(2000 - 500 + 500, 6);
    // Past its predicted end a prefill counts as finishing now, not as negative work.
    expect(p.predict(seqs, "1:0", 500, 500).tokens).toBeCloseTo(500, 6);
  });

  test("observe returns |predicted ÷ observed − 1|, nothing without a prediction or for a negative time", () => {
    const p = new TtftPredictor({ blockSize: BS });
    expect(
      p.observe({ key: "1:0", bookedAt: 0, at: 100, tokens: 1000, predictedMs: 80 }),
    ).toBeCloseTo(0.2, 10);
    expect(p.observe({ key: "1:0", bookedAt: 0, at: 100, tokens: 1000 })).toBeUndefined();
    expect(
      p.observe({ key: "1:0", bookedAt: 100, at: 50, tokens: 1000, predictedMs: 10 }),
    ).toBeUndefined();
  });
});

describe("TtftPredictor: what it learns", () => {
  test("the fleet's line from noisy first tokens (±20%): within 10% for every rank, seen or not", () => {
    const p = new TtftPredictor({ blockSize: BS });
    for (let k = 1; k <= 4; k++)
      feed(p, `${k}:0`, 12, 0.01, 5, { jitter: 0.2, seed: k, from: k * 1e6 });
    const sp = p.speed("9:0"); // a rank never seen runs at the fleet's speed
    expect(sp.source).toBe("fleet");
    expect(Math.abs(sp.msPerToken / 0.01 - 1)).toBeLessThan(0.1);
    expect(Math.abs(sp.latencyMs - 5)).toBeLessThan(1.5);
  });

  test("a third of the samples wild (a busy event loop, stalls) does not move the line", () => {
    const p = new TtftPredictor({ blockSize: BS });
    const rng = seededRng(3);
    for (let i = 0; i < FLEET_WINDOW; i++) {
      const tokens = 64 + Math.floor(rng() * 4000);
      const wild = i % 3 === 0;
      p.observe({
        key: `${1 + (i % 4)}:0`,
        bookedAt: 0,
        at: wild ? 2000 * rng() : 2 + 0.01 * tokens,
        tokens,
      });
    }
    expect(Math.abs(p.speed("1:0").msPerToken / 0.01 - 1)).toBeLessThan(0.15);
  });

  test("the latency is read off the smallest first tokens: big ones that all came a little early (a queue counted high) do not pull a cache hit's prediction down", () => {
    const p = new TtftPredictor({ blockSize: BS });
    const rng = seededRng(5);
    // Three of four first tokens are big and came 3 ms before the line (5 ms + 0.01 ms per token)
    // says; one of four is a cache hit (under 100 tokens), on the line.
    for (let i = 0; i < FLEET_WINDOW; i++) {
      const hit = i % 4 === 0;
      const tokens = hit ? Math.floor(rng() * 100) : 2000 + Math.floor(rng() * 2000);
      p.observe({
        key: `${1 + (i % 3)}:0`,
        bookedAt: 0,
        at: 5 + 0.01 * tokens - (hit ? 0 : 3),
        tokens,
      });
    }
    expect(p.speed("1:0").msPerToken).toBeCloseTo(0.01, 3);
    // A median over the whole window would say 2 ms, and a hit would be predicted at 2 / 5 of its time.
    expect(p.latencyMs).toBeCloseTo(5, 1);
    expect(p.predict(undefined, "1:0", 0, 0).ms).toBeCloseTo(5, 1);
  });

  test("a slow engine: twice the time for the same work gives it factor 2, and its predictions double", () => {
    const p = new TtftPredictor({ blockSize: BS });
    for (let k = 1; k <= 3; k++) feed(p, `${k}:0`, 16, 0.01, 0, { seed: k });
    feed(p, "4:0", 16, 0.02, 0, { seed: 4 });
    expect(p.speed("4:0").factor).toBeGreaterThan(1.8);
    expect(p.speed("1:0").factor).toBe(1);
    expect(
      p.predict(undefined, "4:0", 1000, 0).ms / p.predict(undefined, "1:0", 1000, 0).ms,
    ).toBeGreaterThan(1.8);
  });

  test("identical engines a little apart, or far apart only in some samples (noise), all count as the fleet: no engine looks faster by luck", () => {
    const p = new TtftPredictor({ blockSize: BS });
    feed(p, "1:0", 16, 0.01, 0, { seed: 1 });
    feed(p, "2:0", 16, 0.0115, 0, { seed: 2 });
    feed(p, "3:0", 16, 0.009, 0, { seed: 3 });
    for (const k of ["1:0", "2:0", "3:0"]) expect(p.speed(k).factor).toBe(1);
    // Half of engine 4's first tokens stalled (3 x): its median is 2 x the line, but not three quarters of it.
    const rng = seededRng(8);
    for (let i = 0; i < 32; i++) {
      const tokens = 64 + Math.floor(rng() * 4000);
      p.observe({ key: "4:0", bookedAt: 0, at: (i % 2 === 0 ? 3 : 1) * 0.01 * tokens, tokens });
    }
    expect(p.speed("4:0").factor).toBe(1);
  });

  test("an engine that slows down (3 x) is followed once three quarters of its window say so", () => {
    const p = new TtftPredictor({ blockSize: BS });
    for (let k = 1; k <= 4; k++) feed(p, `${k}:0`, 16, 0.01, 0, { seed: k });
    expect(p.speed("1:0").factor).toBe(1);
    // From now on engine 1 takes three times as long; the others answer as before, in turn.
    const after = (n: number) => {
      for (let i = 0; i < n; i++)
        for (let k = 1; k <= 4; k++)
          feed(p, `${k}:0`, 1, k === 1 ? 0.03 : 0.01, 0, {
            seed: 100 * k + i,
            from: 1e6 + i * 1e4,
          });
    };
    after(20);
    expect(p.speed("1:0").factor).toBe(1);
    after(6);
    expect(p.speed("1:0").factor).toBeGreaterThan(2.5);
    expect(p.speed("2:0").factor).toBe(1);
  });

  test("a restarted engine: one stalled first token (the restart) leaves its speed where it was", () => {
    const p = new TtftPredictor({ blockSize: BS });
    for (let k = 1; k <= 4; k++) feed(p, `${k}:0`, 16, 0.01, 1, { seed: k });
    const before = p.speed("2:0");
    p.observe({ key: "2:0", bookedAt: 0, at: 5000, tokens: 1000 });
    expect(p.speed("2:0")).toEqual(before);
  });

  test("a worker that leaves is forgotten: back, it starts at the fleet's speed", () => {
    const p = new TtftPredictor({ blockSize: BS });
    for (let k = 1; k <= 3; k++) feed(p, `${k}:0`, 16, 0.01, 0, { seed: k });
    feed(p, "4:0", 16, 0.03, 0, { seed: 4 });
    feed(p, "4:1", 16, 0.03, 0, { seed: 5 });
    expect(p.speed("4:1").source).toBe("own");
    p.forgetWorker(4n);
    expect(p.speed("4:0")).toMatchObject({ factor: 1, source: "fleet" });
    expect(p.speed("4:1")).toMatchObject({ factor: 1, source: "fleet" });
    expect(p.speed("1:0").source).toBe("own");
  });

  test(`a rank's own factor only from ${MIN_OWN_SAMPLES} samples on`, () => {
    const p = new TtftPredictor({ blockSize: BS });
    feed(p, "1:0", 16, 0.01, 0);
    feed(p, "2:0", MIN_OWN_SAMPLES - 1, 0.04, 0, { seed: 2 });
    expect(p.speed("2:0")).toMatchObject({ factor: 1, source: "fleet" });
    feed(p, "2:0", 1, 0.04, 0, { seed: 3 });
    expect(p.speed("2:0").source).toBe("own");
  });
});

describe("firstTokenSampler with a lease", () => {
  test("the lease's first token is one sample, with the booking's prediction, then the prefill is done", () => {
    const tracker = new LoadTracker({ blockSize: BS });
    const w = { workerId: 1n, dpRank: 0 };
    tracker.updateWorkers([w]);
    const p = new TtftPredictor({ blockSize: BS });
    let clock = 0;
    const errors: number[] = [];
    const sample = firstTokenSampler(
      p,
      { key: "1:0", bookedAt: 0, tokens: 1000, predictedMs: 40 },
      (e) => errors.push(e),
    );
    const lease = RequestLease.book(
      tracker,
      { requestId: "r", worker: w, seqHashes: null, isl: 1000, overlap: 0 },
      0,
      BS,
      () => clock,
      () => 0.5,
      sample,
    );
    clock = 50;
    lease.firstToken();
    lease.firstToken();
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeCloseTo(0.2, 10);
    expect(tracker.activeTokens("1:0")).toBe(0);
    expect(tracker.slotOf("1:0")!.lastPrefillDoneAt).toBe(50);
    expect(p.speed("1:0").msPerToken).toBeCloseTo(0.05, 10);
  });
});

describe("a sample counts in hindsight the prompts that went ahead unseen", () => {
  const w = { workerId: 1n, dpRank: 0 };
  /** A rank with 1,000 prefill tokens booked (a), and this request (r, 500 uncached) booked behind them. */
  function rank() {
    const tracker = new LoadTracker({ blockSize: BS, routerId: 1n });
    tracker.updateWorkers([w]);
    tracker.addRequest({ requestId: "a", worker: w, seqHashes: null, isl: 1000, overlap: 0 }, 0);
    const queue = queueAtBooking(tracker.slotOf("1:0"))!;
    tracker.addRequest({ requestId: "r", worker: w, seqHashes: null, isl: 500, overlap: 0 }, 0);
    const booking = {
      key: "1:0",
      bookedAt: 0,
      tokens: 1500,
      ownTokens: 500,
      predictedMs: 150,
      queue,
    };
    return { tracker, booking };
  }
  const remoteAdd = (id: string, isl: number) => ({
    requestId: id,
    worker: w,
    routerId: 2n,
    loraName: null,
    data: {
      type: "add_request" as const,
      tokenSequence: null,
      isl,
      overlap: 0,
      expectedOutputTokens: null,
    },
  });
  const remoteDone = (id: string) => ({
    requestId: id,
    worker: w,
    routerId: 2n,
    loraName: null,
    data: { type: "mark_prefill_completed" as const },
  });

  test("another router's prompt, booked here only after this decision, that the engine finished first: counted", () => {
    const { tracker, booking } = rank();
    tracker.markPrefillCompleted("a", 10);
    // Router 2 decided at the same instant; its booking (700 tokens) reached this router after ours, its prefill was done first.
    tracker.applyRemote(remoteAdd("x", 700), 5);
    tracker.applyRemote(remoteDone("x"), 20);
    expect(tokensInHindsight(booking)).toBe(2200);
  });

  test("only what was queued ahead finished: the prediction's count stands", () => {
    const { tracker, booking } = rank();
    tracker.markPrefillCompleted("a", 10);
    expect(tokensInHindsight(booking)).toBe(1500);
    // A racer booked but not yet done, or a prefill whose completion is not reported yet: nothing added, nothing taken off.
    tracker.applyRemote(remoteAdd("y", 300), 12);
    expect(tokensInHindsight(booking)).toBe(1500);
    expect(tokensInHindsight({ ...rank().booking })).toBe(1500);
  });

  test("a prompt the decision counted from a burst claim is not counted again once its booking arrives and finishes", () => {
    const tracker = new LoadTracker({ blockSize: BS, routerId: 1n });
    tracker.updateWorkers([w]);
    tracker.addRequest({ requestId: "a", worker: w, seqHashes: null, isl: 1000, overlap: 0 }, 0);
    // Router 2's claim (700 tokens) was counted ahead of this request before its booking came.
    const queue = queueAtBooking(tracker.slotOf("1:0"), 700)!;
    expect(queue.queuedTokens).toBe(1700);
    tracker.addRequest({ requestId: "r", worker: w, seqHashes: null, isl: 500, overlap: 0 }, 0);
    const booking = {
      key: "1:0",
      bookedAt: 0,
      tokens: 2200,
      ownTokens: 500,
      predictedMs: 220,
      queue,
    };
    tracker.markPrefillCompleted("a", 10);
    tracker.applyRemote(remoteAdd("x", 700), 5);
    tracker.applyRemote(remoteDone("x"), 20);
    expect(tokensInHindsight(booking)).toBe(2200);
    // Without the claim in the queue the same prompt would be counted twice.
    expect(tokensInHindsight({ ...booking, queue: { ...queue, queuedTokens: 1000 } })).toBe(2900);
  });

  test("a request freed before its first token computed nothing: not counted", () => {
    const { tracker, booking } = rank();
    tracker.markPrefillCompleted("a", 10);
    tracker.applyRemote(remoteAdd("z", 900), 5);
    tracker.applyRemote({ ...remoteDone("z"), data: { type: "free" } }, 6);
    expect(tokensInHindsight(booking)).toBe(1500);
  });

  test("the sampler teaches the predictor the hindsight count, and the metric still hears the decision's own error", () => {
    const { tracker, booking } = rank();
    const seen: FirstTokenObservation[] = [];
    class Spy extends TtftPredictor {
      override observe(o: FirstTokenObservation): number | undefined {
        seen.push(o);
        return super.observe(o);
      }
    }
    const errors: number[] = [];
    const sample = firstTokenSampler(new Spy({ blockSize: BS }), booking, (e) => errors.push(e));
    tracker.markPrefillCompleted("a", 10);
    tracker.applyRemote(remoteAdd("x", 700), 5);
    tracker.applyRemote(remoteDone("x"), 20);
    sample(300);
    expect(seen).toEqual([
      { key: "1:0", bookedAt: 0, at: 300, tokens: 2200, ownTokens: 500, predictedMs: 150 },
    ]);
    expect(errors).toEqual([0.5]);
  });
});

describe("TtftPredictor: what a factor measures", () => {
  test("an engine that serves cache hits (first tokens that are mostly latency) does not look fast: only prefill-heavy samples set its factor", () => {
    const p = new TtftPredictor({ blockSize: BS });
    for (let k = 1; k <= 3; k++) feed(p, `${k}:0`, 16, 0.01, 20, { seed: k });
    // Engine 4: the same engine, but most of its requests are hits answered in 12 ms (below the fleet's 20 ms latency).
    for (let i = 0; i < 30; i++) p.observe({ key: "4:0", bookedAt: 0, at: 12, tokens: 40 });
    expect(p.speed("4:0")).toMatchObject({ factor: 1, source: "fleet" });
    feed(p, "4:0", 6, 0.01, 20, { seed: 7 });
    expect(p.speed("4:0").factor).toBe(1);
  });
});

describe("TtftPredictor: a factor at overload", () => {
  /** `n` first tokens on `key` taking `factor` × 0.01 ms per token, `own` of the counted tokens the request's own. */
  function feedOwn(
    p: TtftPredictor,
    key: string,
    n: number,
    factor: number,
    own: number,
    seed: number,
  ) {
    const rng = seededRng(seed);
    for (let i = 0; i < n; i++) {
      const tokens = 64 + Math.floor(rng() * 4000);
      const ms = factor * 0.01 * tokens * (1 + 0.04 * (2 * rng() - 1));
      p.observe({ key, bookedAt: i, at: i + ms, tokens, ownTokens: Math.round(own * tokens) });
    }
  }

  test("first tokens that are mostly queue do not set a factor: they measure the router's count of the queue, not the engine", () => {
    const p = new TtftPredictor({ blockSize: BS });
    for (let k = 1; k <= 3; k++) feedOwn(p, `${k}:0`, 16, 1, 1, k);
    // Engine 4 answers in half the time the line gives for what the router counted, but 90% of
    // that count was work booked ahead of each request (counted too high, say): not its speed.
    feedOwn(p, "4:0", 32, 0.5, 0.1, 4);
    expect(p.speed("4:0")).toMatchObject({ factor: 1, source: "fleet" });
    // Twice as slow on the same terms: still not its speed.
    feedOwn(p, "5:0", 32, 2, 0.1, 5);
    expect(p.speed("5:0")).toMatchObject({ factor: 1, source: "fleet" });
    // Twice as slow, mostly its own prefill: it is slower.
    feedOwn(p, "6:0", 32, 2, 0.9, 6);
    expect(p.speed("6:0").factor).toBeCloseTo(2, 1);
  });

  test("an engine that reads faster than the typical one is never credited more than its speed (factor 1): a factor below 1 draws work", () => {
    const p = new TtftPredictor({ blockSize: BS });
    for (let k = 1; k <= 3; k++) feedOwn(p, `${k}:0`, 16, 1, 1, k);
    // Engine 4's first tokens, mostly its own prefill, come in half the time: with several routers
    // this is what an engine the other routers use less looks like to this one (their bookings
    // ahead of its requests are not in its books), as well as a faster GPU.
    feedOwn(p, "4:0", 32, 0.5, 0.9, 4);
    expect(p.speed("4:0")).toMatchObject({ factor: 1, source: "own" });
    expect(p.predict(undefined, "4:0", 1000, 0).ms).toBeCloseTo(
      p.predict(undefined, "1:0", 1000, 0).ms,
      6,
    );
    // A slower engine among them is still found, against the typical one.
    feedOwn(p, "5:0", 32, 3, 0.9, 5);
    expect(p.speed("5:0").factor).toBeGreaterThan(2.5);
  });

  test("a line that is off reads every engine off alike: identical engines stay the fleet, a slow one is still found", () => {
    const p = new TtftPredictor({ blockSize: BS });
    // Own prefills: engines 1-4 alike within ±12% (0.75-0.95 × 0.01 ms per token), engine 5 twice as slow.
    const speeds = [0.75, 0.85, 0.9, 0.95, 1.8];
    speeds.forEach((f, k) => feedOwn(p, `${k + 1}:0`, 16, f, 1, k + 1));
    // Then a full window of first tokens that waited, on engine 9, sets the line at 0.01 ms per
    // token: above what every engine's own prefills take.
    feedOwn(p, "9:0", 48, 1, 0.1, 9);
    expect(p.speed("1:0").msPerToken).toBeCloseTo(0.01, 3);
    // Against the line engine 1 reads 0.75 (it would draw work); against the typical engine (0.9), 0.83.
    for (let k = 1; k <= 4; k++) expect(p.speed(`${k}:0`).factor).toBe(1);
    expect(p.speed("5:0").factor).toBeCloseTo(1.8 / 0.9, 1);
  });
});

describe("TtftPredictor: the engines' own reported speed (vLLM's prefill counters)", () => {
  test("before any first token the typical report is the slope (the lower median), not the prior's guess; no latency", () => {
    const p = new TtftPredictor({ blockSize: BS });
    expect(p.reportEngineSpeed("1:0", 0.02)).toBe(true);
    expect(p.reportEngineSpeed("2:0", 0.021)).toBe(true);
    expect(p.reportEngineSpeed("3:0", 0.019)).toBe(true);
    expect(p.speed("1:0")).toEqual({ msPerToken: 0.02, latencyMs: 0, factor: 1, source: "engine" });
    // A rank that has not reported yet runs at the typical one's speed too.
    expect(p.predict(undefined, "9:0", 1000, 0).ms).toBeCloseTo(20, 9);
  });

  test("a slow engine's report (3 x) gives it factor 3 before any first token of its own, and its predictions triple; near-identical or faster ones stay at 1", () => {
    const p = new TtftPredictor({ blockSize: BS });
    // The router has seen first tokens from engine 1 only; 2, 3 and 4 have just joined.
    feed(p, "1:0", 16, 0.02, 2);
    const line = p.speed("1:0").msPerToken;
    for (const [key, ms] of [
      ["1:0", 0.02],
      ["2:0", 0.023],
      ["3:0", 0.012],
      ["4:0", 0.06],
    ] as const)
      p.reportEngineSpeed(key, ms);
    // Fitted on the router's own samples: the reports do not move the line, only the factors.
    expect(p.speed("1:0")).toMatchObject({ msPerToken: line, source: "own" });
    expect(p.speed("4:0").msPerToken / line).toBeCloseTo(3, 6);
    expect(p.speed("4:0")).toMatchObject({ factor: 3, source: "engine" });
    expect(p.speed("2:0")).toMatchObject({ factor: 1, source: "fleet" }); // 1.15 x the typical: noise, the fleet
    expect(p.speed("3:0")).toMatchObject({ factor: 1, source: "fleet" }); // faster: never credited below 1
    const fast = p.predict(undefined, "1:0", 2000, 0).ms - p.latencyMs;
    expect(p.predict(undefined, "4:0", 2000, 0).ms - p.latencyMs).toBeCloseTo(3 * fast, 6);
  });

  test("the router's own samples win once a rank has them: a report of 3 x is overruled by first tokens that say it is as fast as the fleet", () => {
    const p = new TtftPredictor({ blockSize: BS });
    p.reportEngineSpeed("1:0", 0.02);
    p.reportEngineSpeed("2:0", 0.02);
    p.reportEngineSpeed("3:0", 0.06);
    expect(p.speed("3:0").factor).toBe(3);
    for (let k = 1; k <= 3; k++) feed(p, `${k}:0`, 16, 0.02, 2, { seed: 10 + k });
    expect(p.speed("3:0")).toMatchObject({ factor: 1, source: "own" });
    expect(p.speed("3:0").msPerToken).toBeCloseTo(0.02, 6);
  });

  test("a report past MAX_FACTOR is capped like an own factor; a value no engine can have is refused and changes nothing", () => {
    const p = new TtftPredictor({ blockSize: BS });
    p.reportEngineSpeed("1:0", 0.01);
    p.reportEngineSpeed("2:0", 0.01);
    p.reportEngineSpeed("3:0", 1);
    expect(p.speed("3:0").factor).toBe(4);
    const before = p.speed("1:0");
    for (const bad of [0, -0.01, Number.NaN, Number.POSITIVE_INFINITY])
      expect(p.reportEngineSpeed("1:0", bad)).toBe(false);
    expect(p.speed("1:0")).toEqual(before);
  });

  test("a worker that leaves takes its reports along: the typical report is the others' again, and with none left the prior comes back", () => {
    const p = new TtftPredictor({ blockSize: BS });
    p.reportEngineSpeed("1:0", 0.01);
    p.reportEngineSpeed("2:0", 0.03);
    p.reportEngineSpeed("2:1", 0.03);
    expect(p.speed("1:0").msPerToken).toBeCloseTo(0.03, 9); // the lower median of 0.01, 0.03, 0.03
    p.forgetWorker(2n);
    expect(p.speed("2:0")).toEqual({ msPerToken: 0.01, latencyMs: 0, factor: 1, source: "engine" });
    p.forgetWorker(1n);
    expect(p.speed("1:0")).toEqual(PRIOR);
  });
});
