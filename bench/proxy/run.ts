/**
 * Proxy overhead (`bun run bench:proxy [--runs 5] [--seconds 5] [--connections 64]
 * [--max-tokens 16] [--prompt-tokens 1024] [--decode-ms 0] [--stream true|false] [--token-ids true|false]
 * [--router-args "--log-format json ..."] [--baseline-ref REF] [--targets direct,router,nginx]
 * [--profile DIR] [--json FILE] [--svg FILE]`): one simulated
 * engine with zero simulated time (so the proxy is the bottleneck), loaded with streaming
 * completions by wrk three ways in the same run: directly, through the router (policy kv,
 * full hash/match/schedule per request) and through nginx as a plain reverse proxy. Runs
 * are interleaved; medians are reported. With zero decode time an answer reaches the proxy
 * whole; `--decode-ms N` spaces the tokens N ms apart, so the streaming path is measured.
 * A fourth target, "floor" (floor.ts), is the least a proxy on Bun does: Bun.serve and the
 * router's socket client, nothing else; router − floor is the router's own work.
 * `--stream false` asks for whole (non-SSE) answers. `--router-args` adds flags to the router's
 * command line (to measure it with the access log, tracing, ...); `--profile DIR` runs the
 * router under Bun's CPU profiler, writes its .cpuprofile to DIR when it stops and prints where
 * its samples fell (profile-summary.ts). `--baseline-ref REF` also runs the router as it was at
 * git REF (extracted with git archive into a temp dir, this checkout's node_modules and ffi
 * build linked in) as one more target, "baseline", interleaved with the others: a change's
 * before and after measured in the same run. `--targets ...,observed` adds the router with the
 * access log and tracing on ("observed": `--log-level info --log-format json`, every request
 * traced to an OTLP/HTTP sink in this process that reads and drops each export; its stderr is a
 * pipe this process drains and drops, as a container's log shipper would), so both are judged
 * in the same run. `--targets router,nomigrate` adds the same router with stream migration off
 * (`--max-migrations 0`: nothing kept, nothing checked per event), so migration's cost on the
 * no-failure path is measured in the same run (issue target: router CPU per request ≤ 1.05 ×
 * nomigrate's). Targets: router ≥ 0.9 × nginx's requests/s and router CPU per request ≤ 2 ×
 * nginx's, judged on the medians (the plain router runs with `--log-level warn`: no access log).
 * `--targets router,nocheck --token-ids true` measures the cache check: "nocheck" is the router
 * with `--cache-check=false`; the check's cost is router − nocheck per round (both in the same
 * round, the order rotated), reported as the median of the rounds' differences (token ids: routed
 * exactly, so every answer is checked; a text prompt is routed approximately and not checked).
 * With nocheck among the targets the engine pushes its KV events to every router, so the check
 * sees a true view (without events it finds the view missing and routes that engine from the
 * router's own decisions: its verdict, not its cost).
 * `--svg FILE` draws the run (plot.ts: req/s and CPU per request per target, with the targets);
 * `bun bench/proxy/plot.ts RUN.json OUT.svg` re-draws a saved `--json`.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { summarize as summarizeProfile } from "./profile-summary.ts";
import {
  freePort,
  MAIN,
  ROOT,
  startCommand,
  startMain,
  stopAll,
  type Proc,
} from "../../test/support/processes.ts";
import { startNginx, type Nginx } from "./nginx.ts";
import { runWrk, type WrkResult } from "./wrk.ts";
import { startOtlpSink, type OtlpSink } from "../support/otlp-sink.ts";
import { proxySvg } from "./plot.ts";

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

const TARGETS = [
  "direct",
  "router",
  "nginx",
  "floor",
  "baseline",
  "observed",
  "nocheck",
  "nomigrate",
] as const;
type Target = (typeof TARGETS)[number];

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
  /** The prompt as token ids (routed exactly, so every answer's cached tokens are checked) instead of text (routed approximately). */
  tokenIds: boolean;
  /** Simulated decode time per output token (0: the whole answer at once; > 0: a real stream). */
  decodeMs: number;
  /** `stream` in the request body: SSE answers, or one JSON answer each. */
  stream: boolean;
  /** Extra router flags, split on spaces. */
  routerArgs: string[];
  /** Run the router under `bun --cpu-prof`, writing the profile here when it stops. */
  profile: string | undefined;
  /** Which targets to load (default direct, router, nginx, + baseline with a ref; `router` alone for a profile). */
  targets: Target[];
  /** A git ref whose router runs beside this one ("baseline"). */
  baselineRef: string | undefined;
  json: string | undefined;
  /** Where to draw the run as an SVG (plot.ts). */
  svg: string | undefined;
}

