/**
 * `bun bench/replay/sim-routers.ts [N]`: the 4-router target in the timing simulation (sim.ts):
 * kv (the engines' caches, as KV events give every router) against approx (each router knows only
 * its own decisions) and the peers whose trees are per router, every workload of the suite at three
 * loads, arrivals spread over the routers in turn, active load shared at once. No processes, no
 * noise, no event or Redis delay: not the measurement of record (suite.ts is), the noise-free view
 * of what knowing the engines' caches is worth when a router sees only a share of the traffic.
 */
import { schedulerConfig } from "../../src/router/choose/config.ts";
import { textTable } from "../support/text-table.ts";
import { simulate } from "./sim.ts";
import { KV_DEFAULTS, simOptions, simWorkloads } from "./sim-workloads.ts";
import { median } from "./stats.ts";

const N = Number(process.argv[2] ?? 2000);
const ROUTERS = Number(process.env["ROUTERS"] ?? 4);
const config = schedulerConfig(KV_DEFAULTS);
const policies = ["kv", "approx", "dynamo", "sglang", "llm-d"];
const rows: string[][] = [];
const ratios: number[] = [];
for (const [name, trace, frac] of simWorkloads(N)) {
  for (const scale of [2, 1, 0.5]) {
    const one = simulate(trace, "kv", config, simOptions(trace, frac, scale, 1));
    const r = new Map(
      policies.map(
        (p) => [p, simulate(trace, p, config, simOptions(trace, frac, scale, ROUTERS))] as const,
      ),
    );
    const kv = r.get("kv")!;
    const approx = r.get("approx")!;
    ratios.push(kv.ttft.p90 / approx.ttft.p90);
    rows.push([
      name,
      `×${1 / scale}`,
      one.ttft.p90.toFixed(0),
      ...policies.map((p) => `${r.get(p)!.ttft.p90.toFixed(0)} (${r.get(p)!.hit.toFixed(2)})`),
      (kv.ttft.p90 / approx.ttft.p90).toFixed(2),
      `${kv.workMaxOverMean.toFixed(2)} @${kv.util.toFixed(2)}`,
    ]);
  }
}
console.log(
  `sim, ${N} requests per workload, 8 engines, ${ROUTERS} routers; TTFT p90 in trace ms (hit rate)`,
);
console.log(
  textTable(
    [
      "workload",
      "load",
      "kv, 1 router",
      ...policies.map((p) => `${p}, ${ROUTERS}`),
      "kv ÷ approx",
      "kv work max/mean @util",
    ],
    rows,
  ),
);
console.log(
  `kv ÷ approx p90 ≤ 0.8 on ${ratios.filter((x) => x <= 0.8).length} of ${ratios.length} cells; median ${median(ratios).toFixed(2)}`,
);
