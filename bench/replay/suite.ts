/**
 * `bun run bench:replay --suite quick|full|smoke`: every policy (ours and the peers') on workloads
 * nobody tuned for, with one and several routers, engine restarts and three loads, then one
 * summary line per cell against the time-based kv's targets (ttft-targets.ts; the earlier
 * targets' judge, judgeCell and summaryTable below, stays for the tables made with it). Each cell is a fresh
 * cluster per policy (cell.ts). quick: 300 requests per workload (Mooncake at speedup 20, generated
 * shapes at 10), 8 output tokens, about 10 min on the 2-core development machine; full: 2000
 * requests, 32 output tokens, N = 2 and 4, restarts and three loads everywhere (hours); smoke:
 * seconds, for CI. `--suite-requests` / `--suite-speedup` override.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { runCell, type CellOptions } from "./cell.ts";
import { isBranch } from "./gen/fan-out.ts";
import { generate, type Shape } from "./gen/shapes.ts";
import { formatTable, toJson, type PolicyResult, type ReplayReport } from "./report.ts";
import { textTable } from "../support/text-table.ts";
import { loadTrace, type TraceRequest } from "./trace.ts";

export const SUITES = ["quick", "full", "smoke", "tiers"] as const;
export type SuiteName = (typeof SUITES)[number];

export const PEERS = [
  "dynamo",
  "sglang",
  "llm-d",
  "prodstack-prefix",
  "prodstack-session",
] as const;
/** Ours: kv (predicted TTFT, the default) and kv-blocks (the kv before it), side by side in every cell. */
const ALL = ["kv", "kv-blocks", "approx", ...PEERS, "least-loaded", "round-robin"];
const TRACES = join(import.meta.dir, "..", "..", "..", "shared", "traces");

export interface Workload {
  name: string;
  trace: () => TraceRequest[];
  kvFraction: number;
  /**
   * Trace time ÷ wall time. The generated shapes arrive 3-5x as often as the Mooncake traces
   * (9-17 requests per trace second): at the same speedup their wall-clock rate, not routing,
   * would saturate this 2-core machine (client, router and 8 engines on it), so they replay slower.
   */
  speedup: number;
  /** Engines (default 8; smoke 4). */
  engines?: number;
  /** GPU blocks per engine, instead of kvFraction's share. */
  kvBlocks?: number;
  /** A host tier of this many times the GPU blocks on every engine (runCell's hostTierFactor). */
  hostTierFactor?: number;
  /** Requests whose TTFT the cell also reports alone (the fan-out's branches). */
  measured?: (r: TraceRequest) => boolean;
}

export interface CellSpec {
  workload: Workload;
  policies: string[];
  routers: number;
  restarts: number;
  arrivalScale: number;
}

const mooncake = (file: string, n: number) => () => loadTrace(join(TRACES, file), n);
const gen = (shape: Shape, n: number) => () => generate(shape, 1).slice(0, n);
/** The simulated engines' timing in every suite cell (ttft-floor.ts computes its floor with it). */
export const SUITE_TIMING = {
  prefillUsPerToken: 200,
  decodeMsPerStep: 20,
  decodeBatchFactor: 0.02,
  maxConcurrency: 64,
} as const;
const MOONCAKE_SPEEDUP = 20;
const GEN_SPEEDUP = 10;

/** The quick and full suites' seven workloads, first `n` requests of each (ttft-floor.ts rebuilds a cell's trace by name). */
export function suiteWorkloads(n: number): Workload[] {
  return [
    {
      name: "conversation, half",
      trace: mooncake("conversation_trace.jsonl", n),
      kvFraction: 0.5,
      speedup: MOONCAKE_SPEEDUP,
    },
    {
      name: "conversation, quarter",
      trace: mooncake("conversation_trace.jsonl", n),
      kvFraction: 0.25,
      speedup: MOONCAKE_SPEEDUP,
    },
    {
      name: "synthetic, half",
      trace: mooncake("synthetic_trace.jsonl", n),
      kvFraction: 0.5,
      speedup: MOONCAKE_SPEEDUP,
    },
    {
      name: "synthetic, quarter",
      trace: mooncake("synthetic_trace.jsonl", n),
      kvFraction: 0.25,
      speedup: MOONCAKE_SPEEDUP,
    },
    { name: "gen-chat, half", trace: gen("chat", n), kvFraction: 0.5, speedup: GEN_SPEEDUP },
    { name: "gen-agentic, half", trace: gen("agentic", n), kvFraction: 0.5, speedup: GEN_SPEEDUP },
    { name: "gen-rag, half", trace: gen("rag", n), kvFraction: 0.5, speedup: GEN_SPEEDUP },
  ];
}

