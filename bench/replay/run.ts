/**
 * `bun run bench:replay`: replay a Mooncake trace against a fresh simulated cluster under
 * each routing policy, and compare them with each other and with offline bounds.
 * See bench/README.md for the timing model, the defaults and how they were chosen.
 */
import { parseArgs } from "node:util";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { startCluster, type EngineTiming } from "./cluster.ts";
import { idealHitRate, simulateOffline } from "./oracle.ts";
import { readHistogram } from "./prometheus.ts";
import { replay, type RequestOutcome } from "./replay.ts";
import { formatTable, toJson, toSvg, type PolicyResult, type ReplayReport } from "./report.ts";
import { histogramQuantile, summarize } from "./stats.ts";
import { fullBlockIds, loadTrace, uniqueFullBlocks } from "./trace.ts";

const ROOT = join(import.meta.dir, "..", "..");
const { values: a } = parseArgs({
  options: {
    // The Mooncake traces sit beside the checkout in the project's workspace; elsewhere pass --trace.
    trace: { type: "string", default: join(ROOT, "..", "shared", "traces", "conversation_trace.jsonl") },
    requests: { type: "string", default: "1000" },
    speedup: { type: "string", default: "20" },
    engines: { type: "string", default: "8" },
    "kv-blocks": { type: "string" },
    "kv-fraction": { type: "string", default: "0.5" },
    "block-size": { type: "string", default: "512" },
    policies: { type: "string", default: "kv,approx,round-robin,random,least-loaded" },
    seed: { type: "string", default: "1" },
    router: { type: "string" },
    "max-output-tokens": { type: "string", default: "32" },
    "prefill-us-per-token": { type: "string", default: "200" },
    "decode-ms-per-step": { type: "string", default: "20" },
    "decode-batch-factor": { type: "string", default: "0.02" },
    "max-concurrency": { type: "string", default: "64" },
    "router-arg": { type: "string", multiple: true, default: [] },
    // Issue 13: admission past saturation. N = a rank is busy when its engine reports more
    // than N waiting requests (engine metrics scraped every 50 ms); busy everywhere = queue.
    admission: { type: "string" },
    "queue-timeout": { type: "string", default: "30" },
    // Scrape the engines' /metrics (every 50 ms) without acting on them: the cost of the scrape alone.
    "engine-metrics": { type: "boolean", default: false },
    // Goodput counts completed requests whose TTFT (client side, queue wait included) is within this.
    "ttft-slo-ms": { type: "string", default: "1000" },
    json: { type: "string" },
    svg: { type: "string" },
    quiet: { type: "boolean", default: false },
    verbose: { type: "boolean", default: false },
  },
});

