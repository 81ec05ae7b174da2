/**
 * Proxy overhead (`bun run bench:proxy [--runs 5] [--seconds 5] [--connections 64]
 * [--max-tokens 16] [--prompt-tokens 1024] [--decode-ms 0] [--json FILE]`): one simulated
 * engine with zero simulated time (so the proxy is the bottleneck), loaded with streaming
 * completions by wrk three ways in the same run: directly, through the router (policy kv,
 * full hash/match/schedule per request) and through nginx as a plain reverse proxy. Runs
 * are interleaved; medians are reported. With zero decode time an answer reaches the proxy
 * whole; `--decode-ms N` spaces the tokens N ms apart, so the streaming path is measured.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { freePort, startMain, stopAll, type Proc } from "../../test/support/processes.ts";
import { startNginx, type Nginx } from "./nginx.ts";
import { runWrk, type WrkResult } from "./wrk.ts";

/** CPU seconds (user + system) a process has used, from /proc (Linux); undefined elsewhere. */
function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // utime and stime are fields 14 and 15 of the whole line (11 and 12 after the name).
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}
/** USER_HZ: 100 on every Linux we run on. */
const CLOCK_TICKS = 100;

interface Run extends WrkResult {
  /** CPU time of the proxy process per request, µs (direct: the engine's). */
  proxyCpuUs: number | undefined;
  engineCpuUs: number | undefined;
}

interface Options {
  runs: number;
  seconds: number;
  connections: number;
  threads: number;
  maxTokens: number;
  promptTokens: number;
  /** Simulated decode time per output token (0: the whole answer at once; > 0: a real stream). */
  decodeMs: number;
  json: string | undefined;
}

function parseArgs(argv: readonly string[]): Options {
  const o: Options = { runs: 5, seconds: 5, connections: 64, threads: 1, maxTokens: 16, promptTokens: 1024, decodeMs: 0, json: undefined };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i]!, argv[i + 1]];
    if (value === undefined) throw new Error(`${flag}: needs a value`);
    switch (flag) {
      case "--runs": o.runs = Number(value); break;
      case "--seconds": o.seconds = Number(value); break;
      case "--connections": o.connections = Number(value); break;
      case "--threads": o.threads = Number(value); break;
      case "--max-tokens": o.maxTokens = Number(value); break;
      case "--prompt-tokens": o.promptTokens = Number(value); break;
      case "--decode-ms": o.decodeMs = Number(value); break;
      case "--json": o.json = value; break;
      default: throw new Error(`unknown flag ${flag}`);
    }
  }
  return o;
}

const TARGETS = ["direct", "router", "nginx"] as const;
type Target = (typeof TARGETS)[number];

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

interface Summary {
  target: Target;
  runs: Run[];
  rps: number;
  p50Ms: number;
  p99Ms: number;
  proxyCpuUs: number | undefined;
  engineCpuUs: number | undefined;
  errors: number;
  non2xx: number;
}

function medianOf(xs: readonly (number | undefined)[]): number | undefined {
  return xs.every((x) => x !== undefined) ? median(xs as number[]) : undefined;
}

