/**
 * Medians over repeated bench:replay --json reports: one row per (trace, policy), each column the
 * median of that measure over the runs. Usage: bun summarize.ts FILE.json...
 */
import { readFileSync } from "node:fs";
import type { ReplayReport } from "../../replay/report.ts";

const median = (xs: number[]) => {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const m = v.length >> 1;
  return v.length % 2 ? v[m]! : (v[m - 1]! + v[m]!) / 2;
};
const f = (x: number, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : "-");

const groups = new Map<
  string,
  { trace: string; policy: string; runs: ReplayReport["policies"][string][] }
>();
for (const file of process.argv.slice(2)) {
  const r = JSON.parse(readFileSync(file, "utf8")) as ReplayReport;
  for (const [policy, p] of Object.entries(r.policies)) {
    const key = `${r.trace}\t${policy}`;
    const g = groups.get(key) ?? { trace: r.trace, policy, runs: [] };
    g.runs.push(p);
    groups.set(key, g);
  }
}
const head = [
  "trace",
  "router / policy",
  "runs",
  "ttft p50",
  "p90",
  "p99",
  "hit",
  "work max/mean",
  "req max/mean",
  "cpu µs/req",
  "errors",
];
const rows = [...groups.values()].map(({ trace, policy, runs }) => {
  const m = (get: (p: (typeof runs)[number]) => number | undefined) =>
    median(runs.map((p) => get(p) ?? NaN));
  return [
    trace,
    policy,
    String(runs.length),
    f(m((p) => p.ttft_ms.p50)),
    f(m((p) => p.ttft_ms.p90)),
    f(m((p) => p.ttft_ms.p99)),
    f(
      m((p) => p.hit_rate),
      3,
    ),
    f(
      m((p) => p.work_max_over_mean),
      2,
    ),
    f(
      m((p) => p.engine_request_max_over_mean),
      2,
    ),
    f(m((p) => p.router_cpu_us_per_request)),
    String(runs.reduce((s, p) => s + p.errors, 0)),
  ];
});
const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(w[i]!)).join(" | ")} |`;
console.log(
  [line(head), `|${w.map((n) => "-".repeat(n + 2)).join("|")}|`, ...rows.map(line)].join("\n"),
);
