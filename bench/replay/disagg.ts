/**
 * `bun run bench:replay --disagg`: the Mooncake trace against 8 aggregated engines, then
 * against 2 prefill + 6 decode engines behind `--disagg vllm` (always split, then
 * conditionally: prompts whose uncached part on the decode engine is under a threshold stay
 * there). Every engine runs `--prefill-stalls-decode` (a prefill holds back its rank's
 * decode steps, as on a GPU without chunked prefill), so aggregated engines pay for
 * interference and decode engines do not. KV blocks really move between the processes
 * through the native library's shared-memory pools; every block is checked on the decode side.
 *
 * Reports TTFT p50/p90 and inter-token latency p50/p99 (client side, every gap between two
 * streamed tokens), blocks and GB moved, the copies' GB/s against a memcpy of the same machine,
 * and the mismatch count (must be 0). Simulated time runs `--speedup` times faster; the copies
 * run in real time (so their share of TTFT is `speedup` times what it would be unscaled).
 */
import { spawn, type Subprocess } from "bun";
import { join } from "node:path";
import { freePorts } from "../../test/support/processes.ts";
import { waitHealthy } from "./cluster.ts";
import { percentile } from "./stats.ts";
import { loadTrace, promptTokens, type TraceRequest } from "./trace.ts";

const ROOT = join(import.meta.dir, "..", "..");
const MAIN = join(ROOT, "src", "main.ts");

export interface DisaggBenchOptions {
  readonly tracePath: string;
  readonly requests: number;
  readonly speedup: number;
  readonly blockSize: number;
  readonly kvBlocks: number;
  readonly kvBlockBytes: number;
  readonly maxOutputTokens: number;
  readonly prefillUsPerToken: number;
  readonly decodeMsPerStep: number;
  readonly decodeBatchFactor: number;
  /** Thresholds (tokens) of the conditional runs; 0 = always disaggregate. */
  readonly minPrefillTokens: readonly number[];
  /** Prefill:decode splits of the disaggregated runs (default [[2, 6]]); the aggregated run has their sum. */
  readonly splits?: readonly (readonly [number, number])[];
  readonly quiet?: boolean;
}

interface Setup {
  readonly name: string;
  readonly prefill: number;
  readonly decode: number;
  readonly aggregated: number;
  readonly minPrefillTokens: number;
}

export interface DisaggRow {
  readonly setup: string;
  readonly ok: number;
  readonly errors: number;
  readonly ttftP50Ms: number;
  readonly ttftP90Ms: number;
  readonly itlP50Ms: number;
  readonly itlP99Ms: number;
  readonly disaggregatedShare: number;
  readonly blocks: number;
  readonly gb: number;
  readonly copyGBps: number;
  readonly mismatches: number;
}

interface Outcome {
  ok: boolean;
  ttft: number;
  gaps: number[];
  disaggregated: boolean;
}

