/**
 * What no router can beat: a TTFT floor per suite cell, against which the issue 14 target
 * "kv TTFT p90 ≤ 0.8 × the best peer's" can be read: the last column, 0.8 × the best peer's p90
 * ÷ the floor's, below 1 means no routing policy whatever reaches the target on that cell, and
 * near 1 that only a policy at the floor itself would. The floor is loose where requests arrive
 * in bursts that share a prefix nobody has computed yet (gen-agentic's fan-outs): it lets each
 * of them reuse the blocks its siblings are still computing.
 *
 *  - floor: each request alone on an engine whose cache holds every block any earlier request
 *    had (one infinite cache, no capacity, no queue), so it prefills only what the trace has
 *    never seen: (overhead + never-seen tokens × µs/token) / speedup. Every real TTFT is at least
 *    this (plus HTTP and router time, left out), so its p90 is a lower bound on any policy's p90.
 *  - pooled: the same infinite cache, and the cell's engines as one shared FIFO queue (a request
 *    starts on the first free lane). A reference for "perfect cache and perfect balance", not a
 *    bound (another order than FIFO could do better on p90).
 *  - pooled, causal: pooled, but a block is in the shared cache only once the prefill computing it
 *    has finished; a request whose prefix is still being computed either waits for it or computes
 *    it again, whichever gives its first token sooner, on whichever lane is best. The fair
 *    reference where requests arrive in bursts sharing a new prefix (gen-agentic's fan-outs), on
 *    which pooled and the floor let each sibling reuse blocks nobody has finished computing.
 *  - pooled, cell's cache: pooled, but the shared cache holds only the cell's KV capacity (engines
 *    × blocks per engine, one LRU, so no block is ever held twice). Where the trace's working set
 *    is larger than the cluster's memory (the "quarter" cells), pooled asks for hits no cache of
 *    that size keeps; this says how much of a miss against pooled is the memory and how much the
 *    placement. Given only when `kvBlocks` is.
 *
 * Wall milliseconds, as the suite reports TTFT. No processes: the trace is rebuilt from the
 * cell's workload name and request count (suite.ts suiteWorkloads).
 * `bun bench/replay/ttft-floor.ts SUITE.json [SUITE2.json ...]` (several runs: their medians).
 */
import { readFileSync } from "node:fs";
import { DEFAULT_TIMING } from "../../src/mocker/timing.ts";
import { textTable } from "../support/text-table.ts";
import { prefixHits } from "./oracle.ts";
import { Lru } from "./sim.ts";
import { summarize } from "./stats.ts";
import { judgeCell, SUITE_TIMING, suiteWorkloads, type SuiteCell } from "./suite.ts";
import { medianCells } from "./suite-report.ts";
import { fullBlockIds, TRACE_BLOCK_TOKENS, type TraceRequest } from "./trace.ts";

export interface FloorOptions {
  engines: number;
  /** Trace time ÷ wall time. */
  speedup: number;
  /** Arrival times × this (0.5: load ×2). */
  arrivalScale: number;
  prefillUsPerToken: number;
  prefillOverheadMs: number;
  /** Trace blocks each engine's cache holds: when given, the pooled reference with the cell's cache is computed too. */
  kvBlocks?: number;
}

export interface Floor {
  floor: { p90: number; p99: number };
  pooled: { p90: number; p99: number };
  pooledCausal: { p90: number; p99: number };
  /** Pooled with one shared LRU of the cell's whole capacity (engines × kvBlocks); absent without kvBlocks. */
  pooledCellCache?: { p90: number; p99: number };
}

/** One prefill's time (wall ms) that computes `tokens` prompt tokens, as the simulated engine times it. */
function prefillWallMs(tokens: number, o: FloorOptions): number {
  return (o.prefillOverheadMs + (Math.max(0, tokens) * o.prefillUsPerToken) / 1000) / o.speedup;
}

/** When `r` arrives (wall ms after the trace's first request at `t0`), at the cell's load and speedup. */
function arrivalWallMs(r: TraceRequest, t0: number, o: FloorOptions): number {
  return ((r.timestamp - t0) * o.arrivalScale) / o.speedup;
}

/** Per request, its prefill time (wall ms) when only never-seen blocks are computed. */
export function floorPrefillMs(trace: readonly TraceRequest[], o: FloorOptions): number[] {
  const seen = new Set<number>();
  return trace.map((r) => {
    const ids = fullBlockIds(r);
    const hit = prefixHits(seen, ids);
    for (const id of ids) seen.add(id);
    return prefillWallMs(r.inputLength - hit * TRACE_BLOCK_TOKENS, o);
  });
}

/**
 * Per request, its TTFT (wall ms) through the cell's engines as one shared FIFO queue (a request
 * starts on the first free lane), each taking `prefillOf(request, i)`, asked in arrival order.
 */
function sharedQueue(
  trace: readonly TraceRequest[],
  o: FloorOptions,
  prefillOf: (r: TraceRequest, i: number) => number,
): number[] {
  const t0 = trace[0]?.timestamp ?? 0;
  const free = new Array<number>(o.engines).fill(0);
  return trace.map((r, i) => {
    const arrival = arrivalWallMs(r, t0, o);
    let lane = 0;
    for (let e = 1; e < free.length; e++) if (free[e]! < free[lane]!) lane = e;
    const start = Math.max(arrival, free[lane]!);
    free[lane] = start + prefillOf(r, i);
    return free[lane]! - arrival;
  });
}

