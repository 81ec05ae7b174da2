/** The TTFT predictor's decode weight: how much of a rank's decode step a first token waits for, learned from first tokens. */
import { describe, expect, test } from "bun:test";
import { keyOf } from "../../../../src/core/ids.ts";
import { ActiveSequences } from "../../../../src/router/books/active-sequences.ts";
import { MIN_DECODE_SAMPLES, TtftPredictor } from "../../../../src/router/books/ttft-predictor.ts";
import { seededRng } from "../choose/helpers.ts";

const keys = [1n, 2n, 3n, 4n].map((workerId) => keyOf({ workerId, dpRank: 0 }));

/** 48 first tokens at 1 ms + 0.01 ms per token + `waits` × the step each met (10 to 22 ms), ±3 %. */
function taught(waits: number, samples = 48): TtftPredictor {
  const p = new TtftPredictor({ blockSize: 16 });
  const rng = seededRng(9);
  for (let i = 0; i < samples; i++) {
    const tokens = 64 + Math.floor(rng() * 3000);
    const stepMs = 10 + 12 * rng();
    const ms = (1 + 0.01 * tokens + waits * stepMs) * (0.97 + 0.06 * rng());
    p.observe({ key: keys[i % 4]!, bookedAt: 0, at: ms, tokens, stepMs });
  }
  return p;
}

describe("the decode weight", () => {
  test("first tokens that wait for one decode step (vLLM V1): about 1, and the line's speed and latency stay the prefill's", () => {
    const p = taught(1);
    expect(p.decodeWeight).toBeGreaterThan(0.8);
    expect(p.decodeWeight).toBeLessThan(1.2);
    expect(p.speed(keys[0]!).msPerToken).toBeCloseTo(0.01, 2);
    expect(p.latencyMs).toBeLessThan(4);
  });

  test("first tokens that never wait for decodes (a separate prefill lane): about 0", () => {
    const p = taught(0);
    expect(p.decodeWeight).toBeLessThan(0.15);
  });

  test(`fewer than ${MIN_DECODE_SAMPLES} first tokens that met decodes: 0, the prediction is the line alone`, () => {
    const p = taught(1, MIN_DECODE_SAMPLES - 1);
    expect(p.decodeWeight).toBe(0);
  });

  test("the prediction adds the weight × the rank's step at the decodes its books hold running", () => {
    const p = taught(1);
    for (let d = 1; d <= 40; d++)
      p.steps.observe({ key: keys[0]!, gapMs: 10 + 0.2 * d, decodes: d });
    const seqs = new ActiveSequences(16);
    for (let i = 0; i < 30; i++) {
      seqs.add({ requestId: `d${i}`, seqHashes: null, isl: 32, overlap: 0 }, 0);
      seqs.markPrefillCompleted(`d${i}`, 0);
    }
    const idle = p.predict(undefined, keys[0]!, 1000, 0);
    const busy = p.predict(seqs, keys[0]!, 1000, 0);
    expect(p.stepMsOf(seqs, keys[0]!)).toBeCloseTo(16, 1);
    expect(busy.tokens).toBe(idle.tokens);
    expect(busy.ms - idle.ms).toBeCloseTo(p.decodeWeight * 16, 1);
  });
});