function summarize(target: Target, runs: Run[]): Summary {
  return {
    target,
    runs,
    rps: median(runs.map((r) => r.rps)),
    p50Ms: median(runs.map((r) => r.p50Ms)),
    p99Ms: median(runs.map((r) => r.p99Ms)),
    proxyCpuUs: medianOf(runs.map((r) => r.proxyCpuUs)),
    engineCpuUs: medianOf(runs.map((r) => r.engineCpuUs)),
    errors: runs.reduce((a, r) => a + r.errors, 0),
    non2xx: runs.reduce((a, r) => a + r.non2xx, 0),
  };
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  // Byte tokenizer: one character = one token.
  const prompt = "The router hashes every block of this prompt. ".repeat(Math.ceil(o.promptTokens / 47)).slice(0, o.promptTokens);
  const body = JSON.stringify({ model: "switchyard-sim", prompt, max_tokens: o.maxTokens, stream: true });

  let engine: Proc | undefined;
  let router: Proc | undefined;
  let nginx: Nginx | undefined;
  try {
    engine = await startMain([
      "mocker", "--port", "0", "--prefill-us-per-token", "0", "--prefill-overhead-ms", "0", "--decode-ms-per-step", String(o.decodeMs),
      "--max-concurrency", "4096", "--kv-blocks", "65536",
    ]);
    const engineUrl = String(engine.info.url);
    const routerPort = freePort();
    router = await startMain([
      "serve", "--port", String(routerPort), "--host", "127.0.0.1", "--worker", engineUrl, "--log-level", "warn", "--health-interval", "10",
    ]);
    nginx = await startNginx(engineUrl);
    const urls: Record<Target, string> = {
      direct: `${engineUrl}/v1/completions`,
      router: `${router.info.url}/v1/completions`,
      nginx: `${nginx.url}/v1/completions`,
    };
    const proxyPid: Record<Target, number | undefined> = { direct: undefined, router: router.pid, nginx: nginx.pid };
    const enginePid = engine.pid;
    const load = async (t: Target, seconds: number): Promise<Run> => {
      const p0 = proxyPid[t] === undefined ? undefined : cpuSeconds(proxyPid[t]!);
      const e0 = cpuSeconds(enginePid);
      const r = await runWrk({ url: urls[t], body, connections: o.connections, threads: o.threads, seconds });
      const p1 = proxyPid[t] === undefined ? undefined : cpuSeconds(proxyPid[t]!);
      const e1 = cpuSeconds(enginePid);
      const perReq = (a: number | undefined, b: number | undefined) =>
        a === undefined || b === undefined || r.requests === 0 ? undefined : ((b - a) / r.requests) * 1e6;
      return { ...r, proxyCpuUs: perReq(p0, p1), engineCpuUs: perReq(e0, e1) };
    };

    console.error(`warm-up (1 s each), then ${o.runs} interleaved runs of ${o.seconds} s x ${TARGETS.length} targets`);
    for (const t of TARGETS) await load(t, 1);
    const results: Record<Target, Run[]> = { direct: [], router: [], nginx: [] };
    for (let run = 0; run < o.runs; run++) {
      // Rotate the order so no target always runs on a warmer (or hotter) machine.
      for (let k = 0; k < TARGETS.length; k++) {
        const t = TARGETS[(run + k) % TARGETS.length]!;
        const r = await load(t, o.seconds);
        results[t].push(r);
        console.error(
          `  run ${run + 1} ${t.padEnd(6)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50Ms.toFixed(2)} ms  p99 ${r.p99Ms.toFixed(2)} ms  proxy cpu ${fmtUs(r.proxyCpuUs)}  engine cpu ${fmtUs(r.engineCpuUs)}`,
        );
      }
    }
    const s = Object.fromEntries(TARGETS.map((t) => [t, summarize(t, results[t])])) as Record<Target, Summary>;
    const report = {
      bench: "proxy",
      date: new Date().toISOString(),
      cpus: navigator.hardwareConcurrency,
      options: { ...o, json: undefined },
      summary: TARGETS.map((t) => ({ ...s[t], runs: undefined })),
      ratios: {
        routerVsNginxThroughput: s.router.rps / s.nginx.rps,
        routerVsDirectThroughput: s.router.rps / s.direct.rps,
        nginxVsDirectThroughput: s.nginx.rps / s.direct.rps,
        routerAddedP50Ms: s.router.p50Ms - s.direct.p50Ms,
        routerAddedP99Ms: s.router.p99Ms - s.direct.p99Ms,
        nginxAddedP50Ms: s.nginx.p50Ms - s.direct.p50Ms,
        nginxAddedP99Ms: s.nginx.p99Ms - s.direct.p99Ms,
      },
      runs: results,
    };
    printTable(report.summary, report.ratios, o);
    if (o.json) {
      writeFileSync(o.json, JSON.stringify(report, null, 2));
      console.log(`wrote ${o.json}`);
    }
  } finally {
    await nginx?.stop();
    await stopAll([router, engine]);
  }
}

function fmtUs(x: number | undefined): string {
  return x === undefined ? "n/a" : `${x.toFixed(0)} µs/req`;
}

function printTable(rows: readonly Omit<Summary, "runs">[], r: Record<string, number>, o: Options): void {
  const decode = o.decodeMs > 0 ? `, ${o.decodeMs} ms per token` : "";
  console.log(`\nproxy overhead: streaming completions, ${o.promptTokens}-token prompt, ${o.maxTokens} tokens out${decode}, wrk -c${o.connections} -t${o.threads}, median of ${o.runs} x ${o.seconds} s`);
  console.log("| target | req/s | p50 ms | p99 ms | proxy CPU µs/req | engine CPU µs/req | socket errors | non-2xx |");
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
  const us = (x: number | undefined) => (x === undefined ? "-" : x.toFixed(0));
  for (const x of rows) {
    console.log(
      `| ${x.target} | ${x.rps.toFixed(0)} | ${x.p50Ms.toFixed(2)} | ${x.p99Ms.toFixed(2)} | ${us(x.proxyCpuUs)} | ${us(x.engineCpuUs)} | ${x.errors} | ${x.non2xx} |`,
    );
  }
  console.log(`\nrouter / nginx throughput: ${r.routerVsNginxThroughput!.toFixed(2)} (target >= 0.80)`);
  console.log(`router / direct throughput: ${r.routerVsDirectThroughput!.toFixed(2)};  nginx / direct: ${r.nginxVsDirectThroughput!.toFixed(2)}`);
  console.log(`added latency vs direct: router p50 +${r.routerAddedP50Ms!.toFixed(2)} ms, p99 +${r.routerAddedP99Ms!.toFixed(2)} ms; nginx p50 +${r.nginxAddedP50Ms!.toFixed(2)} ms, p99 +${r.nginxAddedP99Ms!.toFixed(2)} ms`);
}

await main();
