/** The decode step line learned from inter-token gaps, and the lease that reports them. */
import { describe, expect, test } from "bun:test";
import { LoadTracker } from "../../../../src/router/books/load-tracker.ts";
import { RequestLease, type LeaseEnd } from "../../../../src/router/books/request-lease.ts";
import { StepTimes } from "../../../../src/router/books/step-times.ts";
import { decodeSampler, TtftPredictor } from "../../../../src/router/books/ttft-predictor.ts";
import { keyOf } from "../../../../src/core/ids.ts";
import { seededRng } from "../choose/helpers.ts";

const A = keyOf({ workerId: 1n, dpRank: 0 });
const B = keyOf({ workerId: 2n, dpRank: 0 });

describe("StepTimes", () => {
  test("nothing seen: every step reads 0", () => {
    const s = new StepTimes();
    expect(s.fitted).toBe(false);
    expect(s.stepMs(A, 40)).toBe(0);
  });

  test("the fleet's line: 10 ms + 0.2 ms per running decode, read back through noise", () => {
    const s = new StepTimes();
    const rng = seededRng(3);
    for (let i = 0; i < 64; i++) {
      const d = 1 + Math.floor(rng() * 60);
      s.observe({ key: i % 2 ? A : B, gapMs: (10 + 0.2 * d) * (0.95 + 0.1 * rng()), decodes: d });
    }
    expect(s.line.perSeqMs).toBeGreaterThan(0.17);
    expect(s.line.perSeqMs).toBeLessThan(0.23);
    expect(s.stepMs(A, 60)).toBeGreaterThan(20);
    expect(s.stepMs(A, 60)).toBeLessThan(24);
  });

  test("a rank whose steps are twice the fleet's gets factor 2; the others stay on the line; a batch never makes a step faster", () => {
    const s = new StepTimes();
    const C = keyOf({ workerId: 3n, dpRank: 0 });
    for (let i = 0; i < 48; i++) {
      const d = 1 + (i % 30);
      s.observe({
        key: i % 3 === 0 ? C : i % 3 === 1 ? A : B,
        gapMs: (i % 3 === 0 ? 2 : 1) * (10 + 0.2 * d),
        decodes: d,
      });
    }
    expect(s.stepMs(C, 20) / s.stepMs(A, 20)).toBeGreaterThan(1.6);
    expect(s.stepMs(A, 20)).toBe(s.stepMs(B, 20));
    const flat = new StepTimes();
    for (let d = 1; d <= 20; d++) flat.observe({ key: A, gapMs: 30 - d, decodes: d });
    expect(flat.line.perSeqMs).toBe(0);
  });
});

describe("the lease's end and the decode sampler", () => {
  test("a streamed answer's mean gap after its first token, with the rank's running decodes, becomes one sample", () => {
    const tracker = new LoadTracker({ blockSize: 16 });
    const w = { workerId: 1n, dpRank: 0 };
    tracker.updateWorkers([w]);
    let now = 0;
    const ends: LeaseEnd[] = [];
    // Three other requests already decoding there.
    for (const id of ["x", "y", "z"])
      RequestLease.book(
        tracker,
        { requestId: id, worker: w, seqHashes: null, isl: 32, overlap: 0 },
        0,
        16,
        () => now,
        seededRng(1),
      ).firstToken();
    const predictor = new TtftPredictor({ blockSize: 16 });
    const sampler = decodeSampler(predictor, keyOf(w), 0, tracker.slotOf(keyOf(w)));
    const lease = RequestLease.book(
      tracker,
      { requestId: "r", worker: w, seqHashes: null, isl: 32, overlap: 0 },
      0,
      16,
      () => now,
      seededRng(1),
      undefined,
      (e) => {
        ends.push(e);
        sampler(e);
      },
    );
    now = 50;
    lease.firstToken();
    lease.outputTokens(1);
    for (let t = 2; t <= 11; t++) {
      now = 50 + (t - 1) * 12;
      lease.outputTokens(t);
    }
    now = 200;
    lease.free();
    lease.free();
    expect(ends).toHaveLength(1);
    expect(ends[0]).toEqual({ at: 200, firstTokenAt: 50, lastTokenAt: 170, laterTokens: 10 });
    // 12 ms a gap, four decodes running (the three and this one).
    expect(predictor.steps.line.baseMs).toBeCloseTo(12, 6);
    expect(predictor.traffic.durationMs).toBe(200);
  });

  test("an answer that was not streamed (no first token) teaches no step, only its time on the engine", () => {
    const tracker = new LoadTracker({ blockSize: 16 });
    const w = { workerId: 1n, dpRank: 0 };
    tracker.updateWorkers([w]);
    let now = 0;
    const predictor = new TtftPredictor({ blockSize: 16 });
    const lease = RequestLease.book(
      tracker,
      { requestId: "r", worker: w, seqHashes: null, isl: 32, overlap: 0 },
      0,
      16,
      () => now,
      seededRng(1),
      undefined,
      decodeSampler(predictor, keyOf(w), 0, tracker.slotOf(keyOf(w))),
    );
    lease.prefillDone();
    now = 80;
    lease.free();
    expect(predictor.steps.fitted).toBe(false);
    expect(predictor.traffic.durationMs).toBe(80);
  });
});
