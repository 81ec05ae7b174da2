/**
 * The hand-written registry (src/observe/registry.ts) against prom-client 15 on the two things
 * the router does with metrics (`bun bench/observe/metrics-cost.ts [--iters N]`):
 *  - on every request: a labelled counter increment and a labelled histogram observation, in
 *    ns per call, labels resolved each call (as the request path does) and, for prom-client,
 *    also through a child resolved once (`labels(...)`);
 *  - on every scrape: rendering a fleet of 64 workers × 20 models: per-(worker, model)
 *    request counters (1 280 series), per-(model, route) duration histograms (20 × 2 × 14
 *    buckets), per-(worker, rank) load gauges; ms per scrape.
 * Best of 9 rounds, ours and prom-client interleaved; the machine is shared.
 */
import client from "prom-client";
import { MetricsRegistry } from "../../src/observe/registry.ts";

const ITERS = process.argv.includes("--iters")
  ? Number(process.argv[process.argv.indexOf("--iters") + 1])
  : 200_000;
const WORKERS = 64;
const MODELS = 20;
const ROUTES = ["/v1/completions", "/v1/chat/completions"];
const BUCKETS = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300];
const workers = Array.from({ length: WORKERS }, (_, i) =>
  String(8976625718357559853n + BigInt(i) * 7919n),
);
const models = Array.from({ length: MODELS }, (_, i) => `model-${i}`);

function best(fn: () => void, rounds = 5): number {
  let b = Infinity;
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    fn();
    b = Math.min(b, performance.now() - t0);
  }
  return b;
}

async function bestAsync(fn: () => Promise<unknown>, rounds = 5): Promise<number> {
  let b = Infinity;
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    await fn();
    b = Math.min(b, performance.now() - t0);
  }
  return b;
}

// ---- ours
const ours = new MetricsRegistry();
const oc = ours.counter("switchyard_requests_total", "requests", ["worker", "model"]);
const oh = ours.histogram(
  "switchyard_request_duration_seconds",
  "duration",
  ["model", "route"],
  BUCKETS,
);
const og = ours.gauge("switchyard_active_prefill_tokens", "load", ["worker", "dp_rank"]);
// ---- prom-client
const reg = new client.Registry();
const pc = new client.Counter({
  name: "switchyard_requests_total",
  help: "requests",
  labelNames: ["worker", "model"],
  registers: [reg],
});
const ph = new client.Histogram({
  name: "switchyard_request_duration_seconds",
  help: "duration",
  labelNames: ["model", "route"],
  buckets: BUCKETS,
  registers: [reg],
});
const pg = new client.Gauge({
  name: "switchyard_active_prefill_tokens",
  help: "load",
  labelNames: ["worker", "dp_rank"],
  registers: [reg],
});

// The fleet's series exist (a scrape renders them all).
for (const w of workers) {
  og.set([w, "0"], 1);
  pg.set({ worker: w, dp_rank: "0" }, 1);
  for (const m of models) {
    oc.inc([w, m]);
    pc.inc({ worker: w, model: m });
  }
}
for (const m of models)
  for (const r of ROUTES) {
    oh.observe([m, r], 0.3);
    ph.observe({ model: m, route: r }, 0.3);
  }

const lab = (i: number) => [workers[i % WORKERS]!, models[i % MODELS]!] as const;
const ns = (ms: number) => ((ms * 1e6) / ITERS).toFixed(0);

/** Best ns per call of `a` and `b`, their rounds interleaved so neither always runs on a quieter machine. */
function pair(a: (() => void) | undefined, b: () => void, rounds = 9): [string, string] {
  let ba = Infinity;
  let bb = Infinity;
  for (let r = 0; r < rounds; r++) {
    if (a !== undefined) {
      const t0 = performance.now();
      a();
      ba = Math.min(ba, performance.now() - t0);
    }
    const t1 = performance.now();
    b();
    bb = Math.min(bb, performance.now() - t1);
  }
  return [a === undefined ? "-" : ns(ba), ns(bb)];
}

const rows: [string, string, string][] = [];
rows.push([
  "counter inc, labels each call",
  ...pair(
    () => {
      for (let i = 0; i < ITERS; i++) oc.inc(lab(i) as unknown as string[]);
    },
    () => {
      for (let i = 0; i < ITERS; i++) {
        const [w, m] = lab(i);
        pc.inc({ worker: w, model: m });
      }
    },
  ),
]);
const child = pc.labels(workers[0]!, models[0]!);
rows.push([
  "counter inc, label set resolved once",
  ...pair(undefined, () => {
    for (let i = 0; i < ITERS; i++) child.inc();
  }),
]);
rows.push([
  "histogram observe, labels each call",
  ...pair(
    () => {
      for (let i = 0; i < ITERS; i++)
        oh.observe([models[i % MODELS]!, ROUTES[i & 1]!], (i % 1000) / 100);
    },
    () => {
      for (let i = 0; i < ITERS; i++)
        ph.observe({ model: models[i % MODELS]!, route: ROUTES[i & 1]! }, (i % 1000) / 100);
    },
  ),
]);
const os = oh.series([models[0]!, ROUTES[0]!]);
const phc = ph.labels(models[0]!, ROUTES[0]!);
rows.push([
  "histogram observe, label set resolved once",
  ...pair(
    () => {
      for (let i = 0; i < ITERS; i++) os.observe((i % 1000) / 100);
    },
    () => {
      for (let i = 0; i < ITERS; i++) phc.observe((i % 1000) / 100);
    },
  ),
]);

let oursScrape = Infinity;
let promScrape = Infinity;
for (let r = 0; r < 20; r++) {
  oursScrape = Math.min(
    oursScrape,
    best(() => void ours.render(), 1),
  );
  promScrape = Math.min(promScrape, await bestAsync(() => reg.metrics(), 1));
}
const size = (s: string) => `${(s.length / 1024).toFixed(0)} KiB`;

console.log(
  `metrics: ${WORKERS} workers x ${MODELS} models, ${ITERS} calls per row, best of 9 interleaved rounds (ns per call; scrape: best of 20)`,
);
console.log("| operation | ours | prom-client 15 |\n|---|---:|---:|");
for (const [what, a, b] of rows)
  console.log(`| ${what} | ${a === "-" ? "-" : `${a} ns`} | ${b === "-" ? "-" : `${b} ns`} |`);
console.log(
  `| scrape (render ${size(ours.render())} / ${size(await reg.metrics())}) | ${oursScrape.toFixed(2)} ms | ${promScrape.toFixed(2)} ms |`,
);
