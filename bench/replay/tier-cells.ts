/**
 * Issue 45's cells (suite.ts tierCells) as one table and their targets, read from one suite
 * run or several (medians per figure, as suite-report.ts): per cell and policy, TTFT p50 / p90 /
 * p99, the fan-out's branch-start p90, where the prompt tokens came from (GPU cache, host tier,
 * disk tier, a peer's pull; engines' counters) and the 1-minute load average when the row ended.
 * Targets (judged only where their policies ran):
 *   tiered     kv's p90 and p99 at or below every peer's (the small-GPU cells)
 *   agentic    on gen-agentic with tiers, kv's p90 <= 0.7 x SGLang's cache-aware policy's
 *   gen-chat   on gen-chat at half with tiers, kv's p90 <= 1.5 x the pooled reference (ttft-floor.ts)
 *   fan-out    branch-start p90 <= 0.3 x recomputing on every engine (least-loaded: placement
 *              blind to the cache, so each branch recomputes the context where it lands) and <= llm-d-p2p's
 * `bun bench/replay/tier-cells.ts RUN.json [RUN2.json ...]` prints both tables.
 */
import { readFileSync } from "node:fs";
import { DEFAULT_TIMING } from "../../src/mocker/timing.ts";
import { textTable } from "../support/text-table.ts";
import type { PolicyResult } from "./report.ts";
import { SUITE_TIMING, tierCells, type SuiteCell } from "./suite.ts";
import { TRACE_BLOCK_TOKENS } from "./trace.ts";
import { ttftFloor } from "./ttft-floor.ts";

const f = (x: number | undefined, d = 0) =>
  x !== undefined && Number.isFinite(x) ? x.toFixed(d) : "-";
const median = (xs: number[]) => {
  const a = xs.filter((x) => Number.isFinite(x)).sort((p, q) => p - q);
  if (a.length === 0) return NaN;
  const m = a.length >> 1;
  return a.length % 2 ? a[m]! : (a[m - 1]! + a[m]!) / 2;
};

/** One figure of a policy in a cell, the median over runs (with the runs' count). */
type Pick = (p: PolicyResult) => number | undefined;

export interface TierRow {
  cell: string;
  policy: string;
  runs: number;
  p50: number;
  p90: number;
  p99: number;
  branchP90: number;
  gpu: number;
  cpu: number;
  disk: number;
  peer: number;
  errors: number;
  load: number;
}

/** Rows per (cell, policy), medians over the runs that have them. */
export function tierRows(runs: readonly (readonly SuiteCell[])[]): TierRow[] {
  const out: TierRow[] = [];
  const names = [...new Set(runs.flatMap((r) => r.map((c) => c.workload)))];
  for (const cell of names) {
    const cs = runs.flatMap((r) => r.filter((c) => c.workload === cell));
    const policies = [...new Set(cs.flatMap((c) => Object.keys(c.report.policies)))];
    for (const policy of policies) {
      const ps = cs.map((c) => c.report.policies[policy]).filter((p) => p !== undefined);
      const m = (pick: Pick) => median(ps.map((p) => pick(p) ?? NaN));
      out.push({
        cell,
        policy,
        runs: ps.length,
        p50: m((p) => p.ttft_ms.p50),
        p90: m((p) => p.ttft_ms.p90),
        p99: m((p) => p.ttft_ms.p99),
        branchP90: m((p) => p.subset_ttft_ms?.p90),
        gpu: m((p) => p.tier_hits?.gpu),
        cpu: m((p) => p.tier_hits?.cpu),
        disk: m((p) => p.tier_hits?.disk),
        peer: m((p) => p.tier_hits?.peer),
        errors: m((p) => p.errors),
        load: m((p) => p.load_avg),
      });
    }
  }
  return out;
}

export function tierTable(rows: readonly TierRow[]): string {
  return textTable(
    [
      "cell",
      "policy",
      "runs",
      "ttft p50",
      "p90",
      "p99",
      "branch p90",
      "hit gpu",
      "cpu",
      "disk",
      "peer",
      "errors",
      "load avg",
    ],
    rows.map((r) => [
      r.cell,
      r.policy,
      String(r.runs),
      f(r.p50),
      f(r.p90),
      f(r.p99),
      f(r.branchP90),
      f(r.gpu, 3),
      f(r.cpu, 3),
      f(r.disk, 3),
      f(r.peer, 3),
      f(r.errors),
      f(r.load, 1),
    ]),
  );
}

