/**
 * Router CPU per request with the access log and tracing on and off, in the same run
 * (`bun bench/observe/cpu.ts [--runs 5] [--requests 3000] [--concurrency 32] [--prompt-tokens 1024] [--max-tokens 16] [--json FILE]`).
 * One simulated engine with zero simulated time (the router is the bottleneck), five routers
 * in front of it — nothing (--log-level warn), the access log (--log-format json), tracing
 * (--otlp-endpoint to a sink in this process, which reads and drops each export), both, and
 * both with one new trace in ten recorded (--otlp-sample-ratio 0.1) — each with its stderr a
 * pipe this process drains, as a container's is (`--stderr null`: /dev/null instead, to tell
 * the cost of the pipe's reader on a small machine from the router's own). Each run sends the same
 * streamed completions to every router in turn (the order rotates), then waits out the span
 * exporter's delay before reading the router's CPU (user + system, /proc), so the batched
 * exports are counted. Medians over the runs; the machine is shared, so compare within a run.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { MAIN, startMain, stopAll, type Proc } from "../../test/support/processes.ts";
import { startOtlpSink } from "../support/otlp-sink.ts";

/** A router whose stderr goes to /dev/null: its address line read from stdout, stopped by PID. */
async function startQuietRouter(args: readonly string[]): Promise<Proc> {
  const proc = Bun.spawn({
    cmd: [process.execPath, MAIN, ...args],
    stdin: "ignore",
    stdout: "pipe",
    stderr: "ignore",
  });
  const reader = proc.stdout.getReader();
  const dec = new TextDecoder();
  let out = "";
  while (!/^\{.*\}$/m.test(out)) {
    const r = await reader.read();
    if (r.done) throw new Error(`router exited before printing its address (${proc.exitCode})`);
    out += dec.decode(r.value, { stream: true });
  }
  const info = JSON.parse(out.split("\n").find((l) => l.startsWith("{"))!) as Record<
    string,
    unknown
  >;
  const stop = async () => {
    proc.kill("SIGTERM");
    await proc.exited;
  };
  return { proc: proc as unknown as Proc["proc"], pid: proc.pid, info, output: () => "", stop };
}

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}
const RUNS = arg("--runs", 5);
const REQUESTS = arg("--requests", 3000);
const CONCURRENCY = arg("--concurrency", 32);
const PROMPT_TOKENS = arg("--prompt-tokens", 1024);
const MAX_TOKENS = arg("--max-tokens", 16);
const JSON_OUT = process.argv.includes("--json")
  ? process.argv[process.argv.indexOf("--json") + 1]
  : undefined;
const STDERR_NULL =
  process.argv.includes("--stderr") &&
  process.argv[process.argv.indexOf("--stderr") + 1] === "null";
/** The router's span exporter sends at most 1 s after a span ends (otel-tracer.ts); wait that out. */
const SETTLE_MS = 1_500;
const CLOCK_TICKS = 100;

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / CLOCK_TICKS;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const CONFIGS = [
  { name: "off", args: ["--log-level", "warn"] },
  { name: "access log", args: ["--log-format", "json"] },
  { name: "tracing", args: ["--log-level", "warn", "--otlp-endpoint", "SINK"] },
  { name: "access log + tracing", args: ["--log-format", "json", "--otlp-endpoint", "SINK"] },
  {
    name: "access log + 10% traced",
    args: ["--log-format", "json", "--otlp-endpoint", "SINK", "--otlp-sample-ratio", "0.1"],
  },
] as const;