export function cells(suite: SuiteName, requests: number | undefined): CellSpec[] {
  if (suite === "tiers") return tierCells(requests ?? 300);
  if (suite === "smoke") {
    const w: Workload = {
      name: "gen-chat (80)",
      trace: gen("chat", 80),
      kvFraction: 0.5,
      speedup: 40,
    };
    return [
      { workload: w, policies: ["kv", ...PEERS], routers: 1, restarts: 0, arrivalScale: 1 },
      { workload: w, policies: ["kv"], routers: 2, restarts: 1, arrivalScale: 1 },
    ];
  }
  const workloads = suiteWorkloads(requests ?? (suite === "quick" ? 300 : 2000));
  const out: CellSpec[] = [];
  const routerCounts = suite === "quick" ? [4] : [2, 4];
  const scales = [0.5, 2]; // with 1 below: three loads
  for (const w of workloads) {
    const quarter = w.kvFraction < 0.5;
    // quick: the full policy list at half capacity; a quarter only for ours and the best-known peers.
    out.push({
      workload: w,
      policies:
        quick(suite) && quarter
          ? ["kv", "kv-blocks", "approx", "dynamo", "sglang", "least-loaded"]
          : ALL,
      routers: 1,
      restarts: 0,
      arrivalScale: 1,
    });
    if (quick(suite) && quarter) continue;
    for (const r of routerCounts)
      out.push({
        workload: w,
        policies: ["kv", "kv-blocks", "approx", "dynamo", "sglang"],
        routers: r,
        restarts: 0,
        arrivalScale: 1,
      });
    if (!quick(suite) || w.name.startsWith("gen-agentic") || w.name.startsWith("conversation")) {
      out.push({
        workload: w,
        policies: ["kv", "kv-blocks", "approx", "dynamo"],
        routers: 1,
        restarts: 2,
        arrivalScale: 1,
      });
    }
    if (!quick(suite) || w.name.startsWith("gen-chat")) {
      for (const s of scales)
        out.push({
          workload: w,
          policies: ["kv", "kv-blocks", "dynamo", "sglang", "least-loaded", "round-robin"],
          routers: 1,
          restarts: 0,
          arrivalScale: s,
        });
    }
  }
  if (suite === "full") out.push(...tierCells(requests ?? 2000));
  return out;
}

const quick = (s: SuiteName) => s === "quick";

/** The peers beside kv in the tiered cells: their tier policies as their sources define them. */
export const TIER_POLICIES = ["kv", "dynamo", "llm-d-p2p", "sglang"];
/** A host tier of 3x the GPU blocks: a DGX H100's 2 TB of DRAM for 640 GB of HBM (src/mocker/options.ts). */
const HOST_FACTOR = 3;

/**
 * Issue 45's cells (`--suite tiers`, and at the end of `full`): every engine with a host tier;
 * a Mooncake trace and gen-chat on small GPU caches (an eighth of the unique blocks), the two
 * target cells of the issue (gen-agentic and gen-chat at half) with tiers, and a 32K-token
 * prefix fanned out to 16 engines. least-loaded is the recompute reference where it runs.
 */
