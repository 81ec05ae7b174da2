/**
 * The targets of the time-based kv policy, judged per suite cell (suite.ts prints these tables
 * after every suite run; suite-report.ts on the medians of several):
 *   p90, p99   kv's TTFT p90 / p99 at or below every peer policy's (load ×1, no restarts, 1 or 4 routers)
 *   pooled     kv's p90 within 1.25 × the pooled reference (ttft-floor.ts), where that reference is
 *              below 1.5 × the floor (elsewhere it asks less than a shared queue can do, or is not
 *              fair: on gen-agentic the pooled cache lets siblings reuse blocks still being computed,
 *              so those cells are judged against the causal pooled reference instead). Beside it, not
 *              judged: kv's p90 ÷ pooled with a shared cache of the cell's capacity, where the memory
 *              rather than the placement keeps kv from pooled (not on gen-agentic, for the same reason)
 *   hit        kv's hit rate ≥ 0.95 × the offline oracle's, where the oracle's own TTFT p90 (its
 *              decisions replayed in the timing simulation) is not worse than kv's there
 *   work       busiest engine ≤ 1.25 × the mean work past half utilisation
 *   pred err   p90 of |predicted ÷ observed TTFT − 1| ≤ 0.3 (the routers' own histogram)
 *   agentic    on gen-agentic, kv's p90 ≤ 0.8 × SGLang's cache-aware policy's
 * Beside them, kv's p90 ÷ kv-blocks's (the kv before this one). A target is judged only on the
 * cells where the policies it compares ran; each miss is named.
 */
import { DEFAULT_TIMING } from "../../src/mocker/timing.ts";
import { schedulerConfig } from "../../src/router/choose/config.ts";
import { textTable } from "../support/text-table.ts";
import { simulateOffline } from "./oracle.ts";
import type { PolicyResult } from "./report.ts";
import { simulate } from "./sim.ts";
import { KV_DEFAULTS } from "./sim-workloads.ts";
import { PEERS, SUITE_TIMING, suiteWorkloads, type SuiteCell } from "./suite.ts";
import { TRACE_BLOCK_TOKENS } from "./trace.ts";
import { ttftFloor, type Floor } from "./ttft-floor.ts";

export const TTFT_TARGETS = ["p90", "p99", "pooled", "hit", "work", "pred err", "agentic"] as const;
export type TtftTarget = (typeof TTFT_TARGETS)[number];

export interface TtftVerdict {
  kv: PolicyResult | undefined;
  kvBlocks: PolicyResult | undefined;
  best90: readonly [string, PolicyResult] | undefined;
  best99: readonly [string, PolicyResult] | undefined;
  /**
   * The reference p90 this cell is judged against (pooled, or its causal form on gen-agentic) and its name;
   * beside it, not judged, pooled with a shared cache of the cell's capacity (ttft-floor.ts).
   */
  reference:
    | { name: string; p90: number; floorP90: number; cellCacheP90: number | undefined }
    | undefined;
  oracleHit: number;
  /** The oracle's and kv's TTFT p90 in the timing simulation (trace ms), for the hit target's condition. */
  simOracleP90: number;
  simKvP90: number;
  applies: TtftTarget[];
  missed: string[];
}

/** The cell's trace rebuilt by name (suite.ts suiteWorkloads), or undefined for a cell from elsewhere. */
function workloadOf(c: SuiteCell) {
  return suiteWorkloads(c.report.requests).find((w) => w.name === c.workload);
}

