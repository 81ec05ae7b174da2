/**
 * `bun bench/replay/sim-traffic.ts [requests]` (env ENGINE=fifo|v1, SCALES=1,2): kv with and
 * without the prefix traffic counted (sim.ts `countTraffic`: the groups' arrivals and homes, new
 * prefixes pending, which price costs/arrivals-behind.ts) on the suite's workloads in the timing
 * simulation, TTFT p50/p90/p99 side by side. Why: the per-rank arrivals term must not cost the
 * replay cells what it wins on shared-prefix bursts. Seconds; not the measurement of record.
 */
import { schedulerConfig } from "../../src/router/choose/config.ts";
import { textTable } from "../support/text-table.ts";
import { simulate } from "./sim.ts";
import { KV_DEFAULTS, simOptions, simWorkloads } from "./sim-workloads.ts";

const n = Number(process.argv[2] ?? 1000);
const engine = (process.env["ENGINE"] ?? "v1") as "v1" | "fifo";
const scales = (process.env["SCALES"] ?? "1,2").split(",").map(Number);
const config = schedulerConfig(KV_DEFAULTS);
const rows: string[][] = [];
for (const [name, trace, fraction] of simWorkloads(n)) {
  for (const scale of scales) {
    const row = [name, String(scale)];
    for (const countTraffic of [false, true]) {
      const r = simulate(trace, "kv", config, {
        ...simOptions(trace, fraction, scale),
        engine,
        countTraffic,
      });
      row.push(`${r.ttft.p50.toFixed(0)} / ${r.ttft.p90.toFixed(0)} / ${r.ttft.p99.toFixed(0)}`);
    }
    rows.push(row);
  }
}
console.log(`kv, ${engine} engines, ${n} requests per workload; TTFT p50 / p90 / p99 (ms)`);
console.log(textTable(["workload", "load ×", "traffic not counted", "counted"], rows));
