/**
 * `bun bench/replay/heldout.ts [--shape agentic] [--seeds 2,3] [--routers 1,3] [--loads 1,0.5]
 *   [--runs 3] [--policies kv,kv-blocks,sglang,dynamo] [--speedup 10] [--json-dir DIR]`:
 * the held-out check — a generated shape with seeds nobody tuned on (the suite uses seed 1), each
 * (seed, routers, load) a cell run `runs` times (a fresh cluster per policy and run), medians of the
 * runs beside each run's p90: kv against SGLang's cache-aware policy (the fan-out target is kv p90
 * ≤ 0.8 × sglang's), kv-blocks and the other peers; last, the placement TTFT's p90 (placement.ts:
 * the same decisions on the engines' timing model, without the machine's noise), kv's and sglang's.
 * Half capacity, 8 engines, 8 output tokens.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { textTable } from "../support/text-table.ts";
import { runCell } from "./cell.ts";
import { generate, SHAPES, type Shape } from "./gen/shapes.ts";
import { toJson, type PolicyResult } from "./report.ts";
import { medianResult } from "./suite-report.ts";
import { SUITE_TIMING } from "./suite.ts";

const { values: a } = parseArgs({
  options: {
    shape: { type: "string", default: "agentic" },
    seeds: { type: "string", default: "2,3" },
    routers: { type: "string", default: "1,3" },
    loads: { type: "string", default: "1,0.5" },
    runs: { type: "string", default: "3" },
    policies: { type: "string", default: "kv,kv-blocks,sglang,dynamo" },
    speedup: { type: "string", default: "10" },
    "json-dir": { type: "string" },
  },
});
const shape = a.shape as Shape;
if (!(SHAPES as readonly string[]).includes(shape))
  throw new Error(`--shape must be one of ${SHAPES.join(", ")}, got ${a.shape}`);
const nums = (s: string, name: string) =>
  s.split(",").map((x) => {
    const v = Number(x);
    if (!(v > 0))
      throw new Error(`--${name} takes positive numbers separated by commas, got "${s}"`);
    return v;
  });
const seeds = nums(a.seeds!, "seeds");
const routerCounts = nums(a.routers!, "routers");
const loads = nums(a.loads!, "loads");
const runs = nums(a.runs!, "runs")[0]!;
const policies = a.policies!.split(",");
const f = (x: number | undefined, d = 0) =>
  x !== undefined && Number.isFinite(x) ? x.toFixed(d) : "-";

/** The placement TTFT's p90 (placement.ts: the engines' model for where each request went), kv's against a peer's. */
const placement = (m: Map<string, ReturnType<typeof medianResult>>, a: string, b: string) => {
  const x = m.get(a)?.ttft_placement_ms?.p90;
  const y = m.get(b)?.ttft_placement_ms?.p90;
  return x !== undefined && y !== undefined ? `${f(x)} / ${f(y)} (${f(x / y, 2)})` : "-";
};

const rows: string[][] = [];
for (const seed of seeds) {
  const trace = generate(shape, seed);
  for (const routers of routerCounts) {
    for (const load of loads) {
      const perPolicy = new Map<string, PolicyResult[]>();
      for (let run = 1; run <= runs; run++) {
        const report = await runCell({
          trace,
          traceName: `gen-${shape} seed ${seed}`,
          engines: 8,
          kvFraction: 0.5,
          blockSize: 512,
          speedup: Number(a.speedup),
          timing: SUITE_TIMING,
          policies,
          seed,
          maxOutputTokens: 8,
          routers,
          engineRestarts: 0,
          arrivalScale: 1 / load,
          promptFormat: "tokens",
          routerArgs: ["--engine-metrics-interval", "0"],
          ttftSloMs: 1000,
          verbose: false,
          onError: (p, m) => console.error(`seed ${seed}, N ${routers}, load ×${load}, ${p}: ${m}`),
        });
        if (a["json-dir"]) {
          mkdirSync(a["json-dir"], { recursive: true });
          writeFileSync(
            join(a["json-dir"], `${shape}-s${seed}-n${routers}-x${load}-r${run}.json`),
            toJson(report),
          );
        }
        for (const [p, r] of Object.entries(report.policies))
          perPolicy.set(p, [...(perPolicy.get(p) ?? []), r]);
        console.error(`seed ${seed}, N ${routers}, load ×${load}: run ${run}/${runs} done`);
      }
      const m = new Map([...perPolicy].map(([p, rs]) => [p, medianResult(rs)] as const));
      const kv = m.get("kv");
      const sg = m.get("sglang");
      const each = (p: string) =>
        `${f(m.get(p)?.ttft_ms.p90)} (${(perPolicy.get(p) ?? []).map((r) => f(r.ttft_ms.p90)).join(", ")})`;
      rows.push([
        String(seed),
        String(routers),
        `×${load}`,
        f(kv?.utilisation, 2),
        each("kv"),
        each("sglang"),
        kv && sg ? f(kv.ttft_ms.p90 / sg.ttft_ms.p90, 2) : "-",
        kv && sg ? `${f(kv.ttft_ms.p99)} / ${f(sg.ttft_ms.p99)}` : "-",
        ...policies.filter((p) => p !== "kv" && p !== "sglang").map(each),
        kv?.ttft_prediction_error
          ? `${f(kv.ttft_prediction_error.p50, 2)} / ${f(kv.ttft_prediction_error.p90, 2)}`
          : "-",
        placement(m, "kv", "sglang"),
      ]);
    }
  }
}
console.log(
  `held-out gen-${shape}: medians of ${runs} run(s) per cell, TTFT in wall ms (speedup ${a.speedup})`,
);
console.log(
  textTable(
    [
      "seed",
      "N",
      "load",
      "util",
      "kv p90 (runs)",
      "sglang p90 (runs)",
      "kv ÷ sglang",
      "p99 kv / sglang",
      ...policies.filter((p) => p !== "kv" && p !== "sglang").map((p) => `${p} p90 (runs)`),
      "kv pred err p50 / p90",
      "placement p90 kv / sglang (÷)",
    ],
    rows,
  ),
);
