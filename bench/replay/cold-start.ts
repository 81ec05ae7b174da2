/**
 * `bun bench/replay/cold-start.ts [--trace gen:chat] [--before 200] [--after 100] [--runs 3]
 *   [--engines 4] [--speedup 10] [--json FILE]`: a router restarted in front of a fleet that kept
 * running, with and without the engines' own prefill speed (vLLM's prefill histograms, which the
 * simulated engine exports; the router reads them at every --engine-metrics-interval scrape).
 *
 * Per run: a fresh cluster (kv, one router) replays the trace's first `before` requests, so the
 * engines have served traffic; that router is stopped and a new one started on the same port
 * (the engines push their KV events there), with --engine-metrics-interval 0.2 ("reports") or 0
 * ("none"); it replays the next `after` requests with its access log on, and the predictor's
 * error |predicted ÷ observed − 1| of its first 25 and of all `after` requests is read from
 * that log. The two arms alternate in every run, each on its own cluster; medians over the runs.
 * What it shows: the error of a new router's first predictions, before it has fitted its own line.
 */
import { spawn, type Subprocess } from "bun";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { textTable } from "../support/text-table.ts";
import { startCluster, waitHealthy } from "./cluster.ts";
import { samplesOf, summarize, type ErrorSummary } from "./pred-err-phases.ts";
import { replay } from "./replay.ts";
import { median } from "./stats.ts";
import { SUITE_TIMING } from "./suite.ts";
import { TRACE_BLOCK_TOKENS, uniqueFullBlocks } from "./trace.ts";
import { traceOf } from "./trace-spec.ts";

const MAIN = join(import.meta.dir, "..", "..", "src", "main.ts");
const BLOCK_SIZE = 512;
const FIRST = 25;

const { values: a } = parseArgs({
  options: {
    trace: { type: "string", default: "gen:chat" },
    before: { type: "string", default: "200" },
    after: { type: "string", default: "100" },
    runs: { type: "string", default: "3" },
    engines: { type: "string", default: "4" },
    speedup: { type: "string", default: "10" },
    json: { type: "string" },
  },
});
const count = (name: "before" | "after" | "runs" | "engines" | "speedup") => {
  const v = Number(a[name]);
  if (!(v > 0)) throw new Error(`--${name} must be a positive number, got "${a[name]}"`);
  return v;
};
const before = count("before");
const after = count("after");
const runs = count("runs");
const engines = count("engines");
const speedup = count("speedup");
const { trace, name } = traceOf(a.trace!, before + after, 1);
if (trace.length < before + after)
  throw new Error(
    `${a.trace} has ${trace.length} requests, fewer than --before + --after (${before + after})`,
  );
const kvBlocks = Math.ceil(
  (uniqueFullBlocks(trace) * 0.5 * (TRACE_BLOCK_TOKENS / BLOCK_SIZE)) / engines,
);

type Arm = "reports" | "none";
interface ArmRun {
  first: ErrorSummary;
  all: ErrorSummary;
  speedSource: string;
}

/** The text of a process's stdout and stderr, collected until it exits. */
function collect(p: Subprocess<"ignore", "pipe", "pipe">): Promise<string> {
  return Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]).then(
    ([o, e]) => o + e,
  );
}

