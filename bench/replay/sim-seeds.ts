/**
 * `bun bench/replay/sim-seeds.ts [N]` (env SHAPE=agentic, SEEDS=1,2,3,4,5, SCALE=1, KV_FRACTION=0.5,
 * POLICIES=kv,kv-blocks,llm-d): one generated shape under new generator seeds in the timing
 * simulation (sim.ts), its first N requests (300, the quick suite's), each policy's TTFT p90 and
 * its ratio to kv-blocks', hit rate, busiest engine's work ÷ the mean, and the predictor's error
 * p50. Why: one seed's cell can be one trace's luck; a change to kv is judged over several.
 */
import { schedulerConfig } from "../../src/router/choose/config.ts";
import { textTable } from "../support/text-table.ts";
import { generate, SHAPES, type Shape } from "./gen/shapes.ts";
import { simulate } from "./sim.ts";
import { KV_DEFAULTS, simOptions } from "./sim-workloads.ts";

const N = Number(process.argv[2] ?? 300);
const shape = (process.env["SHAPE"] ?? "agentic") as Shape;
if (!SHAPES.includes(shape)) throw new Error(`SHAPE: one of ${SHAPES.join(", ")}, got ${shape}`);
const seeds = (process.env["SEEDS"] ?? "1,2,3,4,5").split(",").map(Number);
const scale = Number(process.env["SCALE"] ?? 1);
const fraction = Number(process.env["KV_FRACTION"] ?? 0.5);
const policies = (process.env["POLICIES"] ?? "kv,kv-blocks,llm-d").split(",");
const config = schedulerConfig(KV_DEFAULTS);
const rows: string[][] = [];
for (const seed of seeds) {
  const trace = generate(shape, seed).slice(0, N);
  const o = simOptions(trace, fraction, scale);
  const results = policies.map((p) => [p, simulate(trace, p, config, o)] as const);
  const blocks = simulate(trace, "kv-blocks", config, o).ttft.p90;
  for (const [p, r] of results) {
    rows.push([
      String(seed),
      String(o.kvBlocks),
      p,
      r.ttft.p90.toFixed(0),
      (r.ttft.p90 / blocks).toFixed(2),
      r.hit.toFixed(2),
      r.workMaxOverMean.toFixed(2),
      r.predictorError.p50.toFixed(2),
    ]);
  }
}
console.log(`sim ${shape}, first ${N} requests, 8 engines, load ×${1 / scale}; TTFT in trace ms`);
console.log(
  textTable(
    [
      "seed",
      "blocks per engine",
      "policy",
      "p90",
      "÷ kv-blocks",
      "hit",
      "work max/mean",
      "pred err p50",
    ],
    rows,
  ),
);
