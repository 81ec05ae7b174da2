/**
 * `bun run bench:replay`: replay a trace (a Mooncake file or a generated shape, `gen:chat`,
 * `gen:agentic`, `gen:rag`) against a fresh simulated cluster under each routing policy, and
 * compare them with each other and with offline bounds. `--suite quick|full` runs the issue 14
 * table instead (suite.ts); `--sweep` adds a grid of kv's own knobs. See bench/replay/README.md for the
 * timing model, the defaults and how they were chosen.
 */
import { parseArgs } from "node:util";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { runCell } from "./cell.ts";
import { formatTable, toJson, toSvg } from "./report.ts";
import { parseCellList, runSuite, SUITES, type SuiteName } from "./suite.ts";
import { traceOf } from "./trace-spec.ts";
import { DEFAULT_WARMUP_PER_ROUTER } from "./warmup.ts";

const ROOT = join(import.meta.dir, "..", "..");
const { values: a } = parseArgs({
  options: {
    // The Mooncake traces sit beside the checkout in the project's workspace; elsewhere pass --trace.
    trace: {
      type: "string",
      default: join(ROOT, "..", "shared", "traces", "conversation_trace.jsonl"),
    },
    requests: { type: "string", default: "1000" },
    speedup: { type: "string", default: "20" },
    engines: { type: "string", default: "8" },
    "kv-blocks": { type: "string" },
    "kv-fraction": { type: "string", default: "0.5" },
    "block-size": { type: "string", default: "512" },
    policies: { type: "string", default: "kv,approx,round-robin,random,least-loaded" },
    seed: { type: "string", default: "1" },
    router: { type: "string", multiple: true, default: [] },
    "engine-url": { type: "string", multiple: true, default: [] },
    // With --router: the external routers' process ids (their CPU time in /proc), and whether to
    // send the trace's session id as X-Session-ID (a peer's session-affinity logic needs it).
    "router-pid": { type: "string", multiple: true, default: [] },
    "session-header": { type: "boolean", default: false },
    "max-output-tokens": { type: "string", default: "32" },
    "prefill-us-per-token": { type: "string", default: "200" },
    "decode-ms-per-step": { type: "string", default: "20" },
    "decode-batch-factor": { type: "string", default: "0.02" },
    "max-concurrency": { type: "string", default: "64" },
    "router-arg": { type: "string", multiple: true, default: [] },
    // Passed to every simulated engine, e.g. --engine-arg=--request-log --engine-arg=FILE (race-misses.ts reads it).
    "engine-arg": { type: "string", multiple: true, default: [] },
    // Issue 14: several routers over a shared Redis, engine restarts, load scaling, text prompts.
    routers: { type: "string", default: "1" },
    "engine-restarts": { type: "string", default: "0" },
    "arrival-scale": { type: "string", default: "1" },
    "prompt-format": { type: "string", default: "tokens" },
    suite: { type: "string" },
    "suite-requests": { type: "string" },
    "suite-speedup": { type: "string" },
    "suite-cells": { type: "string" },
    "suite-policies": { type: "string" },
    sweep: { type: "boolean", default: false },
    "sweep-credits": { type: "string", default: "0,8,32,128" },
    "sweep-wait-factors": { type: "string", default: "0,1.5,2,3" },
    // Issue 13: admission past saturation. N = a rank is busy when its engine reports more
    // than N waiting requests (engine metrics scraped every 50 ms); busy everywhere = queue.
    admission: { type: "string" },
    "queue-timeout": { type: "string", default: "30" },
    // Scrape the engines' /metrics (every 50 ms) without acting on them: the cost of the scrape alone.
    "engine-metrics": { type: "boolean", default: false },
    // Goodput counts completed requests whose TTFT (client side, queue wait included) is within this.
    "ttft-slo-ms": { type: "string", default: "1000" },
    // Requests per router before each policy's replay, not measured (warmup.ts); 0: none.
    warmup: { type: "string", default: String(DEFAULT_WARMUP_PER_ROUTER) },
    // Issue 15: 8 aggregated engines vs 2 prefill + 6 decode (bench/replay/disagg.ts).
    disagg: { type: "boolean", default: false },
    "disagg-min-prefill-tokens": { type: "string", default: "0,2048" },
    "disagg-split": { type: "string", default: "2:6" },
    "kv-block-bytes": { type: "string", default: "262144" },
    json: { type: "string" },
    svg: { type: "string" },
    quiet: { type: "boolean", default: false },
    verbose: { type: "boolean", default: false },
  },
});

const num = (name: keyof typeof a) => {
  const v = Number(a[name]);
  if (!Number.isFinite(v) || v < 0)
    throw new Error(`--${String(name)} must be a non-negative number, got ${a[name]}`);
  return v;
};

let lastFilled = -1;
function progress(policy: string, done: number, total: number, errors: number): void {
  if (a.quiet) return;
  const width = 30;
  const filled = Math.round((done / total) * width);
  // Redraw on a terminal every time; into a pipe or log only when the bar grows.
  if (!process.stderr.isTTY && filled === lastFilled && done !== total) return;
  lastFilled = done === total ? -1 : filled;
  process.stderr.write(
    `\r${policy.padEnd(13)} [${"#".repeat(filled)}${".".repeat(width - filled)}] ${done}/${total} errors ${errors}   `,
  );
  if (done === total) process.stderr.write("\n");
}

