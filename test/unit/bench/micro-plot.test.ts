import { describe, expect, test } from "bun:test";
import { microSvg, type MicroReport } from "../../../bench/micro/plot.ts";
import { bars, groupsOf, targetLabels, targetLines } from "./svg-read.ts";

const total = (p50: number, p99: number) => ({ total: { p50, p99 } });

/** bench:micro's JSON, cut to what the plot reads (128k portable has no target: not drawn). */
const report = (): MicroReport => ({
  load_average: [9.4, 10.6, 11.6],
  "find-best-match": {
    workers: 64,
    indexed_entries: 1_000_448,
    latency_us: {
      "8k/native": total(22, 57),
      "8k/portable": total(68, 90),
      "128k/native": total(188, 2552),
      "128k/portable": total(1129, 5595),
    },
  },
  index: {
    apply: {
      blocksPerSec: 2_449_068,
      typedArraysBlocksPerSec: 2_456_099,
      churnBlocksPerSec: 3_076_945,
      targetBlocksPerSec: 5_000_000,
    },
    memory: {
      bytesPerEntryHeap: 57.3,
      bytesPerEntryTypedArrays: 58.5,
      bytesPerEntryRss: 105.2,
      targetBytesPerEntry: 100,
    },
  },
});

describe("bench:micro plot", () => {
  test("find-best-match p50/p99 for the three cases with targets, apply rates, bytes per entry", () => {
    const svg = microSvg(report());
    expect(groupsOf(svg, "p50")).toEqual(["8k native", "8k portable", "128k native"]);
    expect(bars(svg).filter((b) => b.series === "p99").length).toBe(3);
    expect(groupsOf(svg, "blocks/s")).toEqual([
      "events",
      "typed arrays",
      "store + evict\n(steady churn)",
    ]);
    expect(bars(svg).filter((b) => b.series === "bytes").length).toBe(3);
    expect(svg).not.toContain("NaN");
  });

  test("each case's own target over its bars, the apply and memory targets across their panels, with verdicts", () => {
    const svg = microSvg(report());
    expect(targetLabels(svg)).toEqual([
      "p99 ≤ 25 µs, missed",
      "p99 ≤ 100 µs, met",
      "p99 ≤ 250 µs, missed",
      "events ≥ 5 M blocks/s: 2.45 M/s, missed",
      "heap + typed arrays ≤ 100 B, met",
    ]);
    const lines = targetLines(svg);
    expect(lines.length).toBe(5);
    // The three route targets are each one group's width; the log axis puts 25 µs lowest (largest y).
    const route = lines.slice(0, 3);
    expect(route[0]!.x2).toBeLessThan(route[1]!.x1);
    expect(route[0]!.y).toBeGreaterThan(route[1]!.y);
    expect(route[1]!.y).toBeGreaterThan(route[2]!.y);
  });

  test("a case the run lacks is skipped with its target; a part not run (--only) has no panel", () => {
    const r = report();
    const only = microSvg({
      load_average: null,
      "find-best-match": { ...r["find-best-match"], latency_us: { "8k/native": total(22, 57) } },
    });
    expect(groupsOf(only)).toEqual(["8k native"]);
    expect(targetLabels(only)).toEqual(["p99 ≤ 25 µs, missed"]);
    expect(only).not.toContain("event apply");
    expect(only).not.toContain("NaN");
  });

  test("a part that failed has no panel; nothing to plot is refused, naming what is missing", () => {
    const svg = microSvg({ ...report(), "find-best-match": { error: "Error: no C library" } });
    expect(groupsOf(svg, "p50")).toEqual([]);
    expect(groupsOf(svg, "blocks/s").length).toBe(3);
    expect(() => microSvg({ load_average: [1, 1, 1] })).toThrow(
      /no find-best-match or index figures/,
    );
  });

  test("a figure written as null is skipped, and its verdict left out", () => {
    const r = report();
    const svg = microSvg({
      ...r,
      index: { ...r.index, apply: { ...r.index!.apply, blocksPerSec: null } },
    });
    expect(groupsOf(svg, "blocks/s")).toEqual(["typed arrays", "store + evict\n(steady churn)"]);
    expect(targetLabels(svg)).toContain("events ≥ 5 M blocks/s");
  });
});