function parseArgs(argv: readonly string[]): Options {
  const o: Options = {
    runs: 5,
    seconds: 5,
    connections: 64,
    threads: 1,
    maxTokens: 16,
    promptTokens: 1024,
    tokenIds: false,
    decodeMs: 0,
    stream: true,
    routerArgs: [],
    profile: undefined,
    targets: ["direct", "router", "nginx", "floor"],
    baselineRef: undefined,
    json: undefined,
    svg: undefined,
  };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i]!, argv[i + 1]];
    if (value === undefined) throw new Error(`${flag}: needs a value`);
    switch (flag) {
      case "--runs":
        o.runs = Number(value);
        break;
      case "--seconds":
        o.seconds = Number(value);
        break;
      case "--connections":
        o.connections = Number(value);
        break;
      case "--threads":
        o.threads = Number(value);
        break;
      case "--max-tokens":
        o.maxTokens = Number(value);
        break;
      case "--prompt-tokens":
        o.promptTokens = Number(value);
        break;
      case "--decode-ms":
        o.decodeMs = Number(value);
        break;
      case "--stream":
        o.stream = value !== "false";
        break;
      case "--token-ids":
        o.tokenIds = value !== "false";
        break;
      case "--router-args":
        o.routerArgs = value.split(" ").filter((x) => x !== "");
        break;
      case "--profile":
        o.profile = value;
        break;
      case "--targets":
        o.targets = value.split(",") as Target[];
        break;
      case "--baseline-ref":
        o.baselineRef = value;
        break;
      case "--json":
        o.json = value;
        break;
      case "--svg":
        o.svg = value;
        break;
      default:
        throw new Error(`unknown flag ${flag}`);
    }
  }
  if (o.baselineRef !== undefined && !o.targets.includes("baseline")) o.targets.push("baseline");
  return o;
}