export function tierCells(n: number): CellSpec[] {
  const one = (workload: Workload, policies: string[]): CellSpec => ({
    workload,
    policies,
    routers: 1,
    restarts: 0,
    arrivalScale: 1,
  });
  return [
    one(
      {
        name: "conversation, GPU 1/8 + host",
        trace: mooncake("conversation_trace.jsonl", n),
        kvFraction: 0.125,
        speedup: MOONCAKE_SPEEDUP,
        hostTierFactor: HOST_FACTOR,
      },
      [...TIER_POLICIES, "least-loaded"],
    ),
    one(
      {
        name: "gen-chat, GPU 1/8 + host",
        trace: gen("chat", n),
        kvFraction: 0.125,
        speedup: GEN_SPEEDUP,
        hostTierFactor: HOST_FACTOR,
      },
      TIER_POLICIES,
    ),
    one(
      {
        name: "gen-agentic, half + host",
        trace: gen("agentic", n),
        kvFraction: 0.5,
        speedup: GEN_SPEEDUP,
        hostTierFactor: HOST_FACTOR,
      },
      TIER_POLICIES,
    ),
    one(
      {
        name: "gen-chat, half + host",
        trace: gen("chat", n),
        kvFraction: 0.5,
        speedup: GEN_SPEEDUP,
        hostTierFactor: HOST_FACTOR,
      },
      TIER_POLICIES,
    ),
    one(
      {
        name: "fan-out 32K x 16 engines",
        trace: () => generate("fan-out", 1),
        // 100 blocks of 512: one such prompt and a half per GPU, so the warm-up's two or three
        // prompts an engine spill to its host tier: the router knows an engine can pull only
        // once it has reported a tier.
        kvFraction: 0,
        kvBlocks: 100,
        engines: 16,
        // Slower than the other cells: a pull is ~1/80 of recomputing here, and at 10x its few
        // ms of wall time drown in this machine's scheduling noise (and teach the router so).
        speedup: 2,
        hostTierFactor: HOST_FACTOR,
        measured: isBranch,
      },
      [...TIER_POLICIES, "least-loaded"],
    ),
  ];
}

/** `--suite-cells A-B` (or `A`): 1-based, inclusive. */
export function parseCellRange(text: string): { from: number; to: number } {
  const m = /^(\d+)(?:-(\d+))?$/.exec(text.trim());
  if (!m) throw new Error(`--suite-cells must be A-B or A (1-based cell numbers), got "${text}"`);
  const from = Number(m[1]);
  const to = m[2] !== undefined ? Number(m[2]) : from;
  if (from < 1 || to < from)
    throw new Error(`--suite-cells: ${text} is not a range of cells (1-based, A ≤ B)`);
  return { from, to };
}

/**
 * `--suite-cells A-B,C,D-E`: the listed cells, in the suite's order (so a run stopped part-way
 * has the first of them); a list lets a short session run the cells the targets are judged on.
 */
export function parseCellList(text: string): number[] {
  const out = new Set<number>();
  for (const part of text.split(",")) {
    const { from, to } = parseCellRange(part);
    for (let i = from; i <= to; i++) out.add(i);
  }
  return [...out].sort((a, b) => a - b);
}

export interface SuiteOptions {
  /** Requests per workload (quick: 300, full: 2000). */
  requests?: number;
  /** Trace time ÷ wall time (quick: 40, full and smoke: 20 / 40). */
  speedup?: number;
  /**
   * Only cells `from` to `to` (1-based, inclusive, as "cell i/n" prints them): the full suite
   * takes hours here, so it can be run in parts and the parts' JSON concatenated.
   */
  /** 1-based cell numbers to run (parseCellList); all when absent. */
  cells?: readonly number[];
  /**
   * Only these of each cell's policies (a cell with none of them is left out): after a change
   * that moves only ours, rerun ours and keep the peers' rows of earlier runs (suite-merge.ts).
   */
  policies?: readonly string[];
  /** Written after every cell (the cells so far), so a run stopped part-way keeps what it finished. */
  json?: string;
  quiet?: boolean;
  /** Warm-up requests per router before each policy's replay (warmup.ts); default its DEFAULT_WARMUP_PER_ROUTER. */
  warmupPerRouter?: number;
  verbose?: boolean;
  /** More router flags for every cell (run.ts --router-arg), after the suite's own. */
  routerArgs?: readonly string[];
  /** Flags for every simulated engine in every cell (run.ts --engine-arg). */
  engineArgs?: readonly string[];
  onProgress?: CellOptions["onProgress"];
}

export interface SuiteCell {
  workload: string;
  routers: number;
  restarts: number;
  arrival_scale: number;
  report: ReplayReport;
}