/** The pooled reference's p90 (wall ms) for a tier cell, rebuilt from its trace. */
function pooledP90(cell: string, c: SuiteCell): number {
  const w = tierCells(c.report.requests).find((x) => x.workload.name === cell)?.workload;
  if (w === undefined) return NaN;
  return ttftFloor(w.trace(), {
    engines: c.report.engines,
    speedup: c.report.speedup,
    arrivalScale: c.arrival_scale,
    prefillUsPerToken: SUITE_TIMING.prefillUsPerToken,
    prefillOverheadMs: DEFAULT_TIMING.prefillOverheadMs,
    kvBlocks: Math.floor(
      (c.report.kv_blocks_per_engine * c.report.block_size) / TRACE_BLOCK_TOKENS,
    ),
  }).pooled.p90;
}

export function tierTargets(
  rows: readonly TierRow[],
  runs: readonly (readonly SuiteCell[])[],
): string {
  const get = (cell: string, policy: string) =>
    rows.find((r) => r.cell === cell && r.policy === policy);
  const lines: string[][] = [];
  const verdict = (ok: boolean | undefined) => (ok === undefined ? "-" : ok ? "met" : "missed");
  for (const cell of [...new Set(rows.map((r) => r.cell))]) {
    const kv = get(cell, "kv");
    if (kv === undefined) continue;
    const peers = rows.filter(
      (r) => r.cell === cell && r.policy !== "kv" && r.policy !== "least-loaded",
    );
    if (cell.includes("1/8")) {
      const worst90 = peers.reduce((m, p) => Math.min(m, p.p90), Infinity);
      const worst99 = peers.reduce((m, p) => Math.min(m, p.p99), Infinity);
      lines.push([
        cell,
        "p90 and p99 <= every peer's",
        `p90 ${f(kv.p90)} vs best peer ${f(worst90)}; p99 ${f(kv.p99)} vs ${f(worst99)}`,
        verdict(kv.p90 <= worst90 && kv.p99 <= worst99),
        f(kv.load, 1),
      ]);
    }
    if (cell.startsWith("gen-agentic")) {
      const sg = get(cell, "sglang");
      lines.push([
        cell,
        "p90 <= 0.7 x sglang",
        sg ? `${f(kv.p90)} / ${f(sg.p90)} = ${f(kv.p90 / sg.p90, 2)}` : "-",
        verdict(sg && kv.p90 <= 0.7 * sg.p90),
        f(kv.load, 1),
      ]);
    }
    if (cell.startsWith("gen-chat, half")) {
      const c = runs.flat().find((x) => x.workload === cell);
      const ref = c ? pooledP90(cell, c) : NaN;
      lines.push([
        cell,
        "p90 <= 1.5 x pooled",
        `${f(kv.p90)} / ${f(ref)} = ${f(kv.p90 / ref, 2)}`,
        verdict(Number.isFinite(ref) ? kv.p90 <= 1.5 * ref : undefined),
        f(kv.load, 1),
      ]);
    }
    if (cell.startsWith("fan-out")) {
      const ll = get(cell, "least-loaded");
      const llmd = get(cell, "llm-d-p2p");
      lines.push([
        cell,
        "branch p90 <= 0.3 x recompute (least-loaded)",
        ll ? `${f(kv.branchP90)} / ${f(ll.branchP90)} = ${f(kv.branchP90 / ll.branchP90, 2)}` : "-",
        verdict(ll && kv.branchP90 <= 0.3 * ll.branchP90),
        f(kv.load, 1),
      ]);
      lines.push([
        cell,
        "branch p90 <= llm-d-p2p",
        llmd ? `${f(kv.branchP90)} vs ${f(llmd.branchP90)}` : "-",
        verdict(llmd && kv.branchP90 <= llmd.branchP90),
        f(kv.load, 1),
      ]);
    }
  }
  return textTable(["cell", "target", "figures (ms)", "verdict", "load avg"], lines);
}

if (import.meta.main) {
  const files = process.argv.slice(2);
  if (files.length === 0)
    throw new Error("usage: bun bench/replay/tier-cells.ts RUN.json [RUN2.json ...]");
  const runs = files.map((p) => JSON.parse(readFileSync(p, "utf8")) as SuiteCell[]);
  const rows = tierRows(runs);
  console.log(tierTable(rows));
  console.log(tierTargets(rows, runs));
}
