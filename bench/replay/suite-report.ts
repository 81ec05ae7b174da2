/**
 * `bun bench/replay/suite-report.ts RUN1.json [RUN2.json ...] [--json MEDIANS.json]`: medians over
 * repeated suite runs (same cells, same order), printed as the summary against the targets and as
 * one Markdown table per cell (TTFT p90 with each run's value, the predictor's error) — what
 * bench/replay/findings.md's suite tables are; the medians' JSON feeds suite-plot.ts and ttft-floor.ts.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { toJson, type PolicyResult, type ReplayReport } from "./report.ts";
import { median as statsMedian } from "./stats.ts";
import type { SuiteCell } from "./suite.ts";
import { ttftSummaryTable, ttftTallyTable } from "./ttft-targets.ts";

/** The median of the runs that have the field (a run may lack one: NaN). */
const median = (xs: number[]) => statsMedian(xs.filter((x) => Number.isFinite(x)));

/** Field-by-field median of the same policy's result over runs. */
export function medianResult(rs: PolicyResult[]): PolicyResult {
  const m = (f: (r: PolicyResult) => number | undefined) => median(rs.map((r) => f(r) ?? NaN));
  return {
    hit_rate: m((r) => r.hit_rate),
    hit_rate_vs_ideal: m((r) => r.hit_rate_vs_ideal),
    ttft_ms: {
      p50: m((r) => r.ttft_ms.p50),
      p90: m((r) => r.ttft_ms.p90),
      p99: m((r) => r.ttft_ms.p99),
    },
    ttft_placement_ms: rs.some((r) => r.ttft_placement_ms)
      ? {
          p50: m((r) => r.ttft_placement_ms?.p50),
          p90: m((r) => r.ttft_placement_ms?.p90),
          p99: m((r) => r.ttft_placement_ms?.p99),
        }
      : undefined,
    e2e_ms: {
      p50: m((r) => r.e2e_ms.p50),
      p90: m((r) => r.e2e_ms.p90),
      p99: m((r) => r.e2e_ms.p99),
    },
    output_tokens_per_s: m((r) => r.output_tokens_per_s),
    load_max_over_mean: m((r) => r.load_max_over_mean),
    router_overhead_us: {
      p50: m((r) => r.router_overhead_us.p50),
      p99: m((r) => r.router_overhead_us.p99),
    },
    requests: m((r) => r.requests),
    errors: Math.max(...rs.map((r) => r.errors)),
    work_max_over_mean: m((r) => r.work_max_over_mean),
    engine_request_max_over_mean: m((r) => r.engine_request_max_over_mean),
    idle_engines: m((r) => r.idle_engines),
    utilisation: m((r) => r.utilisation),
    router_cpu_us_per_request: m((r) => r.router_cpu_us_per_request),
    ttft_prediction_error: rs.some((r) => r.ttft_prediction_error)
      ? { p50: m((r) => r.ttft_prediction_error?.p50), p90: m((r) => r.ttft_prediction_error?.p90) }
      : undefined,
  };
}

export function medianCells(runs: readonly SuiteCell[][]): {
  cells: SuiteCell[];
  p90s: Map<string, number[]>[];
} {
  const first = runs[0]!;
  const p90s: Map<string, number[]>[] = [];
  const cells = first.map((c, i) => {
    const same = runs
      .map((r) => r[i]!)
      .filter(
        (x) => x.workload === c.workload && x.routers === c.routers && x.restarts === c.restarts,
      );
    const policies: Record<string, PolicyResult> = {};
    const ranges = new Map<string, number[]>();
    for (const name of Object.keys(c.report.policies)) {
      const rs = same
        .map((x) => x.report.policies[name])
        .filter((x): x is PolicyResult => x !== undefined);
      policies[name] = medianResult(rs);
      ranges.set(
        name,
        rs.map((x) => x.ttft_ms.p90),
      );
    }
    p90s.push(ranges);
    const report: ReplayReport = { ...c.report, policies };
    return { ...c, report };
  });
  return { cells, p90s };
}

const f = (x: number | undefined, d = 0) =>
  x !== undefined && Number.isFinite(x) ? x.toFixed(d) : "-";

if (import.meta.main) {
  const args = process.argv.slice(2);
  const j = args.indexOf("--json");
  const out = j >= 0 ? args.splice(j, 2)[1] : undefined;
  const files = args;
  if (files.length === 0)
    throw new Error("usage: bun bench/replay/suite-report.ts RUN.json [RUN.json ...]");
  const runs = files.map((p) => JSON.parse(readFileSync(p, "utf8")) as SuiteCell[]);
  const { cells, p90s } = medianCells(runs);
  if (out)
    writeFileSync(
      out,
      `[${cells.map((c) => JSON.stringify({ ...c, report: JSON.parse(toJson(c.report)) })).join(",\n")}]\n`,
    );
  console.log(`medians of ${runs.length} run(s)\n`);
  console.log(ttftSummaryTable(cells));
  console.log(`\n${ttftTallyTable(cells)}`);
  cells.forEach((c, i) => {
    const r = c.report;
    console.log(
      `\n**${c.workload}**, ${c.routers} router(s), ${c.restarts} restart(s), load ×${1 / c.arrival_scale}: ${r.requests} requests, ${r.engines} engines × ${r.kv_blocks_per_engine} blocks, ideal hit ${f(r.ideal_hit_rate, 3)}, offline oracle ${f(r.offline["oracle"]?.hit_rate, 3)}\n`,
    );
    console.log(
      "| policy | hit | TTFT p50 | p90 (runs) | p99 ms | req max/mean | work max/mean | idle | util | cpu µs/req | pred err p50 / p90 |",
    );
    console.log("|---|---|---|---|---|---|---|---|---|---|---|");
    for (const [name, p] of Object.entries(r.policies)) {
      const runsP90 = p90s[i]!.get(name)!
        .map((x) => f(x))
        .join(", ");
      console.log(
        `| ${name} | ${f(p.hit_rate, 3)} | ${f(p.ttft_ms.p50)} | ${f(p.ttft_ms.p90)} (${runsP90}) | ${f(p.ttft_ms.p99)} | ${f(p.engine_request_max_over_mean, 2)} | ${f(p.work_max_over_mean, 2)} | ${f(p.idle_engines)} | ${f(p.utilisation, 2)} | ${f(p.router_cpu_us_per_request)} | ${p.ttft_prediction_error ? `${f(p.ttft_prediction_error.p50, 2)} / ${f(p.ttft_prediction_error.p90, 2)}` : "-"} |`,
      );
    }
  });
}
