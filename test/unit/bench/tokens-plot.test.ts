import { describe, expect, test } from "bun:test";
import { roundsMedian, tokensSvg, type TokensReport } from "../../../bench/tokens/plot.ts";
import { bars, dots, groupsOf, targetLabels } from "./svg-read.ts";

const round = (ms8k: [number, number], ms128k: [number, number], cold: number, warm: number) => ({
  library: { cold_tokens_per_s: cold, warm_tokens_per_s: warm },
  chat_8k: { cold: { total_ms: { p50: ms8k[0], p99: ms8k[1] } } },
  chat_128k: { cold: { total_ms: { p50: ms128k[0], p99: ms128k[1] } } },
});
const rust = (loop: number, batch: number) => ({
  tokenizers: "0.23.2",
  loop: { cold_tokens_per_s: loop, warm_tokens_per_s: loop * 1.2 },
  batch: { cold_tokens_per_s: batch, warm_tokens_per_s: batch * 1.2 },
});

/** bench:tokens's JSON, cut to what the plot reads: two encoders, three rounds, the Rust reference. */
const report = (): TokensReport => ({
  model: "qwen3",
  native_hasher: true,
  workers: 64,
  block_size: 16,
  results: {
    default: [
      round([1.3, 1.9], [24, 43], 6e6, 8e6),
      round([1.4, 2.8], [25, 31], 7e6, 8.2e6),
      round([1.2, 1.8], [23, 40], 6.8e6, 8.1e6),
    ],
    "hf-js": [
      round([7, 20], [120, 190], 5e5, 1.2e6),
      round([8, 21], [122, 195], 4.9e5, 1.1e6),
      round([7.5, 22], [130, 200], 4.8e5, 1.3e6),
    ],
  },
  rust: [rust(4.6e5, 5e5), rust(4.8e5, 4.4e5), "no Rust reference (python3 exited 1)"],
});

describe("bench:tokens plot", () => {
  test("per encoder, p50 and p99 bars at 8k and 128k first sight, and cold/warm tokens/s beside the Rust reference", () => {
    const svg = tokensSvg(report());
    expect(groupsOf(svg, "p50")).toEqual(["default", "hf-js"]);
    expect(bars(svg).filter((b) => b.series === "p50").length).toBe(4);
    expect(bars(svg).filter((b) => b.series === "p99").length).toBe(4);
    expect(groupsOf(svg, "cold")).toEqual([
      "default",
      "hf-js",
      "HF Rust\nencode()",
      "HF Rust\nencode_batch",
    ]);
    expect(bars(svg).filter((b) => b.series === "warm").length).toBe(4);
    // A dot per round: 3 rounds × 2 encoders × 6 bars, and the 2 Rust rounds that ran × 4 bars.
    expect(dots(svg).length).toBe(3 * 2 * 6 + 2 * 4);
    expect(svg).not.toContain("NaN");
  });

  test("the targets as lines: 2 ms and 25 ms, and the faster Rust way with the default's ratio to it", () => {
    // Faster Rust way per round: cold max(4.6e5, 5e5) = 5e5, max(4.8e5, 4.4e5) = 4.8e5 -> lower median 4.8e5;
    // the default's cold median 6.8e6 -> 14.2×. Warm: 6e5 and 5.76e5 -> 5.76e5; 8.1e6 / 5.76e5 = 14.1×.
    expect(targetLabels(tokensSvg(report()))).toEqual([
      "target p99 ≤ 2 ms",
      "target p99 ≤ 25 ms",
      "faster HF Rust way, cold (0.48 M/s): default 14.2×",
      "faster HF Rust way, warm (0.58 M/s): default 14.1×",
    ]);
  });

  test("the bars are the rounds' medians as the bench's table gives them (the lower middle for an even count)", () => {
    expect(roundsMedian([3, 1, 2])).toBe(2);
    expect(roundsMedian([4, 1, 3, 2])).toBe(2);
    expect(roundsMedian([NaN])).toBeUndefined();
    expect(roundsMedian([])).toBeUndefined();
  });

  test("without the Rust reference: no Rust bars and no Rust lines, and the subtitle says so", () => {
    const svg = tokensSvg({ ...report(), rust: ["no Rust reference (python3 exited 1)"] });
    expect(groupsOf(svg, "cold")).toEqual(["default", "hf-js"]);
    expect(targetLabels(svg)).toEqual(["target p99 ≤ 2 ms", "target p99 ≤ 25 ms"]);
    expect(svg).toContain("no Rust reference in this run");
  });

  test("an encoder missing a figure is skipped there, not drawn as NaN", () => {
    const r = report();
    const broken = r.results.default!.map((x) => ({ ...x, chat_128k: undefined }));
    const svg = tokensSvg({ ...r, results: { ...r.results, default: broken } });
    expect(bars(svg).filter((b) => b.group === "default" && b.series === "p99").length).toBe(1);
    expect(svg).not.toContain("NaN");
  });

  test("a file that is not bench:tokens's JSON is refused, naming what is missing", () => {
    expect(() => tokensSvg({ model: "x" } as TokensReport)).toThrow(/no results/);
  });
});