/** This checkout's tree at `ref` in a temp dir, runnable: node_modules and the FFI build linked from here. */
function extractRef(ref: string): string {
  const dir = mkdtempSync(join(tmpdir(), "switchyard-baseline-"));
  const archive = Bun.spawnSync(["git", "-C", ROOT, "archive", "--format=tar", ref]);
  if (archive.exitCode !== 0) throw new Error(`git archive ${ref}: ${archive.stderr.toString()}`);
  const untar = Bun.spawnSync(["tar", "-x", "-C", dir], { stdin: archive.stdout });
  if (untar.exitCode !== 0) throw new Error(`tar: ${untar.stderr.toString()}`);
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  mkdirSync(join(dir, "ffi"), { recursive: true });
  if (existsSync(join(ROOT, "ffi", "build")))
    symlinkSync(join(ROOT, "ffi", "build"), join(dir, "ffi", "build"));
  return dir;
}

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
  const text = "The router hashes every block of this prompt. "
    .repeat(Math.ceil(o.promptTokens / 47))
    .slice(0, o.promptTokens);
  const prompt = o.tokenIds ? Array.from(text, (c) => c.charCodeAt(0)) : text;
  const body = JSON.stringify({
    model: "switchyard-sim",
    prompt,
    max_tokens: o.maxTokens,
    stream: o.stream,
  });

  let engine: Proc | undefined;
  let router: Proc | undefined;
  let nginx: Nginx | undefined;
  let baseline: Proc | undefined;
  let floor: Proc | undefined;
  let observed: Proc | undefined;
  let nocheck: Proc | undefined;
  let nomigrate: Proc | undefined;
  let sink: OtlpSink | undefined;
  let baselineDir: string | undefined;
  try {
    // Every router's port, known before the engine starts: with "nocheck" among the targets, the
    // engine pushes its KV events to each router (--router-url), as a fleet's engines do. Without
    // events the cache check rightly finds the engine's view missing (blind, no_events) and routes
    // it from the router's own decisions, which is not the check's cost but its verdict.
    const ports = {
      router: freePort(),
      baseline: freePort(),
      observed: freePort(),
      nocheck: freePort(),
      nomigrate: freePort(),
    };
    const pushTo = o.targets.includes("nocheck")
      ? (["router", "baseline", "observed", "nocheck", "nomigrate"] as const)
          .filter((t) => o.targets.includes(t))
          .flatMap((t) => ["--router-url", `http://127.0.0.1:${ports[t]}`])
      : [];
    // The routers take pushed events only with the credential they share with the engines.
    const eventsToken = pushTo.length > 0 ? ["--events-token", "bench-proxy-events"] : [];
    engine = await startMain([
      "mocker",
      "--port",
      "0",
      "--prefill-us-per-token",
      "0",
      "--prefill-overhead-ms",
      "0",
      "--decode-ms-per-step",
      String(o.decodeMs),
      "--max-concurrency",
      "4096",
      "--kv-blocks",
      "65536",
      ...pushTo,
      ...eventsToken,
    ]);
    const engineUrl = String(engine.info.url);
    const routerPort = ports.router;
    const routerCommand = [
      "serve",
      "--port",
      String(routerPort),
      "--host",
      "127.0.0.1",
      "--worker",
      engineUrl,
      "--log-level",
      "warn",
      "--health-interval",
      "10",
      ...eventsToken,
      ...o.routerArgs,
    ];
    router =
      o.profile === undefined
        ? await startMain(routerCommand)
        : await startCommand(
            [process.execPath, "--cpu-prof", `--cpu-prof-dir=${o.profile}`, MAIN, ...routerCommand],
            "router (profiled)",
          );
    // Only when asked for: a before/after run of the router alone needs no nginx installed.
    if (o.targets.includes("nginx")) nginx = await startNginx(engineUrl);
    if (o.baselineRef !== undefined) {
      baselineDir = extractRef(o.baselineRef);
      const cmd = [...routerCommand];
      cmd[cmd.indexOf("--port") + 1] = String(ports.baseline);
      baseline = await startCommand(
        [process.execPath, join(baselineDir, "src", "main.ts"), ...cmd],
        `router at ${o.baselineRef}`,
      );
    }
    if (o.targets.includes("floor"))
      floor = await startCommand(
        [process.execPath, join(import.meta.dir, "floor.ts"), "--upstream", engineUrl],
        "floor proxy",
      );
    if (o.targets.includes("observed")) {
      sink = startOtlpSink();
      const cmd = [
        ...routerCommand,
        "--log-level",
        "info",
        "--log-format",
        "json",
        "--otlp-endpoint",
        sink.url,
        "--otlp-sample-ratio",
        "1",
      ];
      cmd[cmd.indexOf("--port") + 1] = String(ports.observed);
      observed = await startLoggingRouter(cmd);
    }
    if (o.targets.includes("nocheck")) {
      const cmd = [...routerCommand, "--cache-check=false"];
      cmd[cmd.indexOf("--port") + 1] = String(ports.nocheck);
      nocheck = await startMain(cmd);
    }
    if (o.targets.includes("nomigrate")) {
      const cmd = [...routerCommand, "--max-migrations", "0"];
      cmd[cmd.indexOf("--port") + 1] = String(ports.nomigrate);
      nomigrate = await startMain(cmd);
    }
    const urls: Record<Target, string> = {
      floor: floor ? `${floor.info.url}/v1/completions` : "",
      direct: `${engineUrl}/v1/completions`,
      router: `${router.info.url}/v1/completions`,
      nginx: nginx !== undefined ? `${nginx.url}/v1/completions` : "",
      baseline: baseline ? `${baseline.info.url}/v1/completions` : "",
      observed: observed ? `${observed.info.url}/v1/completions` : "",
      nocheck: nocheck ? `${nocheck.info.url}/v1/completions` : "",
      nomigrate: nomigrate ? `${nomigrate.info.url}/v1/completions` : "",
    };
    const proxyPid: Record<Target, number | undefined> = {
      direct: undefined,
      router: router.pid,
      nginx: nginx?.pid,
      floor: floor?.pid,
      baseline: baseline?.pid,
      observed: observed?.pid,
      nocheck: nocheck?.pid,
      nomigrate: nomigrate?.pid,
    };
    const enginePid = engine.pid;
    const load = async (t: Target, seconds: number): Promise<Run> => {
      const p0 = proxyPid[t] === undefined ? undefined : cpuSeconds(proxyPid[t]!);
      const e0 = cpuSeconds(enginePid);
      const r = await runWrk({
        url: urls[t],
        body,
        connections: o.connections,
        threads: o.threads,
        seconds,
      });
      const p1 = proxyPid[t] === undefined ? undefined : cpuSeconds(proxyPid[t]!);
      const e1 = cpuSeconds(enginePid);
      const perReq = (a: number | undefined, b: number | undefined) =>
        a === undefined || b === undefined || r.requests === 0
          ? undefined
          : ((b - a) / r.requests) * 1e6;
      return { ...r, proxyCpuUs: perReq(p0, p1), engineCpuUs: perReq(e0, e1) };
    };

    const targets = o.targets;
    console.error(
      `warm-up (1 s each), then ${o.runs} interleaved runs of ${o.seconds} s x ${targets.length} targets`,
    );
    for (const t of targets) await load(t, 1);
    const results: Record<Target, Run[]> = {
      direct: [],
      router: [],
      nginx: [],
      floor: [],
      baseline: [],
      observed: [],
      nocheck: [],
      nomigrate: [],
    };
    for (let run = 0; run < o.runs; run++) {
      // Rotate the order so no target always runs on a warmer (or hotter) machine.
      for (let k = 0; k < targets.length; k++) {
        const t = targets[(run + k) % targets.length]!;
        const r = await load(t, o.seconds);
        results[t].push(r);
        console.error(
          `  run ${run + 1} ${t.padEnd(6)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50Ms.toFixed(2)} ms  p99 ${r.p99Ms.toFixed(2)} ms  proxy cpu ${fmtUs(r.proxyCpuUs)}  engine cpu ${fmtUs(r.engineCpuUs)}`,
        );
      }
    }
    // A target not loaded (--targets) has no runs: its figures are NaN, and so are ratios with it.
    const none: Summary = {
      target: "direct",
      runs: [],
      rps: NaN,
      p50Ms: NaN,
      p99Ms: NaN,
      proxyCpuUs: undefined,
      engineCpuUs: undefined,
      errors: 0,
      non2xx: 0,
    };
    const s = Object.fromEntries(
      TARGETS.map((t) => [
        t,
        results[t].length > 0 ? summarize(t, results[t]) : { ...none, target: t },
      ]),
    ) as Record<Target, Summary>;
    const report = {
      bench: "proxy",
      date: new Date().toISOString(),
      cpus: navigator.hardwareConcurrency,
      options: { ...o, json: undefined, svg: undefined },
      summary: targets.map((t) => ({ ...s[t], runs: undefined })),
      ratios: {
        routerVsNginxThroughput: s.router.rps / s.nginx.rps,
        routerVsNginxCpu:
          s.router.proxyCpuUs !== undefined && s.nginx.proxyCpuUs !== undefined
            ? s.router.proxyCpuUs / s.nginx.proxyCpuUs
            : NaN,
        routerVsDirectThroughput: s.router.rps / s.direct.rps,
        nginxVsDirectThroughput: s.nginx.rps / s.direct.rps,
        routerVsBaselineThroughput: s.router.rps / s.baseline.rps,
        routerVsBaselineCpu:
          s.router.proxyCpuUs !== undefined && s.baseline.proxyCpuUs !== undefined
            ? s.router.proxyCpuUs / s.baseline.proxyCpuUs
            : NaN,
        observedVsNginxThroughput: s.observed.rps / s.nginx.rps,
        observedVsNginxCpu:
          s.observed.proxyCpuUs !== undefined && s.nginx.proxyCpuUs !== undefined
            ? s.observed.proxyCpuUs / s.nginx.proxyCpuUs
            : NaN,
        routerVsNoMigrateThroughput: s.router.rps / s.nomigrate.rps,
        routerVsNoMigrateCpu:
          s.router.proxyCpuUs !== undefined && s.nomigrate.proxyCpuUs !== undefined
            ? s.router.proxyCpuUs / s.nomigrate.proxyCpuUs
            : NaN,
        routerAddedP50Ms: s.router.p50Ms - s.direct.p50Ms,
        routerAddedP99Ms: s.router.p99Ms - s.direct.p99Ms,
        nginxAddedP50Ms: s.nginx.p50Ms - s.direct.p50Ms,
        nginxAddedP99Ms: s.nginx.p99Ms - s.direct.p99Ms,
      },
      cacheCheck: checkCost(results.router, results.nocheck),
      otlpSink: sink ? { exports: sink.exports(), bytes: sink.bytes() } : undefined,
      runs: results,
    };
    printTable(report.summary, report.ratios, o);
    const c = report.cacheCheck;
    if (c !== undefined)
      console.log(
        `cache check (router − nocheck, paired per round): ${c.us.toFixed(1)} µs/req median = ${(100 * c.share).toFixed(1)}% of nocheck's median CPU per request (target ≤ 5%: ${c.share <= 0.05 ? "met" : "missed"}); rounds: ${c.rounds.map((x) => x.toFixed(1)).join(" ")} µs`,
      );
    if (o.json) {
      writeFileSync(o.json, JSON.stringify(report, null, 2));
      console.log(`wrote ${o.json}`);
    }
    if (o.svg) {
      writeFileSync(o.svg, proxySvg(report));
      console.log(`wrote ${o.svg}`);
    }
  } finally {
    await nginx?.stop();
    await stopAll([router, engine, baseline, floor, observed, nocheck, nomigrate]);
    sink?.stop();
    if (baselineDir !== undefined) rmSync(baselineDir, { recursive: true, force: true });
  }
  if (o.profile !== undefined) {
    const files = readdirSync(o.profile)
      .filter((f) => f.endsWith(".cpuprofile"))
      .sort();
    if (files.length > 0)
      console.log(
        `\nrouter profile (${o.profile}/${files.at(-1)}):\n${summarizeProfile(`${o.profile}/${files.at(-1)}`, 30)}`,
      );
  }
}