export function ttftFloor(trace: readonly TraceRequest[], o: FloorOptions): Floor {
  const prefill = floorPrefillMs(trace, o);
  const pooled = sharedQueue(trace, o, (_r, i) => prefill[i]!);
  const q = (xs: number[]) => {
    const { p90, p99 } = summarize(xs);
    return { p90, p99 };
  };
  const floor: Floor = {
    floor: q(prefill),
    pooled: q(pooled),
    pooledCausal: q(pooledCausal(trace, o)),
  };
  if (o.kvBlocks !== undefined)
    floor.pooledCellCache = q(pooledCellCache(trace, { ...o, kvBlocks: o.kvBlocks }));
  return floor;
}

/**
 * Per request, its TTFT (wall ms) in the pooled reference with the cell's cache (see the file's
 * comment): the shared FIFO queue of pooled, each request computing what one LRU of
 * engines × kvBlocks blocks does not hold when it starts. As in pooled, its blocks are in the
 * cache from its start (touched last block first, so eviction takes leaves, as sim.ts's engines).
 */
export function pooledCellCache(
  trace: readonly TraceRequest[],
  o: FloorOptions & { kvBlocks: number },
): number[] {
  const cache = new Lru(o.engines * o.kvBlocks);
  return sharedQueue(trace, o, (r) => {
    const ids = fullBlockIds(r);
    const hit = cache.prefix(ids);
    cache.touch(ids);
    return prefillWallMs(r.inputLength - hit * TRACE_BLOCK_TOKENS, o);
  });
}

/** Per request, its TTFT (wall ms) in the causal pooled reference (see the file's comment). */
export function pooledCausal(trace: readonly TraceRequest[], o: FloorOptions): number[] {
  const t0 = trace[0]?.timestamp ?? 0;
  const free = new Array<number>(o.engines).fill(0);
  /** When each block is (or will be) in the shared cache: the end of the first prefill computing it. */
  const ready = new Map<number, number>();
  return trace.map((r) => {
    const arrival = arrivalWallMs(r, t0, o);
    const ids = fullBlockIds(r);
    /** Blocks of the prefix ready by time t. */
    const readyBy = (t: number) => {
      let n = 0;
      while (n < ids.length && (ready.get(ids[n]!) ?? Infinity) <= t) n++;
      return n;
    };
    // The prefix someone has computed or is computing, and when all of it will be ready.
    let known = 0;
    let knownAt = arrival;
    while (known < ids.length && ready.has(ids[known]!))
      knownAt = Math.max(knownAt, ready.get(ids[known++]!)!);
    let best = { end: Infinity, lane: 0, computedFrom: 0 };
    for (let lane = 0; lane < free.length; lane++) {
      const start = Math.max(arrival, free[lane]!);
      for (const s of [start, Math.max(start, knownAt)]) {
        const cached = readyBy(s);
        const end = s + prefillWallMs(r.inputLength - cached * TRACE_BLOCK_TOKENS, o);
        if (end < best.end) best = { end, lane, computedFrom: cached };
      }
    }
    free[best.lane] = best.end;
    for (let k = best.computedFrom; k < ids.length; k++)
      ready.set(ids[k]!, Math.min(ready.get(ids[k]!) ?? Infinity, best.end));
    return best.end - arrival;
  });
}

/** One row per cell: kv, the best peer, and the floor (trace rebuilt from the cell's workload). */
export function floorTable(cells: readonly SuiteCell[]): string {
  const f = (x: number | undefined, d = 0) =>
    x !== undefined && Number.isFinite(x) ? x.toFixed(d) : "-";
  const rows = cells.map((c) => {
    const w = suiteWorkloads(c.report.requests).find((x) => x.name === c.workload);
    const { kv, best90: best } = judgeCell(c);
    if (!w)
      return [
        c.workload,
        String(c.routers),
        String(c.restarts),
        `×${1 / c.arrival_scale}`,
        f(kv?.ttft_ms.p90),
        "-",
        "-",
        "-",
        "-",
        "-",
        "-",
      ];
    const fl = ttftFloor(w.trace(), {
      engines: c.report.engines,
      speedup: c.report.speedup,
      arrivalScale: c.arrival_scale,
      prefillUsPerToken: SUITE_TIMING.prefillUsPerToken,
      prefillOverheadMs: DEFAULT_TIMING.prefillOverheadMs,
    });
    // Below 1, no policy can reach 0.8 × the best peer; near 1, only a policy at the floor itself.
    const room = best ? ((0.8 * best[1].ttft_ms.p90) / fl.floor.p90).toFixed(2) : "-";
    return [
      c.workload,
      String(c.routers),
      String(c.restarts),
      `×${1 / c.arrival_scale}`,
      f(kv?.ttft_ms.p90),
      best ? `${f(best[1].ttft_ms.p90)} ${best[0]}` : "-",
      f(fl.floor.p90),
      f(fl.pooled.p90),
      f(fl.pooledCausal.p90),
      kv ? (kv.ttft_ms.p90 / fl.floor.p90).toFixed(2) : "-",
      room,
    ];
  });
  return textTable(
    [
      "workload",
      "N",
      "restarts",
      "load",
      "kv p90",
      "best peer p90",
      "floor p90",
      "pooled p90",
      "pooled causal p90",
      "kv ÷ floor",
      "0.8 × best peer ÷ floor",
    ],
    rows,
  );
}

if (import.meta.main) {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error("usage: bun bench/replay/ttft-floor.ts SUITE.json [SUITE2.json ...]");
    process.exit(2);
  }
  const runs = files.map((f) => JSON.parse(readFileSync(f, "utf8")) as SuiteCell[]);
  console.log(floorTable(runs.length === 1 ? runs[0]! : medianCells(runs).cells));
}
