/** The predictor-error-through-a-run report (bench/replay/pred-err-phases.ts) on hand-made access lines. */
import { describe, expect, test } from "bun:test";
import { phases, samplesOf, summarize } from "../../../bench/replay/pred-err-phases.ts";

const line = (ms: number, duration: number, predicted: number | null, ttft: number | null) =>
  `{"time":"${new Date(ms).toISOString()}","level":"info","msg":"request","duration_ms":${duration},"predicted_ttft_ms":${predicted},"ttft_ms":${ttft}}`;

describe("pred-err-phases", () => {
  test("reads the access lines with both numbers, in arrival order (end time less duration); skips the rest", () => {
    const text = [
      "some other output",
      line(10_000, 500, 100, 50), // arrived at 9,500
      line(9_800, 100, 30, 30), // arrived at 9,700
      line(9_000, 10, null, 40), // no prediction (another policy)
      line(9_100, 10, 40, null), // not streamed
      `{"time":"x","msg":"warn"}`,
      `[router] ${line(9_600, 200, 20, 40)}`, // arrived at 9,400, with a prefix before the JSON
    ].join("\n");
    const s = samplesOf(text);
    expect(s.map((x) => x.predictedMs)).toEqual([20, 100, 30]);
    expect(s.map((x) => x.observedMs)).toEqual([40, 50, 30]);
  });

  test("errors are |predicted ÷ observed − 1|, with the median ratio and the count beyond 0.3", () => {
    const s = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((k) => ({
      at: k,
      predictedMs: k === 10 ? 300 : 100 + k,
      observedMs: 100,
    }));
    const r = summarize(s);
    expect(r.n).toBe(10);
    expect(r.p50).toBeCloseTo(0.05, 9);
    expect(r.p90).toBeCloseTo(0.09, 9);
    expect(r.ratio).toBeCloseTo(1.05, 9);
    expect(r.over).toBe(1);
    expect(Number.isNaN(summarize([]).p90)).toBe(true);
  });

  test("phases cut the run into consecutive parts; the last takes the remainder", () => {
    const s = Array.from({ length: 23 }, (_, k) => ({ at: k, predictedMs: 1, observedMs: 1 }));
    const p = phases(s, 10);
    expect(p.length).toBe(10);
    expect(p.slice(0, 9).every((x) => x.length === 2)).toBe(true);
    expect(p[9]!.length).toBe(5);
    expect(p.flat().map((x) => x.at)).toEqual(s.map((x) => x.at));
    expect(phases(s.slice(0, 3), 10).length).toBe(3);
  });
});