async function main(): Promise<void> {
  const sink = startOtlpSink();
  const sinkUrl = sink.url;
  const prompt = "The router hashes every block of this prompt. "
    .repeat(Math.ceil(PROMPT_TOKENS / 47))
    .slice(0, PROMPT_TOKENS);
  const body = JSON.stringify({
    model: "switchyard-sim",
    prompt,
    max_tokens: MAX_TOKENS,
    stream: true,
  });
  let engine: Proc | undefined;
  const routers: Proc[] = [];
  try {
    engine = await startMain([
      "mocker",
      "--port",
      "0",
      "--prefill-us-per-token",
      "0",
      "--prefill-overhead-ms",
      "0",
      "--decode-ms-per-step",
      "0",
      "--max-concurrency",
      "4096",
      "--kv-blocks",
      "65536",
    ]);
    for (const c of CONFIGS) {
      const args = c.args.map((a) => (a === "SINK" ? sinkUrl : a));
      const serve = [
        "serve",
        "--port",
        "0",
        "--worker",
        String(engine.info.url),
        "--health-interval",
        "10",
        ...args,
      ];
      routers.push(STDERR_NULL ? await startQuietRouter(serve) : await startMain(serve));
    }
    const load = async (url: string, n: number): Promise<number> => {
      let sent = 0;
      let failed = 0;
      const client = async () => {
        while (sent < n) {
          sent++;
          const r = await fetch(`${url}/v1/completions`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body,
          });
          await r.arrayBuffer();
          if (r.status !== 200) failed++;
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, client));
      return failed;
    };
    console.error(`warm-up: ${Math.min(500, REQUESTS)} requests to each router`);
    for (const r of routers) await load(String(r.info.url), Math.min(500, REQUESTS));
    await Bun.sleep(SETTLE_MS);
    const us: number[][] = CONFIGS.map(() => []);
    for (let run = 0; run < RUNS; run++) {
      for (let k = 0; k < CONFIGS.length; k++) {
        const i = (run + k) % CONFIGS.length;
        const r = routers[i]!;
        const c0 = cpuSeconds(r.pid);
        const t0 = performance.now();
        const failed = await load(String(r.info.url), REQUESTS);
        const wall = performance.now() - t0;
        await Bun.sleep(SETTLE_MS);
        const perReq = ((cpuSeconds(r.pid) - c0) / REQUESTS) * 1e6;
        us[i]!.push(perReq);
        console.error(
          `  run ${run + 1} ${CONFIGS[i]!.name.padEnd(21)} ${perReq.toFixed(1).padStart(7)} µs CPU/req  ${((REQUESTS / wall) * 1000).toFixed(0)} req/s${failed ? `  ${failed} failed` : ""}`,
        );
      }
    }
    const med = us.map(median);
    // The machine is shared: its load drifts between runs more than these costs differ, so
    // each configuration is also compared with "off" measured in the same run (paired).
    const paired = us.map((xs) => median(xs.map((x, run) => x - us[0]![run]!)));
    const sign = (x: number) => `${x >= 0 ? "+" : ""}${x.toFixed(1)}`;
    console.log(
      `\nrouter CPU per request (user + system, /proc), streamed completions: ${PROMPT_TOKENS}-token prompt, ${MAX_TOKENS} tokens out, ${CONCURRENCY} clients, ${REQUESTS} requests per router per run, ${RUNS} runs, routers' stderr ${STDERR_NULL ? "to /dev/null" : "a pipe read by this process"}`,
    );
    console.log(
      "| router | CPU µs / request (median) | vs off, same run (median of the differences) | runs |\n|---|---:|---:|---|",
    );
    CONFIGS.forEach((c, i) => {
      console.log(
        `| ${c.name} | ${med[i]!.toFixed(1)} | ${i === 0 ? "–" : `${sign(paired[i]!)} µs (${sign((paired[i]! / med[0]!) * 100)}%)`} | ${us[i]!.map((x) => x.toFixed(0)).join(", ")} |`,
      );
    });
    console.log(
      `\nspan exports received: ${sink.exports()} (${(sink.bytes() / 1024).toFixed(0)} KiB)`,
    );
    if (JSON_OUT) {
      writeFileSync(
        JSON_OUT,
        JSON.stringify(
          {
            bench: "observe-cpu",
            date: new Date().toISOString(),
            options: { RUNS, REQUESTS, CONCURRENCY, PROMPT_TOKENS, MAX_TOKENS },
            configs: CONFIGS.map((c, i) => ({
              name: c.name,
              medianUs: med[i],
              pairedDeltaUs: paired[i],
              runsUs: us[i],
            })),
          },
          null,
          2,
        ),
      );
    }
  } finally {
    await stopAll([...routers, engine]);
    sink.stop();
  }
}

await main();
