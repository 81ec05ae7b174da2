/**
 * `bun bench/replay/runs-report.ts DIR [BASE POLICY]`: medians over repeated `bench:replay --json`
 * runs in DIR, grouped by trace (a run may hold any subset of policies): one Markdown table with
 * each run's p90 and, per trace, POLICY's p90 ÷ BASE's (default kv ÷ approx); then the suite's
 * summary against the issue 14 targets (suite.ts summaryTable) over the same medians. How the
 * full-length tables in bench/replay/findings.md (issue 14) are made from results/full-length-*.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { PolicyResult, ReplayReport } from "./report.ts";
import { medianResult } from "./suite-report.ts";
import { summaryTable, tallyTable, type SuiteCell } from "./suite.ts";

const [dir, base = "approx", first = "kv"] = process.argv.slice(2);
if (!dir) throw new Error("usage: bun bench/replay/runs-report.ts DIR [BASE_POLICY] [POLICY]");
const byTrace = new Map<string, { report: ReplayReport; runs: Map<string, PolicyResult[]> }>();
for (const f of readdirSync(dir)
  .filter((x) => x.endsWith(".json"))
  .sort()) {
  const r = JSON.parse(readFileSync(join(dir, f), "utf8")) as ReplayReport;
  const entry = byTrace.get(r.trace) ?? { report: r, runs: new Map() };
  byTrace.set(r.trace, entry);
  for (const [p, res] of Object.entries(r.policies))
    entry.runs.set(p, [...(entry.runs.get(p) ?? []), res]);
}
const cells: SuiteCell[] = [];
console.log(
  `| trace | policy | hit | TTFT p50 | p90 (runs) | p99 ms | work max/mean | util | cpu µs/req |\n|---|---|---|---|---|---|---|---|---|`,
);
for (const [trace, { report: r, runs }] of byTrace) {
  const medians = Object.fromEntries([...runs].map(([p, rs]) => [p, medianResult(rs)]));
  const label = `${trace} (${r.requests} req, ${r.routers ?? 1} routers, ${r.kv_blocks_per_engine} blocks/engine, speedup ${r.speedup})`;
  [...runs.keys()].forEach((p, i) => {
    const m = medians[p]!;
    console.log(
      `| ${i === 0 ? label : ""} | ${p} (${runs.get(p)!.length} runs) | ${m.hit_rate.toFixed(3)} | ${m.ttft_ms.p50.toFixed(0)} | ${m.ttft_ms.p90.toFixed(0)} (${runs
        .get(p)!
        .map((x) => x.ttft_ms.p90.toFixed(0))
        .join(
          ", ",
        )}) | ${m.ttft_ms.p99.toFixed(0)} | ${m.work_max_over_mean!.toFixed(2)} | ${m.utilisation!.toFixed(2)} | ${m.router_cpu_us_per_request!.toFixed(0)} |`,
    );
  });
  if (medians[first] && medians[base])
    console.log(
      `| | **${first} ÷ ${base} p90** | **${(medians[first].ttft_ms.p90 / medians[base].ttft_ms.p90).toFixed(2)}** | | | | | | |`,
    );
  cells.push({
    workload: trace,
    routers: r.routers ?? 1,
    restarts: r.engine_restarts ?? 0,
    arrival_scale: r.arrival_scale ?? 1,
    report: { ...r, policies: medians },
  });
}
console.log(`\n${summaryTable(cells)}`);
console.log(`\n${tallyTable(cells)}`);
