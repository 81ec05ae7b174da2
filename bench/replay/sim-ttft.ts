/**
 * `bun bench/replay/sim-ttft.ts [N]` (env ROUTERS=4, ONLY=agentic, SCALES=1,0.5): the time-based kv
 * policy against today's kv (`kv-blocks`) and the peers on every suite workload at three loads,
 * in the timing simulation (sim.ts). Per cell: TTFT p90 and p99 ÷ the best peer's; p90 ÷ the
 * pooled reference and ÷ its causal form (ttft-floor.ts); hit rate ÷ the offline oracle's, and
 * the oracle's own TTFT p90 (its decisions replayed in time: the hit target applies where it is
 * not slower than kv); the busiest engine's work ÷ the mean at its utilisation; the predictor's
 * error |predicted ÷ observed − 1| p50 / p90. Seconds, no processes: the search, not the verdict.
 */
import { schedulerConfig } from "../../src/router/choose/config.ts";
import { textTable } from "../support/text-table.ts";
import { simulate, type SimResult } from "./sim.ts";
import { KV_DEFAULTS, simOptions, simWorkloads } from "./sim-workloads.ts";
import { simulateOffline } from "./oracle.ts";
import { ttftFloor } from "./ttft-floor.ts";

const N = Number(process.argv[2] ?? 2000);
const ROUTERS = Number(process.env["ROUTERS"] ?? 1);
const ONLY = process.env["ONLY"];
const SCALES = (process.env["SCALES"] ?? "2,1,0.5").split(",").map(Number);
const OURS = (process.env["POLICIES"] ?? "kv,kv-blocks").split(",");
const config = schedulerConfig(KV_DEFAULTS);
const peers = ["dynamo", "sglang", "llm-d", "prodstack-session", "least-loaded"];
const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : "-");
const rows: string[][] = [];
for (const [name, trace, frac] of simWorkloads(N)) {
  if (ONLY && !name.includes(ONLY)) continue;
  for (const scale of SCALES) {
    const o = simOptions(trace, frac, scale, ROUTERS);
    const offline = simulateOffline(trace, "oracle", o.engines, o.kvBlocks, { seed: 1 });
    const oracleTtft = simulate(trace, "kv", config, {
      ...o,
      routers: 1,
      assignment: offline.assignment,
    }).ttft.p90;
    const ref = ttftFloor(trace, {
      engines: o.engines,
      speedup: 1,
      arrivalScale: scale,
      prefillUsPerToken: o.prefillUsPerToken,
      prefillOverheadMs: 1,
    });
    const peer = peers.map((p) => [p, simulate(trace, p, config, o)] as const);
    const best90 = peer.reduce((b, x) => (x[1].ttft.p90 < b[1].ttft.p90 ? x : b));
    const best99 = Math.min(...peer.map((x) => x[1].ttft.p99));
    const line = (label: string, r: SimResult) =>
      rows.push([
        name,
        `×${1 / scale}`,
        label,
        f(r.ttft.p90, 0),
        f(r.ttft.p90 / best90[1].ttft.p90),
        f(r.ttft.p99 / best99),
        f(r.ttft.p90 / ref.pooled.p90),
        f(r.ttft.p90 / ref.pooledCausal.p90),
        f(r.hit / offline.hitRate),
        f(oracleTtft, 0),
        `${f(r.workMaxOverMean)} @${f(r.util)}`,
        `${f(r.predictorError.p50)} / ${f(r.predictorError.p90)}`,
      ]);
    for (const p of OURS) line(p, simulate(trace, p, config, o));
    line(`best peer: ${best90[0]}`, best90[1]);
  }
}
console.log(`sim, ${N} requests per workload, 8 engines, ${ROUTERS} router(s); TTFT in trace ms`);
console.log(
  textTable(
    [
      "workload",
      "load",
      "policy",
      "p90",
      "÷ best peer p90",
      "p99 ÷ best peer p99",
      "÷ pooled",
      "÷ pooled causal",
      "hit ÷ oracle",
      "oracle p90",
      "work max/mean @util",
      "pred err p50 / p90",
    ],
    rows,
  ),
);