async function runArm(arm: Arm): Promise<ArmRun> {
  const cluster = await startCluster({
    engines,
    kvBlocks,
    blockSize: BLOCK_SIZE,
    speedup,
    policy: "kv",
    timing: SUITE_TIMING,
    routerArgs: ["--engine-metrics-interval", "0"],
  });
  try {
    const options = { speedup, maxOutputTokens: 8 };
    await replay(trace.slice(0, before), { ...options, routerUrls: cluster.routerUrls });
    // The first router goes; a new one takes its port (the engines push their KV events there).
    process.kill(cluster.routerPids[0]!, "SIGTERM");
    const port = new URL(cluster.routerUrl).port;
    const deadline = performance.now() + 10_000;
    while (
      await fetch(`${cluster.routerUrl}/livez`).then(
        () => true,
        () => false,
      )
    ) {
      if (performance.now() > deadline)
        throw new Error("the first router did not stop within 10 s");
      await Bun.sleep(20);
    }
    const router = spawn({
      cmd: [
        process.execPath,
        MAIN,
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        port,
        "--policy",
        "kv",
        "--block-size",
        String(BLOCK_SIZE),
        ...cluster.engineUrls.flatMap((u) => ["--worker", u]),
        "--log-format",
        "json",
        "--engine-metrics-interval",
        arm === "reports" ? "0.2" : "0",
      ],
      stdout: "pipe",
      stderr: "pipe",
    });
    const log = collect(router);
    try {
      await waitHealthy(cluster.routerUrl, 20_000, router);
      // What the first request will be predicted with: the first scrape has landed, or there is none.
      const speedSource = await firstSpeedSource(cluster.routerUrl, arm === "reports" ? 5_000 : 0);
      await replay(trace.slice(before, before + after), {
        ...options,
        routerUrls: cluster.routerUrls,
      });
      router.kill("SIGTERM");
      const samples = samplesOf(await log);
      return { first: summarize(samples.slice(0, FIRST)), all: summarize(samples), speedSource };
    } finally {
      router.kill("SIGKILL");
    }
  } finally {
    await cluster.stop();
  }
}

/** Every rank's `source` in GET /v1/workers, once they are all "engine" or `waitMs` has passed. */
async function firstSpeedSource(url: string, waitMs: number): Promise<string> {
  const end = performance.now() + waitMs;
  for (;;) {
    const body = (await (await fetch(`${url}/v1/workers`)).json()) as {
      workers: { prefill_speed: { source: string }[] }[];
    };
    const sources = [
      ...new Set(body.workers.flatMap((w) => w.prefill_speed.map((s) => s.source))),
    ].sort();
    if ((sources.length === 1 && sources[0] === "engine") || performance.now() >= end)
      return sources.join("+");
    await Bun.sleep(20);
  }
}

const results: Record<Arm, ArmRun[]> = { reports: [], none: [] };
for (let r = 0; r < runs; r++) {
  for (const arm of (r % 2 === 0 ? ["reports", "none"] : ["none", "reports"]) as Arm[]) {
    const x = await runArm(arm);
    results[arm].push(x);
    console.error(
      `run ${r + 1} ${arm}: first ${FIRST} p50 ${x.first.p50.toFixed(2)} p90 ${x.first.p90.toFixed(2)} ratio ${x.first.ratio.toFixed(2)}; all ${after} p90 ${x.all.p90.toFixed(2)} (speeds at the first request: ${x.speedSource})`,
    );
  }
}

const f = (x: number) => x.toFixed(2);
const rows = (["reports", "none"] as Arm[]).map((arm) => {
  const rs = results[arm];
  return [
    arm,
    rs.map((x) => x.speedSource).join(", "),
    `${f(median(rs.map((x) => x.first.p50)))} / ${f(median(rs.map((x) => x.first.p90)))}`,
    f(median(rs.map((x) => x.first.ratio))),
    `${f(median(rs.map((x) => x.all.p50)))} / ${f(median(rs.map((x) => x.all.p90)))}`,
    rs.map((x) => f(x.first.p90)).join(", "),
  ];
});
console.log(
  `cold start of a router in front of a running fleet: ${name}, ${engines} engines, ${before} requests before, ${after} after, medians of ${runs} run(s)`,
);
console.log(
  textTable(
    [
      "engine speeds",
      "source at first request",
      `first ${FIRST} err p50 / p90`,
      `first ${FIRST} pred ÷ obs`,
      `all ${after} err p50 / p90`,
      `first ${FIRST} p90 (runs)`,
    ],
    rows,
  ),
);
if (a.json) {
  mkdirSync(dirname(a.json), { recursive: true });
  writeFileSync(
    a.json,
    JSON.stringify({ trace: name, engines, before, after, first: FIRST, runs: results }, null, 2),
  );
}