export async function runSuite(suite: SuiteName, o: SuiteOptions): Promise<SuiteCell[]> {
  const results: SuiteCell[] = [];
  const started = performance.now();
  const all = cells(suite, o.requests);
  const chosen = o.cells ?? all.map((_, i) => i + 1);
  const beyond = chosen.filter((i) => i > all.length);
  if (beyond.length > 0)
    throw new Error(
      `--suite-cells: suite ${suite} has cells 1-${all.length} (asked for ${beyond.join(", ")})`,
    );
  for (const i of chosen) {
    const c = all[i - 1]!;
    const policies =
      o.policies === undefined ? c.policies : c.policies.filter((p) => o.policies!.includes(p));
    if (policies.length === 0) continue;
    const report = await runCell({
      trace: c.workload.trace(),
      traceName: c.workload.name,
      engines: c.workload.engines ?? (suite === "smoke" ? 4 : 8),
      kvFraction: c.workload.kvFraction,
      kvBlocks: c.workload.kvBlocks,
      hostTierFactor: c.workload.hostTierFactor,
      measured: c.workload.measured,
      blockSize: 512,
      speedup: o.speedup ?? c.workload.speedup,
      timing: SUITE_TIMING,
      // 8 output tokens (32 in full): TTFT is what is compared, and every streamed token costs
      // this shared machine CPU that the router and engines need.
      policies,
      seed: 1,
      maxOutputTokens: suite === "full" ? 32 : 8,
      routers: c.routers,
      engineRestarts: c.restarts,
      arrivalScale: c.arrivalScale,
      promptFormat: "tokens",
      routerArgs: ["--engine-metrics-interval", "0", ...(o.routerArgs ?? [])],
      engineArgs: o.engineArgs,
      ttftSloMs: 1000,
      warmupPerRouter: o.warmupPerRouter,
      verbose: o.verbose ?? false,
      onProgress: o.onProgress,
      onError: (p, m) => console.error(`${c.workload.name}, ${p}: ${m}`),
    });
    results.push({
      workload: c.workload.name,
      routers: c.routers,
      restarts: c.restarts,
      arrival_scale: c.arrivalScale,
      report,
    });
    console.log(
      `cell ${i}/${all.length}: ${c.workload.name}, ${c.routers} router(s), ${c.restarts} restart(s), load ×${1 / c.arrivalScale}\n${formatTable(report)}\n`,
    );
    if (o.json) writeSuiteJson(o.json, results);
  }
  if (suite === "tiers") {
    const { tierRows, tierTable, tierTargets } = await import("./tier-cells.ts");
    const rows = tierRows([results]);
    console.log(tierTable(rows));
    console.log(tierTargets(rows, [results]));
    console.log(
      `suite tiers: ${results.length} cells in ${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
    return results;
  }
  // The time-based kv's targets (ttft-targets.ts, loaded here: it reads this module's workloads).
  const { ttftSummaryTable, ttftTallyTable } = await import("./ttft-targets.ts");
  console.log(ttftSummaryTable(results));
  console.log(ttftTallyTable(results));
  console.log(
    `suite ${suite}: ${results.length} cells in ${((performance.now() - started) / 1000).toFixed(0)} s`,
  );
  return results;
}

/** A suite run's file: one cell a line (each report as toJson writes it), the form suite-report.ts and suite-merge.ts read. */
export function writeSuiteJson(path: string, results: readonly SuiteCell[]): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(
    path,
    `[${results.map((r) => JSON.stringify({ ...r, report: JSON.parse(toJson(r.report)) })).join(",\n")}]\n`,
  );
}

const f = (x: number | undefined, d = 2) =>
  x !== undefined && Number.isFinite(x) ? x.toFixed(d) : "-";

/** One line per cell: kv against the best peer, least-loaded, approx and the oracle, as the targets read. */
/** The targets, in the order the summary and the tally name them. */
export const TARGETS = ["hit", "p90", "p99", "≤ll", "work", "N4 vs approx"] as const;
export type Target = (typeof TARGETS)[number];

interface CellVerdict {
  kv: PolicyResult | undefined;
  best90: readonly [string, PolicyResult] | undefined;
  best99: number;
  ll: PolicyResult | undefined;
  approx: PolicyResult | undefined;
  oracle: number;
  /** The targets this cell can be judged on (the policies they compare are in it). */
  applies: Target[];
  /** Those of them kv misses, then `N errors` if kv had any. */
  missed: string[];
}

/** One cell against the issue 14 targets. */
export function judgeCell(c: SuiteCell): CellVerdict {
  const p = c.report.policies;
  const kv = p["kv"];
  const peers = PEERS.map((n): readonly [string, PolicyResult | undefined] => [n, p[n]]).filter(
    (x): x is readonly [string, PolicyResult] => x[1] !== undefined,
  );
  const best90 = peers.reduce<readonly [string, PolicyResult] | undefined>(
    (b, x) => (!b || x[1].ttft_ms.p90 < b[1].ttft_ms.p90 ? x : b),
    undefined,
  );
  const best99 = peers.reduce((m, x) => Math.min(m, x[1].ttft_ms.p99), Infinity);
  const ll = p["least-loaded"];
  const approx = p["approx"];
  const oracle = c.report.offline["oracle"]?.hit_rate ?? NaN;
  const applies: Target[] = [];
  const missed: string[] = [];
  const judge = (t: Target, applicable: boolean, miss: () => boolean) => {
    if (!kv || !applicable) return;
    applies.push(t);
    if (miss()) missed.push(t);
  };
  judge("hit", Number.isFinite(oracle), () => kv!.hit_rate < 0.95 * oracle);
  judge("p90", best90 !== undefined, () => kv!.ttft_ms.p90 > 0.8 * best90![1].ttft_ms.p90);
  judge("p99", Number.isFinite(best99), () => kv!.ttft_ms.p99 > best99);
  judge(
    "≤ll",
    ll !== undefined,
    () => kv!.ttft_ms.p90 > ll!.ttft_ms.p90 || kv!.ttft_ms.p99 > ll!.ttft_ms.p99,
  );
  judge("work", (kv?.utilisation ?? 0) > 0.5, () => (kv!.work_max_over_mean ?? 0) > 1.25);
  judge(
    "N4 vs approx",
    c.routers >= 4 && approx !== undefined,
    () => kv!.ttft_ms.p90 > 0.8 * approx!.ttft_ms.p90,
  );
  if (kv && kv.errors > 0) missed.push(`${kv.errors} errors`);
  return { kv, best90, best99, ll, approx, oracle, applies, missed };
}

export function summaryTable(cells: readonly SuiteCell[]): string {
  const head = [
    "workload",
    "N",
    "restarts",
    "load",
    "util",
    "kv p90",
    "best peer p90",
    "÷",
    "kv p99",
    "best peer p99",
    "ll p99",
    "kv hit÷oracle",
    "kv work max/mean",
    "vs approx p90",
    "targets missed",
  ];
  const rows = cells.map((c) => {
    const { kv, best90, best99, ll, approx, oracle, missed } = judgeCell(c);
    return [
      c.workload,
      String(c.routers),
      String(c.restarts),
      `×${1 / c.arrival_scale}`,
      f(kv?.utilisation),
      f(kv?.ttft_ms.p90, 0),
      best90 ? `${f(best90[1].ttft_ms.p90, 0)} ${best90[0]}` : "-",
      best90 && kv ? f(kv.ttft_ms.p90 / best90[1].ttft_ms.p90) : "-",
      f(kv?.ttft_ms.p99, 0),
      f(best99, 0),
      f(ll?.ttft_ms.p99, 0),
      kv ? f(kv.hit_rate / oracle) : "-",
      f(kv?.work_max_over_mean),
      kv && approx ? f(kv.ttft_ms.p90 / approx.ttft_ms.p90) : "-",
      missed.join(", ") || (kv ? "none" : "-"),
    ];
  });
  return textTable(head, rows);
}

/** Per target: on how many of the cells it applies to kv meets it. */
export function tallyTable(cells: readonly SuiteCell[]): string {
  const verdicts = cells.map(judgeCell);
  const rows = TARGETS.map((t) => {
    const judged = verdicts.filter((v) => v.applies.includes(t));
    const met = judged.filter((v) => !v.missed.includes(t)).length;
    return [t, `${met} / ${judged.length}`];
  });
  return textTable(["target", "met / cells"], rows);
}
