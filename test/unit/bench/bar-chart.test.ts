import { describe, expect, test } from "bun:test";
import { barChartsSvg, type BarPanel } from "../../../bench/support/bar-chart.ts";
import { bars, dots, targetLabels, targetLines } from "./svg-read.ts";

const panel = (over: Partial<BarPanel> = {}): BarPanel => ({
  title: "latency",
  yLabel: "ms",
  series: ["p50", "p99"],
  groups: [
    {
      label: "a",
      bars: [
        { series: "p50", value: 1, runs: [0.9, 1.1, 1] },
        { series: "p99", value: 4 },
      ],
    },
    {
      label: "b",
      bars: [
        { series: "p50", value: 10 },
        { series: "p99", value: 40, runs: [30, null, 50] },
      ],
    },
  ],
  targets: [{ y: 2, label: "target p99 ≤ 2 ms" }],
  ...over,
});

describe("bar chart", () => {
  test("one bar per (group, series), a dot per run, the target line and its label", () => {
    const svg = barChartsSvg("title", [panel()]);
    expect(bars(svg).filter((b) => b.series === "p50").length).toBe(2);
    expect(bars(svg).filter((b) => b.series === "p99").length).toBe(2);
    // The null run is skipped: 3 dots on a's p50, 2 on b's p99.
    expect(dots(svg).length).toBe(5);
    expect(targetLines(svg).length).toBe(1);
    expect(targetLabels(svg)).toEqual(["target p99 ≤ 2 ms"]);
    expect(svg).not.toContain("NaN");
  });

  test("a taller bar for a larger value, on a log axis as on a linear one", () => {
    for (const yLog of [false, true]) {
      const b = bars(barChartsSvg("t", [panel({ yLog })]));
      const height = (group: string, series: string) =>
        b.find((x) => x.group === group && x.series === series)!.height;
      expect(height("b", "p99")).toBeGreaterThan(height("b", "p50"));
      expect(height("b", "p50")).toBeGreaterThan(height("a", "p50"));
      expect(height("a", "p50")).toBeGreaterThan(0);
    }
  });

  test("missing values are skipped: no bar, no empty group, no NaN; a target without a value is not drawn", () => {
    const svg = barChartsSvg("t", [
      panel({
        groups: [
          {
            label: "a",
            bars: [
              { series: "p50", value: 1 },
              { series: "p99", value: null },
            ],
          },
          {
            label: "gone",
            bars: [
              { series: "p50", value: undefined },
              { series: "p99", value: NaN },
            ],
          },
        ],
        targets: [
          { y: null, label: "no reference" },
          { y: 3, label: "kept" },
        ],
      }),
    ]);
    expect(bars(svg).length).toBe(1);
    expect(svg).not.toContain("gone");
    expect(targetLabels(svg)).toEqual(["kept"]);
    expect(svg).not.toContain("NaN");
  });

  test("a value of 0 has no place on a log axis and is skipped there, drawn on a linear one", () => {
    const groups = [
      {
        label: "a",
        bars: [
          { series: "p50", value: 0 },
          { series: "p99", value: 5 },
        ],
      },
    ];
    expect(bars(barChartsSvg("t", [panel({ groups, yLog: true })])).length).toBe(1);
    expect(bars(barChartsSvg("t", [panel({ groups })])).length).toBe(2);
  });

  test("a group's target spans that group's bars only; one for a group not drawn is dropped", () => {
    const svg = barChartsSvg("t", [
      panel({
        targets: [
          { y: 5, label: "b only", group: "b" },
          { y: 5, label: "absent", group: "zzz" },
        ],
      }),
    ]);
    const [line] = targetLines(svg);
    const b = bars(svg).filter((x) => x.group === "b");
    const a = bars(svg).filter((x) => x.group === "a");
    expect(targetLabels(svg)).toEqual(["b only"]);
    expect(line!.x1).toBeGreaterThan(Math.max(...a.map((x) => x.x + x.width)));
    expect(line!.x1).toBeLessThanOrEqual(Math.min(...b.map((x) => x.x)));
    expect(line!.x2).toBeGreaterThanOrEqual(Math.max(...b.map((x) => x.x + x.width)));
  });

  test("a panel with nothing to draw says so instead of an empty axis", () => {
    const svg = barChartsSvg("t", [
      panel({ groups: [{ label: "a", bars: [{ series: "p50", value: undefined }] }] }),
    ]);
    expect(bars(svg).length).toBe(0);
    expect(svg).toContain("no data");
  });

  test("labels are escaped", () => {
    const svg = barChartsSvg("a <b> & c", [panel({ title: "x < y" })]);
    expect(svg).toContain("a &lt;b&gt; &amp; c");
    expect(svg).toContain("x &lt; y");
  });
});
