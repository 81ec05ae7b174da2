/**
 * `bun bench/replay/sim-shared-prefix.ts` (env SEEDS=1,2,3, POLICIES=kv,kv-before,kv-16,sglang,round-robin,
 * ENGINE=v1|fifo, US_PER_TOKEN=40, DECODE_MS=10, RATE=32, OUT=256, DELAY_MS=0): SGLang's
 * generated-shared-prefix load (gen/shapes.ts `sharedPrefix`: 16 groups × 16, 2,048-token system
 * prompts, Poisson arrivals) in the timing simulation (sim.ts; `ENGINE=v1`: vLLM V1's steps, where
 * a first token waits for the decodes running; `fifo`: one prefill lane beside the decodes) on 8
 * engines whose caches hold every group. `kv-before` is kv fed first tokens alone (no step times,
 * gaps or group arrivals: the kv of 99be34e, before running decodes and prefix groups were priced). Per policy and seed: TTFT p50/p90/p99, the median TTFT of each
 * group's first request (its uncached system prompt), the busiest engine ÷ the mean in requests
 * and in prefill work, and the predictor's error. Why: the question of issue 44 point 4 (do the
 * groups spread as evenly as their load?) without the noise of a loaded machine.
 */
import { schedulerConfig } from "../../src/router/choose/config.ts";
import { textTable } from "../support/text-table.ts";
import { sharedPrefix, SHARED_PREFIX_DEFAULTS } from "./gen/shapes.ts";
import { kvTtftPipeline } from "../../src/router/choose/policies/kv-ttft.ts";
import { fastestThenCachePicker } from "../../src/router/choose/pickers/fastest-then-cache.ts";
import { createPipeline } from "../../src/router/choose/registry.ts";
import type { Pipeline } from "../../src/router/choose/types.ts";
import { simulate } from "./sim.ts";
import { KV_DEFAULTS } from "./sim-workloads.ts";
import { summarize } from "./stats.ts";

const seeds = (process.env["SEEDS"] ?? "1,2,3").split(",").map(Number);
const policies = (process.env["POLICIES"] ?? "kv,kv-before,sglang,round-robin").split(",");
const usPerToken = Number(process.env["US_PER_TOKEN"] ?? 40);
const rate = Number(process.env["RATE"] ?? 32);
const out = Number(process.env["OUT"] ?? 256);
const delay = Number(process.env["DELAY_MS"] ?? 0);
const engine = (process.env["ENGINE"] ?? "v1") as "v1" | "fifo";
const decodeMs = Number(process.env["DECODE_MS"] ?? 10);
const engines = 8;
const config = schedulerConfig(KV_DEFAULTS);
const rows: string[][] = [];
/**
 * kv as it decides with the engines' own block size (16 tokens in vLLM and SGLang): the sim's
 * trace blocks are 512 tokens, so kv's tolerance (one block's prefill) is 32 × wider here than
 * in front of real engines, wide enough to tie every idle engine.
 */
const kv16 = (): Pipeline => {
  const base = createPipeline("kv", config);
  return {
    ...kvTtftPipeline([...base.filters]),
    picker: fastestThenCachePicker(
      (ctx, best) => (best.msPerToken ?? ctx.ttft!.msPerTokenOf(best.key)) * 16,
    ),
  };
};
for (const seed of seeds) {
  const trace = sharedPrefix(seed, { ...SHARED_PREFIX_DEFAULTS, rate, outputTokens: out });
  const firstOfGroup = new Set<number>();
  const seen = new Set<string>();
  trace.forEach((r, i) => {
    if (!seen.has(r.sessionId!)) firstOfGroup.add(i);
    seen.add(r.sessionId!);
  });
  for (const p of policies) {
    const requests = new Array<number>(engines).fill(0);
    const work = new Array<number>(engines).fill(0);
    const firsts: number[] = [];
    const r = simulate(
      trace,
      p === "kv-16" || p === "kv-before" ? "kv" : p,
      config,
      {
        engines,
        kvBlocks: 4096,
        prefillUsPerToken: usPerToken,
        decodeMsPerStep: decodeMs,
        maxOutputTokens: out,
        arrivalScale: 1,
        seed,
        firstTokenDelayMs: delay,
        engine,
        learnDecodes: p !== "kv-before",
        countOutput: true,
        onFirstToken: (i, x) => {
          requests[x.engine]!++;
          work[x.engine]! += x.uncached;
          if (firstOfGroup.has(i)) firsts.push(x.done - x.arrival);
        },
      },
      p === "kv-16" ? kv16 : undefined,
    );
    const maxOverMean = (xs: number[]) =>
      Math.max(...xs) / (xs.reduce((s, x) => s + x, 0) / xs.length);
    rows.push([
      String(seed),
      p,
      r.ttft.p50.toFixed(0),
      r.ttft.p90.toFixed(0),
      r.ttft.p99.toFixed(0),
      summarize(firsts).p50.toFixed(0),
      maxOverMean(requests).toFixed(2),
      maxOverMean(work).toFixed(2),
      requests.join(" "),
      r.predictorError.p90.toFixed(2),
    ]);
  }
}
console.log(
  `sim shared-prefix: 16 groups × 16, ${rate} req/s, ${engines} engines, ${engine} engines, ${usPerToken} µs per uncached token, ${decodeMs} ms a decode step, ${out} output tokens; TTFT in ms`,
);
console.log(
  textTable(
    [
      "seed",
      "policy",
      "p50",
      "p90",
      "p99",
      "group's first p50",
      "requests max/mean",
      "work max/mean",
      "requests per engine",
      "pred err p90",
    ],
    rows,
  ),
);