/**
 * A router whose stderr (the access log) is drained and dropped, not kept: startMain keeps every
 * line for failure messages, which would grow this process by the whole log and tax its CPU.
 */
async function startLoggingRouter(args: readonly string[]): Promise<Proc> {
  const proc = Bun.spawn({
    cmd: [process.execPath, MAIN, ...args],
    cwd: ROOT,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  void (async () => {
    for await (const _chunk of proc.stderr) {
      // dropped, as a log shipper that has forwarded it
    }
  })().catch(() => {});
  const reader = proc.stdout.getReader();
  const dec = new TextDecoder();
  let out = "";
  while (!/^\{.*\}$/m.test(out)) {
    const r = await reader.read();
    if (r.done)
      throw new Error(`observed router exited before printing its address (${proc.exitCode})`);
    out += dec.decode(r.value, { stream: true });
  }
  void (async () => {
    while (!(await reader.read()).done) {
      // keep stdout drained too
    }
  })().catch(() => {});
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

/**
 * The cache check's CPU per request: router (check on) − nocheck (off), paired per round (both ran
 * in it, a few seconds apart: on a shared machine the load drifts more between rounds than this
 * cost), the median of the rounds, and that as a share of nocheck's median. Undefined without both.
 */
function checkCost(
  on: readonly Run[],
  off: readonly Run[],
): { us: number; share: number; rounds: number[] } | undefined {
  const rounds: number[] = [];
  for (let i = 0; i < Math.min(on.length, off.length); i++) {
    const a = on[i]!.proxyCpuUs;
    const b = off[i]!.proxyCpuUs;
    if (a !== undefined && b !== undefined) rounds.push(a - b);
  }
  const offCpu = off.map((r) => r.proxyCpuUs).filter((x): x is number => x !== undefined);
  if (rounds.length === 0 || offCpu.length === 0) return undefined;
  const us = median(rounds);
  return { us, share: us / median(offCpu), rounds };
}

function fmtUs(x: number | undefined): string {
  return x === undefined ? "n/a" : `${x.toFixed(0)} µs/req`;
}

function printTable(
  rows: readonly Omit<Summary, "runs">[],
  r: Record<string, number>,
  o: Options,
): void {
  const decode = o.decodeMs > 0 ? `, ${o.decodeMs} ms per token` : "";
  const extra = o.routerArgs.length > 0 ? `; router flags: ${o.routerArgs.join(" ")}` : "";
  console.log(
    `\nproxy overhead: ${o.stream ? "streaming" : "whole-answer"} completions, ${o.promptTokens}-token prompt, ${o.maxTokens} tokens out${decode}, wrk -c${o.connections} -t${o.threads}, median of ${o.runs} x ${o.seconds} s${extra}`,
  );
  console.log(
    "| target | req/s | p50 ms | p99 ms | proxy CPU µs/req | engine CPU µs/req | socket errors | non-2xx |",
  );
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
  const us = (x: number | undefined) => (x === undefined ? "-" : x.toFixed(0));
  for (const x of rows) {
    console.log(
      `| ${x.target} | ${x.rps.toFixed(0)} | ${x.p50Ms.toFixed(2)} | ${x.p99Ms.toFixed(2)} | ${us(x.proxyCpuUs)} | ${us(x.engineCpuUs)} | ${x.errors} | ${x.non2xx} |`,
    );
  }
  const router = rows.find((x) => x.target === "router");
  const nginx = rows.find((x) => x.target === "nginx");
  const cpuRatio =
    router?.proxyCpuUs !== undefined && nginx?.proxyCpuUs !== undefined
      ? router.proxyCpuUs / nginx.proxyCpuUs
      : undefined;
  const verdict = (met: boolean) => (met ? "met" : "missed");
  if (Number.isFinite(r.routerVsNginxThroughput))
    console.log(
      `\nrouter / nginx throughput: ${r.routerVsNginxThroughput!.toFixed(2)} (target ≥ 0.9: ${verdict(r.routerVsNginxThroughput! >= 0.9)})`,
    );
  if (cpuRatio !== undefined)
    console.log(
      `router / nginx CPU per request: ${cpuRatio.toFixed(2)} (target ≤ 2: ${verdict(cpuRatio <= 2)})`,
    );
  if (Number.isFinite(r.observedVsNginxThroughput)) {
    const cpu = Number.isFinite(r.observedVsNginxCpu) ? r.observedVsNginxCpu!.toFixed(2) : "n/a";
    console.log(
      `observed (access log + every request traced) / nginx: throughput ${r.observedVsNginxThroughput!.toFixed(2)} (≥ 0.9: ${verdict(r.observedVsNginxThroughput! >= 0.9)}), CPU per request ${cpu} (≤ 2: ${verdict(r.observedVsNginxCpu! <= 2)})`,
    );
  }
  if (Number.isFinite(r.routerVsNoMigrateThroughput)) {
    const cpu = r.routerVsNoMigrateCpu!;
    console.log(
      `router / nomigrate (--max-migrations 0): throughput ${r.routerVsNoMigrateThroughput!.toFixed(3)}, CPU per request ${Number.isFinite(cpu) ? cpu.toFixed(3) : "n/a"} (≤ 1.05: ${verdict(cpu <= 1.05)})`,
    );
  }
  if (Number.isFinite(r.routerVsBaselineThroughput)) {
    console.log(
      `router / baseline (${o.baselineRef}): throughput ${r.routerVsBaselineThroughput!.toFixed(3)}, CPU per request ${r.routerVsBaselineCpu!.toFixed(3)}`,
    );
  }
  console.log(
    `router / direct throughput: ${r.routerVsDirectThroughput!.toFixed(2)};  nginx / direct: ${r.nginxVsDirectThroughput!.toFixed(2)}`,
  );
  console.log(
    `added latency vs direct: router p50 +${r.routerAddedP50Ms!.toFixed(2)} ms, p99 +${r.routerAddedP99Ms!.toFixed(2)} ms; nginx p50 +${r.nginxAddedP50Ms!.toFixed(2)} ms, p99 +${r.nginxAddedP99Ms!.toFixed(2)} ms`,
  );
}

await main();
