/**
 * bench:clients' plot: one panel per workload, a group of bars per policy: the client's own TTFT
 * p50, p90 and p99 beside the router's TTFT p90 (the policy's view of the same runs), medians
 * over the runs with each run's value as a dot. Drawn with bench/support/bar-chart.ts.
 */
import { barChartsSvg, type BarPanel } from "../support/bar-chart.ts";
import type { CellResult } from "./run.ts";

export function clientsSvg(cells: readonly CellResult[]): string {
  const workloads = [...new Set(cells.map((c) => c.workload))];
  const series = ["client TTFT p50", "client TTFT p90", "client TTFT p99", "router TTFT p90"];
  const panels: BarPanel[] = workloads.map((w) => ({
    title: w,
    yLabel: "ms",
    yLog: true,
    series,
    groups: cells
      .filter((c) => c.workload === w)
      .map((c) => ({
        label: c.policy,
        bars: [
          { series: series[0]!, value: c.median.ttft.p50, runs: c.runs.map((r) => r.ttft.p50) },
          { series: series[1]!, value: c.median.ttft.p90, runs: c.runs.map((r) => r.ttft.p90) },
          { series: series[2]!, value: c.median.ttft.p99, runs: c.runs.map((r) => r.ttft.p99) },
          {
            series: series[3]!,
            value: c.median.routerTtft.p90,
            runs: c.runs.map((r) => r.routerTtft.p90),
          },
        ],
      })),
  }));
  return barChartsSvg(
    "bench:clients: TTFT as the clients measured it, and as the router saw it (medians of the runs)",
    panels,
    2,
  );
}
