/**
 * What the access line and tracing add to one request's work in the router, measured in one
 * process without sockets (`bun bench/observe/request-path.ts [--requests 4000] [--rounds 9]`):
 * the real app (test/unit/edge/harness.ts: the decision room, the proxy, the observation hooks)
 * in front of an in-process engine answering a 16-token SSE stream, five ways — observation
 * without the access line (metrics only, what --log-level warn leaves), with the JSON access
 * line through Bun's FileSink to a pipe this bench's parent drains, with spans exported over
 * OTLP/HTTP to a sink that reads and drops them, both, and both with one trace in ten recorded.
 * Each round's log lines and spans are written out inside its measured window. CPU (user + system, this process and
 * its threads) per request, rounds interleaved, medians; this is the cost without the noise of
 * sockets and of the other processes on a shared machine (bench/observe/cpu.ts has it with).
 */
import { createFormattedLogger } from "../../src/observe/logger.ts";
import { DecisionLog } from "../../src/observe/decision-log.ts";
import { otelTracer } from "../../src/observe/otel-tracer.ts";
import { RecentStats } from "../../src/observe/recent-stats.ts";
import { RequestMetrics } from "../../src/observe/request-metrics.ts";
import { RequestObservers } from "../../src/observe/request-observers.ts";
import type { Tracer } from "../../src/observe/tracing.ts";
import { stderrLogSink } from "../../src/runtime/bun.ts";
import { harness } from "../../test/unit/edge/harness.ts";

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}
const REQUESTS = arg("--requests", 4000);
const ROUNDS = arg("--rounds", 9);

const enc = new TextEncoder();
const SSE = enc.encode(
  Array.from({ length: 16 }, (_, i) => `data: {"choices":[{"text":"t${i}"}]}\n\n`).join("") +
    "data: [DONE]\n\n",
);
const prompt = "The router hashes every block of this prompt. ".repeat(23).slice(0, 1024);

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

async function child(): Promise<void> {
  const sink = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      await req.arrayBuffer();
      return new Response(new Uint8Array(0));
    },
  });
  const logSink = stderrLogSink();
  const make = (accessLines: boolean, tracer: Tracer | undefined, sampleRatio = 1) => {
    const log = createFormattedLogger({ level: "info", format: "json", write: logSink.write });
    const h = harness({
      workers: [
        { id: 1n, url: "http://w1:1" },
        { id: 2n, url: "http://w2:2" },
      ],
      blockSize: 16,
      log,
      fetch: async () => new Response(SSE, { headers: { "content-type": "text/event-stream" } }),
      observe: ({ metrics, registry, blockSize, router }) =>
        new RequestObservers({
          log,
          accessLines,
          metrics: new RequestMetrics(metrics.registry),
          tracer,
          sampleRatio,
          decisions: new DecisionLog({
            policy: router.pipeline.name,
            costs: router.pipeline.costs,
            blockSize,
            overlapWeight: router.scheduler.overlapScoreWeight,
          }),
          recent: new RecentStats(() => Date.now()),
          clock: () => performance.timeOrigin + performance.now(),
          blockSize,
          workerUrl: (id) => registry.get(id)?.url,
        }),
    });
    return async () => {
      const r = await h.request("/v1/completions", {
        json: { model: "base", prompt, max_tokens: 16, stream: true },
      });
      await r.arrayBuffer();
    };
  };
  const tracerA = otelTracer({
    endpoint: `http://127.0.0.1:${sink.port}`,
    serviceVersion: "bench",
  });
  const tracerB = otelTracer({
    endpoint: `http://127.0.0.1:${sink.port}`,
    serviceVersion: "bench",
  });
  const tracerC = otelTracer({
    endpoint: `http://127.0.0.1:${sink.port}`,
    serviceVersion: "bench",
  });
  const configs = [
    {
      name: "observed, no access line (metrics only)",
      run: make(false, undefined),
      tracer: undefined,
    },
    {
      name: "access line (JSON, FileSink to a pipe)",
      run: make(true, undefined),
      tracer: undefined,
    },
    { name: "tracing (OTLP/HTTP protobuf)", run: make(false, tracerA), tracer: tracerA },
    { name: "access line + tracing", run: make(true, tracerB), tracer: tracerB },
    {
      name: "access line + 10% of traces recorded",
      run: make(true, tracerC, 0.1),
      tracer: tracerC,
    },
  ];
  const cpu = () => {
    const u = process.cpuUsage();
    return u.user + u.system;
  };
  for (const c of configs) for (let i = 0; i < 500; i++) await c.run();
  for (const t of [tracerA, tracerB, tracerC]) await t.flush();
  const us: number[][] = configs.map(() => []);
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < configs.length; k++) {
      const i = (round + k) % configs.length;
      const t0 = cpu();
      for (let n = 0; n < REQUESTS; n++) await configs[i]!.run();
      // The round's spans are exported inside its window (they are otherwise batched, up to 1 s later).
      await configs[i]!.tracer?.flush();
      await logSink.flush();
      us[i]!.push((cpu() - t0) / REQUESTS);
    }
  }
  console.log(JSON.stringify(configs.map((c, i) => ({ name: c.name, us: us[i] }))));
  await logSink.flush();
  for (const t of [tracerA, tracerB, tracerC]) await t.shutdown();
  sink.stop(true);
}

async function parent(): Promise<void> {
  const p = Bun.spawn({
    cmd: [
      process.execPath,
      import.meta.path,
      "--child",
      "--requests",
      String(REQUESTS),
      "--rounds",
      String(ROUNDS),
    ],
    stdout: "pipe",
    stderr: "pipe",
  });
  const drained = (async () => {
    for await (const _ of p.stderr) {
      // drained, as a log collector would
    }
  })();
  const out = await new Response(p.stdout).text();
  await p.exited;
  await drained;
  const rows = JSON.parse(out.trim().split("\n").pop()!) as { name: string; us: number[] }[];
  const base = rows[0]!.us;
  console.log(
    `request path in one process: ${REQUESTS} streamed completions (1024-token prompt, 16 tokens) per config per round, ${ROUNDS} rounds interleaved`,
  );
  console.log(
    "| config | CPU µs / request (median) | vs metrics only, same round (median) |\n|---|---:|---:|",
  );
  for (const r of rows) {
    const d = median(r.us.map((x, i) => x - base[i]!));
    console.log(
      `| ${r.name} | ${median(r.us).toFixed(1)} | ${r === rows[0] ? "–" : `${d >= 0 ? "+" : ""}${d.toFixed(1)}`} |`,
    );
  }
}

if (process.argv.includes("--child")) await child();
else await parent();