const num = (name: keyof typeof a) => {
  const v = Number(a[name]);
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${String(name)} must be a non-negative number, got ${a[name]}`);
  return v;
};

if (!existsSync(a.trace!)) {
  throw new Error(`trace ${a.trace} not found: pass --trace PATH (Mooncake JSONL; bench/replay/fixtures/synthetic-300.jsonl is a small one)`);
}
const trace = loadTrace(a.trace!, num("requests"));
if (trace.length === 0) throw new Error(`no requests in ${a.trace}`);
const engines = num("engines");
const blockSize = num("block-size");
const unique = uniqueFullBlocks(trace);
const kvBlocks = a["kv-blocks"] ? num("kv-blocks") : Math.max(1, Math.ceil((unique * num("kv-fraction")) / engines));
const speedup = num("speedup");
const timing: EngineTiming = {
  prefillUsPerToken: num("prefill-us-per-token"),
  decodeMsPerStep: num("decode-ms-per-step"),
  decodeBatchFactor: num("decode-batch-factor"),
  maxConcurrency: num("max-concurrency"),
};
const policies = a.policies!.split(",").map((s) => s.trim()).filter(Boolean);
const traceName = a.trace!.split("/").pop()!.replace(/\.jsonl$/, "");

// Offline bounds use the trace's own 512-token blocks and the same per-engine capacity
// (converted when engines use a smaller block size).
const ideal = idealHitRate(trace);
const traceBlocksPerEngine = Math.floor((kvBlocks * blockSize) / 512);
const offline: ReplayReport["offline"] = {};
for (const p of ["oracle", "round-robin", "random"] as const) {
  const r = simulateOffline(trace, p, engines, traceBlocksPerEngine, { seed: num("seed") });
  offline[p] = { hit_rate: r.hitRate, hit_rate_vs_ideal: ideal ? r.hitRate / ideal : 0, load_max_over_mean: r.loadMaxOverMean };
}

let lastFilled = -1;
function progress(policy: string, done: number, total: number, errors: number): void {
  if (a.quiet) return;
  const width = 30;
  const filled = Math.round((done / total) * width);
  // Redraw on a terminal every time; into a pipe or log only when the bar grows.
  if (!process.stderr.isTTY && filled === lastFilled && done !== total) return;
  lastFilled = done === total ? -1 : filled;
  process.stderr.write(`\r${policy.padEnd(13)} [${"#".repeat(filled)}${".".repeat(width - filled)}] ${done}/${total} errors ${errors}   `);
  if (done === total) process.stderr.write("\n");
}

/** Router flags for --admission / --engine-metrics (issue 13); none without them (the router's defaults). */
function issue13Args(): string[] {
  const out: string[] = [];
  if (a.admission !== undefined) {
    out.push("--busy-waiting", String(num("admission")), "--max-queue", "100000", "--queue-timeout", String(num("queue-timeout")));
  }
  if (a.admission !== undefined || a["engine-metrics"]) out.push("--engine-metrics-interval", "0.05");
  else out.push("--engine-metrics-interval", "0");
  return out;
}

function resultOf(outcomes: RequestOutcome[], wallMs: number, metricsText: string | undefined): PolicyResult {
  const ok = outcomes.filter((o) => o.ok);
  // Hit rate in full blocks, as the offline bounds count them.
  let cachedBlocks = 0;
  let promptBlocks = 0;
  for (const o of outcomes) {
    promptBlocks += fullBlockIds(trace[o.index]!).length;
    cachedBlocks += Math.floor(o.cachedTokens / 512);
  }
  const hit = promptBlocks ? cachedBlocks / promptBlocks : 0;
  const share = new Map<string, number>();
  for (const o of ok) if (o.worker) share.set(o.worker, (share.get(o.worker) ?? 0) + 1);
  const counts = [...share.values()];
  while (counts.length < engines) counts.push(0);
  const mean = ok.length / engines;
  const ttfts = ok.map((o) => o.ttftMs).filter((x) => Number.isFinite(x));
  const t = summarize(ttfts);
  const e = summarize(ok.map((o) => o.e2eMs));
  const h = metricsText ? readHistogram(metricsText, "switchyard_routing_overhead_seconds", { phase: "total" }) : undefined;
  return {
    hit_rate: hit,
    hit_rate_vs_ideal: ideal ? hit / ideal : 0,
    ttft_ms: { p50: t.p50, p90: t.p90, p99: t.p99 },
    e2e_ms: { p50: e.p50, p90: e.p90, p99: e.p99 },
    output_tokens_per_s: ok.reduce((s, o) => s + o.outputTokens, 0) / (wallMs / 1000),
    load_max_over_mean: mean ? Math.max(...counts) / mean : 0,
    router_overhead_us: h ? { p50: histogramQuantile(h.buckets, 0.5) * 1e6, p99: histogramQuantile(h.buckets, 0.99) * 1e6 } : { p50: NaN, p99: NaN },
    requests: outcomes.length,
    errors: outcomes.length - ok.length,
    rejected_429: outcomes.filter((o) => o.error?.startsWith("HTTP 429")).length,
    goodput_rps: ttfts.filter((x) => x <= num("ttft-slo-ms")).length / (wallMs / 1000),
    ttfts,
  };
}

const report: ReplayReport = {
  trace: traceName, requests: trace.length, engines, kv_blocks_per_engine: kvBlocks, block_size: blockSize, speedup,
  unique_blocks: unique, ideal_hit_rate: ideal, offline, policies: {},
};

for (const policy of policies) {
  const cluster = a.router
    ? { routerUrl: a.router, engineUrls: [], stop: async () => {} }
    : await startCluster({ engines, kvBlocks, blockSize, speedup, policy, timing, routerArgs: [...issue13Args(), ...a["router-arg"]!], quiet: !a.verbose });
  try {
    const { outcomes, wallMs } = await replay(trace, {
      routerUrl: cluster.routerUrl, speedup, maxOutputTokens: num("max-output-tokens"),
      onProgress: (d, t, e) => progress(policy, d, t, e),
    });
    const metrics = await fetch(`${cluster.routerUrl}/metrics`).then((r) => r.text()).catch(() => undefined);
    report.policies[policy] = resultOf(outcomes, wallMs, metrics);
    const firstError = outcomes.find((o) => !o.ok);
    if (firstError && !a.quiet) console.error(`${policy}: first error: ${firstError.error}`);
  } finally {
    await cluster.stop();
  }
}

console.log(formatTable(report));
if (a.json) {
  mkdirSync(dirname(a.json), { recursive: true });
  writeFileSync(a.json, toJson(report));
}
const svgPath = a.svg ?? (a.json ? a.json.replace(/\.json$/, "") + ".svg" : undefined);
if (svgPath) writeFileSync(svgPath, toSvg(report));