async function send(url: string, r: TraceRequest, maxOut: number): Promise<Outcome> {
  const t0 = performance.now();
  try {
    const res = await fetch(`${url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        prompt: Array.from(promptTokens(r)),
        max_tokens: Math.max(2, Math.min(r.outputLength, maxOut)),
        stream: true,
      }),
    });
    if (!res.ok || !res.body) {
      await res.text();
      return { ok: false, ttft: NaN, gaps: [], disaggregated: false };
    }
    const disaggregated = res.headers.get("x-switchyard-prefill-worker") !== null;
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let ttft = NaN;
    let last = NaN;
    const gaps: number[] = [];
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const n = (dec.decode(value, { stream: true }).match(/^data: (?!\[DONE\])/gm) ?? []).length;
      if (n === 0) continue;
      const now = performance.now();
      if (Number.isNaN(ttft)) ttft = now - t0;
      else gaps.push(now - last);
      last = now;
    }
    return { ok: true, ttft, gaps, disaggregated };
  } catch {
    return { ok: false, ttft: NaN, gaps: [], disaggregated: false };
  }
}

async function metricSum(urls: readonly string[], name: string): Promise<number> {
  let s = 0;
  for (const u of urls) {
    const text = await (await fetch(`${u}/metrics`)).text();
    for (const l of text.split("\n"))
      if (l.startsWith(`${name} `)) s += Number(l.slice(name.length + 1));
  }
  return s;
}

async function runSetup(
  s: Setup,
  trace: readonly TraceRequest[],
  o: DisaggBenchOptions,
): Promise<DisaggRow> {
  const n = s.prefill + s.decode + s.aggregated;
  const ports = freePorts(n + 1);
  const routerUrl = `http://127.0.0.1:${ports[0]}`;
  const procs: Subprocess[] = [];
  const stdio = o.quiet === false ? "inherit" : "ignore";
  const roles = [
    ...Array(s.prefill).fill("prefill"),
    ...Array(s.decode).fill("decode"),
    ...Array(s.aggregated).fill("both"),
  ] as string[];
  const urls = ports.slice(1).map((p) => `http://127.0.0.1:${p}`);
  try {
    for (const [i, role] of roles.entries()) {
      procs.push(
        spawn({
          cmd: [
            process.execPath,
            MAIN,
            "mocker",
            "--port",
            String(ports[i + 1]),
            "--router-url",
            routerUrl,
            "--block-size",
            String(o.blockSize),
            "--kv-blocks",
            String(o.kvBlocks),
            "--speedup",
            String(o.speedup),
            "--prefill-us-per-token",
            String(o.prefillUsPerToken),
            "--decode-ms-per-step",
            String(o.decodeMsPerStep),
            "--decode-batch-factor",
            String(o.decodeBatchFactor),
            "--seed",
            String(i + 1),
            "--prefill-stalls-decode",
            "--role",
            role,
            "--disagg",
            "vllm",
            "--kv-block-bytes",
            String(o.kvBlockBytes),
            "--kv-pool-blocks",
            "256",
          ],
          stdout: stdio,
          stderr: stdio,
        }),
      );
    }
    await Promise.all(urls.map((u, i) => waitHealthy(u, 30_000, procs[i])));
    const workerFlags = roles.flatMap((role, i) => [
      role === "prefill" ? "--prefill-worker" : role === "decode" ? "--decode-worker" : "--worker",
      urls[i]!,
    ]);
    const router = spawn({
      cmd: [
        process.execPath,
        MAIN,
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        String(ports[0]),
        "--block-size",
        String(o.blockSize),
        ...workerFlags,
        ...(s.prefill > 0
          ? ["--disagg", "vllm", "--disagg-min-prefill-tokens", String(s.minPrefillTokens)]
          : []),
      ],
      stdout: stdio,
      stderr: stdio,
    });
    procs.push(router);
    await waitHealthy(routerUrl, 30_000, router);

    const t0 = trace[0]?.timestamp ?? 0;
    const start = performance.now();
    const pending: Promise<Outcome>[] = [];
    for (const r of trace) {
      const wait = (r.timestamp - t0) / o.speedup - (performance.now() - start);
      if (wait > 1) await Bun.sleep(wait);
      pending.push(send(routerUrl, r, o.maxOutputTokens));
    }
    const out = await Promise.all(pending);
    const ok = out.filter((x) => x.ok);
    const ttft = ok.map((x) => x.ttft).sort((a, b) => a - b);
    const gaps = ok.flatMap((x) => x.gaps).sort((a, b) => a - b);
    const decodeUrls = urls.filter((_, i) => roles[i] === "decode");
    const bytes = await metricSum(decodeUrls, "mocker_kv_transfer_bytes_total");
    const secs = await metricSum(decodeUrls, "mocker_kv_transfer_copy_seconds_total");
    return {
      setup: s.name,
      ok: ok.length,
      errors: out.length - ok.length,
      ttftP50Ms: percentile(ttft, 50),
      ttftP90Ms: percentile(ttft, 90),
      itlP50Ms: percentile(gaps, 50),
      itlP99Ms: percentile(gaps, 99),
      disaggregatedShare: ok.filter((x) => x.disaggregated).length / Math.max(1, ok.length),
      blocks: await metricSum(decodeUrls, "mocker_kv_transfer_blocks_total"),
      gb: bytes / 1e9,
      copyGBps: secs > 0 ? bytes / secs / 1e9 : NaN,
      mismatches: await metricSum(decodeUrls, "mocker_kv_transfer_mismatched_blocks_total"),
    };
  } finally {
    for (const p of procs) p.kill("SIGTERM");
    await Promise.all(
      procs.map((p) => Promise.race([p.exited, Bun.sleep(5000).then(() => p.kill("SIGKILL"))])),
    );
  }
}

/** memcpy GB/s of this machine: TypedArray.set over 256 MiB, median of 5. */
export function memcpyGBps(): number {
  const a = new Uint8Array(256 << 20).fill(7);
  const b = new Uint8Array(256 << 20);
  const runs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    b.set(a);
    runs.push(a.length / ((performance.now() - t) / 1000) / 1e9);
  }
  runs.sort((x, y) => x - y);
  return runs[2]!;
}

export async function runDisaggBench(
  o: DisaggBenchOptions,
): Promise<{ rows: DisaggRow[]; memcpyGBps: number; options: DisaggBenchOptions }> {
  const trace = loadTrace(o.tracePath, o.requests);
  const splits = o.splits ?? [[2, 6]];
  const total = splits[0]![0] + splits[0]![1];
  const setups: Setup[] = [
    { name: `${total} aggregated`, prefill: 0, decode: 0, aggregated: total, minPrefillTokens: 0 },
    ...splits.flatMap(([p, d]) =>
      o.minPrefillTokens.map((m) => ({
        name: m === 0 ? `${p}P+${d}D always` : `${p}P+${d}D min ${m}`,
        prefill: p,
        decode: d,
        aggregated: 0,
        minPrefillTokens: m,
      })),
    ),
  ];
  const rows: DisaggRow[] = [];
  for (const s of setups) {
    if (!o.quiet) process.stderr.write(`${s.name} ...\n`);
    rows.push(await runSetup(s, trace, o));
  }
  return { rows, memcpyGBps: memcpyGBps(), options: o };
}

export function formatDisaggTable(r: { rows: DisaggRow[]; memcpyGBps: number }): string {
  const f = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "-");
  const head =
    "setup                 ok  err  TTFT p50  TTFT p90  ITL p50  ITL p99  split   blocks     GB  copy GB/s  mismatches";
  const lines = r.rows.map((x) =>
    [
      x.setup.padEnd(20),
      String(x.ok).padStart(4),
      String(x.errors).padStart(4),
      f(x.ttftP50Ms).padStart(9),
      f(x.ttftP90Ms).padStart(9),
      f(x.itlP50Ms, 2).padStart(8),
      f(x.itlP99Ms, 2).padStart(8),
      `${f(x.disaggregatedShare * 100, 0)}%`.padStart(6),
      String(x.blocks).padStart(8),
      f(x.gb, 2).padStart(6),
      f(x.copyGBps, 2).padStart(10),
      String(x.mismatches).padStart(11),
    ].join(" "),
  );
  return [
    head,
    ...lines,
    `memcpy on this machine: ${f(r.memcpyGBps, 1)} GB/s (TypedArray.set, 256 MiB, median of 5); times in ms`,
  ].join("\n");
}