/** Router flags for --admission / --engine-metrics (issue 13); none without them (the router's defaults). */
function issue13Args(): string[] {
  const out: string[] = [];
  if (a.admission !== undefined) {
    out.push(
      "--busy-waiting",
      String(num("admission")),
      "--max-queue",
      "100000",
      "--queue-timeout",
      String(num("queue-timeout")),
    );
  }
  if (a.admission !== undefined || a["engine-metrics"])
    out.push("--engine-metrics-interval", "0.05");
  else out.push("--engine-metrics-interval", "0");
  return out;
}

/** kv plus a grid of its own knobs, each as a policy entry cell.ts understands. */
function sweepEntries(): string[] {
  const credits = a["sweep-credits"]!.split(",").map(Number);
  const factors = a["sweep-wait-factors"]!.split(",").map(Number);
  const out: string[] = [];
  for (const c of credits)
    for (const w of factors) out.push(`kv+overlap-credit=${c}+prefill-wait-factor=${w}`);
  return out;
}

if (a.disagg) {
  const { runDisaggBench, formatDisaggTable } = await import("./disagg.ts");
  const r = await runDisaggBench({
    tracePath: a.trace!,
    requests: num("requests"),
    speedup: num("speedup"),
    blockSize: num("block-size"),
    kvBlocks: a["kv-blocks"] ? num("kv-blocks") : 4096,
    kvBlockBytes: num("kv-block-bytes"),
    maxOutputTokens: num("max-output-tokens"),
    prefillUsPerToken: num("prefill-us-per-token"),
    decodeMsPerStep: num("decode-ms-per-step"),
    decodeBatchFactor: num("decode-batch-factor"),
    minPrefillTokens: a["disagg-min-prefill-tokens"]!.split(",").map(Number),
    quiet: !a.verbose,
    splits: a["disagg-split"]!.split(",").map((x) => x.split(":").map(Number) as [number, number]),
  });
  console.log(formatDisaggTable(r));
  if (a.json) {
    mkdirSync(dirname(a.json), { recursive: true });
    writeFileSync(a.json, JSON.stringify(r, null, 2));
  }
  process.exit(0);
}

if (a.suite !== undefined) {
  if (!(SUITES as readonly string[]).includes(a.suite))
    throw new Error(`--suite must be one of ${SUITES.join(", ")}`);
  await runSuite(a.suite as SuiteName, {
    json: a.json,
    quiet: a.quiet,
    verbose: a.verbose,
    onProgress: progress,
    warmupPerRouter: num("warmup"),
    requests: a["suite-requests"] ? num("suite-requests") : undefined,
    speedup: a["suite-speedup"] ? num("suite-speedup") : undefined,
    cells: a["suite-cells"] !== undefined ? parseCellList(a["suite-cells"]) : undefined,
    policies: a["suite-policies"]?.split(","),
    routerArgs: a["router-arg"],
    engineArgs: a["engine-arg"],
  });
  process.exit(0);
}

const promptFormat = a["prompt-format"];
if (promptFormat !== "tokens" && promptFormat !== "text")
  throw new Error(`--prompt-format must be tokens or text, got ${promptFormat}`);
const { trace, name } = traceOf(a.trace!, num("requests"), num("seed"));
if (trace.length === 0) throw new Error(`no requests in ${a.trace}`);
const policies = a
  .policies!.split(",")
  .map((s) => s.trim())
  .filter(Boolean);
if (a.sweep) policies.push(...sweepEntries());

const report = await runCell({
  trace,
  traceName: name,
  engines: num("engines"),
  kvBlocks: a["kv-blocks"] ? num("kv-blocks") : undefined,
  kvFraction: num("kv-fraction"),
  blockSize: num("block-size"),
  speedup: num("speedup"),
  timing: {
    prefillUsPerToken: num("prefill-us-per-token"),
    decodeMsPerStep: num("decode-ms-per-step"),
    decodeBatchFactor: num("decode-batch-factor"),
    maxConcurrency: num("max-concurrency"),
  },
  policies,
  seed: num("seed"),
  maxOutputTokens: num("max-output-tokens"),
  routers: num("routers"),
  engineRestarts: num("engine-restarts"),
  arrivalScale: num("arrival-scale"),
  promptFormat,
  routerArgs: [...issue13Args(), ...a["router-arg"]!],
  engineArgs: a["engine-arg"]!,
  externalRouter: a.router!.length
    ? {
        routerUrls: a.router!,
        engineUrls: a["engine-url"]!,
        routerPids: a["router-pid"]!.map(Number),
        sessionHeader: a["session-header"]!,
      }
    : undefined,
  ttftSloMs: num("ttft-slo-ms"),
  warmupPerRouter: num("warmup"),
  verbose: a.verbose!,
  onProgress: progress,
  onError: (p, m) => !a.quiet && console.error(`${p}: first error: ${m}`),
});

console.log(formatTable(report));
if (a.json) {
  mkdirSync(dirname(a.json), { recursive: true });
  writeFileSync(a.json, toJson(report));
}
const svgPath = a.svg ?? (a.json ? a.json.replace(/\.json$/, "") + ".svg" : undefined);
if (svgPath) writeFileSync(svgPath, toSvg(report));