export function judgeTtftCell(c: SuiteCell): TtftVerdict {
  const p = c.report.policies;
  const kv = p["kv"];
  const peers = PEERS.map((n): readonly [string, PolicyResult | undefined] => [n, p[n]]).filter(
    (x): x is readonly [string, PolicyResult] => x[1] !== undefined,
  );
  const best90 = peers.reduce<readonly [string, PolicyResult] | undefined>(
    (b, x) => (!b || x[1].ttft_ms.p90 < b[1].ttft_ms.p90 ? x : b),
    undefined,
  );
  const best99 = peers.reduce<readonly [string, PolicyResult] | undefined>(
    (b, x) => (!b || x[1].ttft_ms.p99 < b[1].ttft_ms.p99 ? x : b),
    undefined,
  );
  const oracleHit = c.report.offline["oracle"]?.hit_rate ?? NaN;
  const w = workloadOf(c);
  const agentic = c.workload.startsWith("gen-agentic");
  let reference: TtftVerdict["reference"];
  let simOracleP90 = NaN;
  let simKvP90 = NaN;
  if (w) {
    const trace = w.trace();
    const kvBlocks = Math.floor(
      (c.report.kv_blocks_per_engine * c.report.block_size) / TRACE_BLOCK_TOKENS,
    );
    const fl: Floor = ttftFloor(trace, {
      engines: c.report.engines,
      speedup: c.report.speedup,
      arrivalScale: c.arrival_scale,
      prefillUsPerToken: SUITE_TIMING.prefillUsPerToken,
      prefillOverheadMs: DEFAULT_TIMING.prefillOverheadMs,
      kvBlocks,
    });
    // The cell's-cache form is pooled's, which lets siblings reuse blocks still being computed: no
    // reference on gen-agentic, where the causal one is judged.
    reference = agentic
      ? {
          name: "pooled causal",
          p90: fl.pooledCausal.p90,
          floorP90: fl.floor.p90,
          cellCacheP90: undefined,
        }
      : {
          name: "pooled",
          p90: fl.pooled.p90,
          floorP90: fl.floor.p90,
          cellCacheP90: fl.pooledCellCache?.p90,
        };
    const o = {
      engines: c.report.engines,
      kvBlocks,
      prefillUsPerToken: SUITE_TIMING.prefillUsPerToken,
      decodeMsPerStep: SUITE_TIMING.decodeMsPerStep,
      maxOutputTokens: 32,
      arrivalScale: c.arrival_scale,
      seed: 1,
    };
    const config = schedulerConfig(KV_DEFAULTS);
    const assignment = simulateOffline(trace, "oracle", o.engines, o.kvBlocks, {
      seed: 1,
    }).assignment;
    simOracleP90 = simulate(trace, "kv", config, { ...o, assignment }).ttft.p90;
    simKvP90 = simulate(trace, "kv", config, { ...o, routers: c.routers }).ttft.p90;
  }
  const atLoad1 = c.arrival_scale === 1 && c.restarts === 0 && (c.routers === 1 || c.routers === 4);
  const applies: TtftTarget[] = [];
  const missed: string[] = [];
  const judge = (t: TtftTarget, applicable: boolean, miss: () => boolean) => {
    if (!kv || !applicable) return;
    applies.push(t);
    if (miss()) missed.push(t);
  };
  judge("p90", atLoad1 && best90 !== undefined, () => kv!.ttft_ms.p90 > best90![1].ttft_ms.p90);
  judge("p99", atLoad1 && best99 !== undefined, () => kv!.ttft_ms.p99 > best99![1].ttft_ms.p99);
  judge(
    "pooled",
    atLoad1 && reference !== undefined && reference.p90 < 1.5 * reference.floorP90,
    () => kv!.ttft_ms.p90 > 1.25 * reference!.p90,
  );
  judge(
    "hit",
    Number.isFinite(oracleHit) && !(simOracleP90 > simKvP90),
    () => kv!.hit_rate < 0.95 * oracleHit,
  );
  judge("work", (kv?.utilisation ?? 0) > 0.5, () => (kv!.work_max_over_mean ?? 0) > 1.25);
  judge(
    "pred err",
    kv?.ttft_prediction_error !== undefined,
    () => kv!.ttft_prediction_error!.p90 > 0.3,
  );
  judge(
    "agentic",
    agentic && c.arrival_scale >= 1 && p["sglang"] !== undefined,
    () => kv!.ttft_ms.p90 > 0.8 * p["sglang"]!.ttft_ms.p90,
  );
  if (kv && kv.errors > 0) missed.push(`${kv.errors} errors`);
  return {
    kv,
    kvBlocks: p["kv-blocks"],
    best90,
    best99,
    reference,
    oracleHit,
    simOracleP90,
    simKvP90,
    applies,
    missed,
  };
}

const f = (x: number | undefined, d = 2) =>
  x !== undefined && Number.isFinite(x) ? x.toFixed(d) : "-";

/** One line per cell: kv against the best peer, the reference, the oracle, kv-blocks; the targets it misses. */
export function ttftSummaryTable(cells: readonly SuiteCell[]): string {
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
    "÷",
    "reference p90",
    "kv ÷ ref",
    "kv ÷ pooled, cell's cache",
    "kv hit÷oracle",
    "sim p90 oracle / kv",
    "work max/mean",
    "pred err p50 / p90",
    "kv ÷ kv-blocks p90",
    "targets missed",
  ];
  const rows = cells.map((c) => {
    const v = judgeTtftCell(c);
    const { kv } = v;
    const err = kv?.ttft_prediction_error;
    return [
      c.workload,
      String(c.routers),
      String(c.restarts),
      `×${1 / c.arrival_scale}`,
      f(kv?.utilisation),
      f(kv?.ttft_ms.p90, 0),
      v.best90 ? `${f(v.best90[1].ttft_ms.p90, 0)} ${v.best90[0]}` : "-",
      v.best90 && kv ? f(kv.ttft_ms.p90 / v.best90[1].ttft_ms.p90) : "-",
      f(kv?.ttft_ms.p99, 0),
      v.best99 ? `${f(v.best99[1].ttft_ms.p99, 0)} ${v.best99[0]}` : "-",
      v.best99 && kv ? f(kv.ttft_ms.p99 / v.best99[1].ttft_ms.p99) : "-",
      v.reference
        ? `${f(v.reference.p90, 0)} ${v.reference.name}${v.reference.p90 < 1.5 * v.reference.floorP90 ? "" : " (≥ 1.5 × floor)"}`
        : "-",
      v.reference && kv ? f(kv.ttft_ms.p90 / v.reference.p90) : "-",
      v.reference?.cellCacheP90 !== undefined && kv
        ? f(kv.ttft_ms.p90 / v.reference.cellCacheP90)
        : "-",
      kv ? f(kv.hit_rate / v.oracleHit) : "-",
      `${f(v.simOracleP90, 0)} / ${f(v.simKvP90, 0)}`,
      f(kv?.work_max_over_mean),
      err ? `${f(err.p50)} / ${f(err.p90)}` : "-",
      kv && v.kvBlocks ? f(kv.ttft_ms.p90 / v.kvBlocks.ttft_ms.p90) : "-",
      v.missed.join(", ") || (kv ? "none" : "-"),
    ];
  });
  return textTable(head, rows);
}

/** Per target: on how many of the cells it applies to kv meets it. */
export function ttftTallyTable(cells: readonly SuiteCell[]): string {
  const verdicts = cells.map(judgeTtftCell);
  return textTable(
    ["target", "met / cells"],
    TTFT_TARGETS.map((t) => {
      const judged = verdicts.filter((v) => v.applies.includes(t));
      return [t, `${judged.filter((v) => !v.missed.includes(t)).length} / ${judged.length}`];
    }),
  );
}
