/**
 * `bun bench/replay/runs-report.ts DIR [BASE POLICY]`: medians over repeated `bench:replay --json`
 * runs in DIR, grouped by trace (a run may hold any subset of policies), one Markdown table with
 * each run's p90 and, per trace, the first policy's p90 ÷ BASE's (default kv ÷ approx). How the
 * 4-router full-length table in bench/README.md (issue 14) is made from results/four-routers/.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { PolicyResult, ReplayReport } from "./report.ts";
import { PEERS } from "./suite.ts";

const [dir, base = "approx", first = "kv"] = process.argv.slice(2);
if (!dir) throw new Error("usage: bun bench/replay/runs-report.ts DIR [BASE_POLICY] [POLICY]");
const median = (xs: number[]) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  const n = s.length;
  return n === 0 ? NaN : n % 2 ? s[(n - 1) / 2]! : (s[n / 2 - 1]! + s[n / 2]!) / 2;
};
const targets: string[] = [];
const byTrace = new Map<string, { report: ReplayReport; runs: Map<string, PolicyResult[]> }>();
for (const f of readdirSync(dir).filter((x) => x.endsWith(".json")).sort()) {
  const r = JSON.parse(readFileSync(join(dir, f), "utf8")) as ReplayReport;
  const entry = byTrace.get(r.trace) ?? { report: r, runs: new Map() };
  byTrace.set(r.trace, entry);
  for (const [p, res] of Object.entries(r.policies)) entry.runs.set(p, [...(entry.runs.get(p) ?? []), res]);
}
console.log(`| trace | policy | hit | TTFT p50 | p90 (runs) | p99 ms | work max/mean | util | cpu µs/req |\n|---|---|---|---|---|---|---|---|---|`);
for (const [trace, { report: r, runs }] of byTrace) {
  const m = (p: string, f: (x: PolicyResult) => number | undefined) => median((runs.get(p) ?? []).map((x) => f(x) ?? NaN));
  const label = `${trace} (${r.requests} req, ${r.routers ?? 1} routers, ${r.kv_blocks_per_engine} blocks/engine, speedup ${r.speedup})`;
  [...runs.keys()].forEach((p, i) => {
    const rs = runs.get(p)!;
    console.log(
      `| ${i === 0 ? label : ""} | ${p} (${rs.length} runs) | ${m(p, (x) => x.hit_rate).toFixed(3)} | ${m(p, (x) => x.ttft_ms.p50).toFixed(0)} | ${m(p, (x) => x.ttft_ms.p90).toFixed(0)} (${rs.map((x) => x.ttft_ms.p90.toFixed(0)).join(", ")}) | ${m(p, (x) => x.ttft_ms.p99).toFixed(0)} | ${m(p, (x) => x.work_max_over_mean).toFixed(2)} | ${m(p, (x) => x.utilisation).toFixed(2)} | ${m(p, (x) => x.router_cpu_us_per_request).toFixed(0)} |`,
    );
  });
  if (runs.has(first) && runs.has(base)) console.log(`| | **${first} ÷ ${base} p90** | **${(m(first, (x) => x.ttft_ms.p90) / m(base, (x) => x.ttft_ms.p90)).toFixed(2)}** | | | | | | |`);
  // The issue 14 targets for `first` against the peers present (medians), one line per trace.
  const peers = PEERS.filter((p) => runs.has(p));
  if (runs.has(first) && peers.length > 0) {
    const p90 = (p: string) => m(p, (x) => x.ttft_ms.p90);
    const p99 = (p: string) => m(p, (x) => x.ttft_ms.p99);
    const best = peers.reduce((b, p) => (p90(p) < p90(b) ? p : b));
    const best99 = Math.min(...peers.map(p99));
    const oracle = r.offline["oracle"]?.hit_rate ?? NaN;
    const ll = runs.has("least-loaded") ? `; ≤ least-loaded: p90 ${(p90(first) / p90("least-loaded")).toFixed(2)}, p99 ${(p99(first) / p99("least-loaded")).toFixed(2)}` : "";
    targets.push(
      `${trace}: ${first} p90 ÷ best peer (${best}) ${(p90(first) / p90(best)).toFixed(2)}; p99 ÷ best peer p99 ${(p99(first) / best99).toFixed(2)}; hit ÷ oracle ${(m(first, (x) => x.hit_rate) / oracle).toFixed(2)}${ll}; work max/mean ${m(first, (x) => x.work_max_over_mean).toFixed(2)} at utilisation ${m(first, (x) => x.utilisation).toFixed(2)}`,
    );
  }
}
if (targets.length) console.log(`\n${targets.join("\n")}`);
