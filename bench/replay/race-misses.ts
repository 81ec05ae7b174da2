/**
 * `bun bench/replay/race-misses.ts ACCESS_LOG ENGINE_LOG`: which of kv's TTFT predictions missed,
 * which way, and what the engine had queued ahead of them that the deciding router did not count.
 *
 * It joins two logs on the request id: the routers' access lines (`--log-format json`: each
 * request's `predicted_ttft_ms` beside its `ttft_ms`) and the simulated engines' request log
 * (`mocker --request-log`: when each request arrived at the engine, got its rank's prefill lane
 * and answered, and what it computed). The replay names every request after the router it sent it
 * to (replay.ts, replayRequestId), so for each miss it can say whether the requests queued ahead
 * of it on the engine came through another router, and how long before it they reached the engine.
 *
 * Why: with several routers, a burst that arrives at one instant is split across them, and each
 * decides before the others' bookings reach it through the load sync. The Mooncake traces come in
 * such bursts (timestamps on a 3 s grid, about ten requests on each). A request decided in such a
 * race waits behind prompts its router never saw; this says how many of the misses are that.
 *
 * Replay with both logs on:
 *   bun bench/replay/run.ts --routers 4 --policies kv --verbose --router-arg=--log-format \
 *     --router-arg=json --engine-arg=--request-log --engine-arg=ENGINE_LOG 2> ACCESS_LOG
 * Requests in the first third (by arrival; the warm-up's included) are left out, as in
 * pred-err-phases.ts: a fresh cluster's first first tokens come late.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { textTable } from "../support/text-table.ts";
import { accessLinesOf, jsonLinesOf } from "./pred-err-phases.ts";
import { percentile } from "./stats.ts";

/** One access line that carries a prediction and a TTFT. */
export interface Decision {
  readonly requestId: string;
  readonly worker: string;
  readonly dpRank: number;
  readonly predictedMs: number;
  readonly observedMs: number;
}

/** One engine request-log line (epoch ms). */
export interface EngineRequest {
  readonly requestId: string;
  readonly worker: string;
  readonly dpRank: number;
  readonly arrivedAt: number;
  readonly prefillStartedAt: number;
  readonly firstTokenAt: number;
  readonly computedTokens: number;
}

export function decisionsOf(text: string): Decision[] {
  const out: Decision[] = [];
  for (const o of accessLinesOf(text)) {
    if (o.msg !== "request") continue;
    const { request_id: id, worker, dp_rank: rank, predicted_ttft_ms: p, ttft_ms: t } = o;
    if (
      typeof id !== "string" ||
      typeof worker !== "string" ||
      typeof rank !== "number" ||
      typeof p !== "number" ||
      typeof t !== "number" ||
      !(t > 0)
    )
      continue;
    out.push({ requestId: id, worker, dpRank: rank, predictedMs: p, observedMs: t });
  }
  return out;
}

export function engineRequestsOf(text: string): EngineRequest[] {
  const out: EngineRequest[] = [];
  for (const o of jsonLinesOf(text)) {
    const {
      request_id: id,
      worker,
      dp_rank: rank,
      arrived_at: a,
      prefill_started_at: s,
      first_token_at: f,
      computed_tokens: c,
    } = o;
    if (typeof id !== "string" || typeof worker !== "string" || typeof rank !== "number") continue;
    if (
      typeof a !== "number" ||
      typeof s !== "number" ||
      typeof f !== "number" ||
      typeof c !== "number"
    )
      continue;
    out.push({
      requestId: id,
      worker,
      dpRank: rank,
      arrivedAt: a,
      prefillStartedAt: s,
      firstTokenAt: f,
      computedTokens: c,
    });
  }
  return out;
}

/** The router a replay request went to (replay.ts, replayRequestId), or undefined for another id. */
export function routerOf(requestId: string): number | undefined {
  const m = /^replay-\d+-r(\d+)-\d+$/.exec(requestId);
  return m ? Number(m[1]) : undefined;
}

/** How long before a request its youngest rival reached the engine: the buckets' upper bounds (ms). */
export const RACE_BUCKETS = [1, 5, 20] as const;

export interface Miss {
  readonly decision: Decision;
  readonly engine: EngineRequest;
  /** predicted ÷ observed − 1. */
  readonly error: number;
  /** Requests in the engine (arrived, not answered) when this one arrived, sent through another router. */
  readonly othersAhead: number;
  /** Of those, how long (ms) before this one the youngest arrived; undefined when none. */
  readonly youngestOtherMs: number | undefined;
  /** Requests in the engine when this one arrived, sent through this request's own router. */
  readonly ownAhead: number;
}

/** Every joined request, in the order it reached its engine, with what was ahead of it there. */
export function joinRequests(
  decisions: readonly Decision[],
  engine: readonly EngineRequest[],
): Miss[] {
  const byId = new Map(engine.map((e) => [e.requestId, e]));
  const byRank = new Map<string, EngineRequest[]>();
  for (const e of engine) {
    const k = `${e.worker}:${e.dpRank}`;
    let list = byRank.get(k);
    if (list === undefined) byRank.set(k, (list = []));
    list.push(e);
  }
  const out: Miss[] = [];
  for (const d of decisions) {
    const e = byId.get(d.requestId);
    if (e === undefined) continue;
    const router = routerOf(d.requestId);
    let othersAhead = 0;
    let ownAhead = 0;
    let youngestOtherMs: number | undefined;
    for (const x of byRank.get(`${e.worker}:${e.dpRank}`) ?? []) {
      if (x === e || !(x.arrivedAt < e.arrivedAt) || !(x.firstTokenAt > e.arrivedAt)) continue;
      // A request the replay did not name (the warm-up's) counts as another router's: which router sent it is unknown.
      const xRouter = routerOf(x.requestId);
      if (router !== undefined && xRouter === router) {
        ownAhead++;
        continue;
      }
      othersAhead++;
      const gap = e.arrivedAt - x.arrivedAt;
      if (youngestOtherMs === undefined || gap < youngestOtherMs) youngestOtherMs = gap;
    }
    out.push({
      decision: d,
      engine: e,
      error: d.predictedMs / d.observedMs - 1,
      othersAhead,
      youngestOtherMs,
      ownAhead,
    });
  }
  return out.sort((a, b) => a.engine.arrivedAt - b.engine.arrivedAt);
}

/** The bucket a request falls in by its youngest rival ahead: "none", "< 1 ms", …, "≥ 20 ms". */
export function raceBucket(m: Miss): string {
  if (m.youngestOtherMs === undefined) return "none";
  for (const b of RACE_BUCKETS) if (m.youngestOtherMs < b) return `< ${b} ms`;
  return `≥ ${RACE_BUCKETS[RACE_BUCKETS.length - 1]} ms`;
}

export const BUCKET_NAMES = [
  "none",
  ...RACE_BUCKETS.map((b) => `< ${b} ms`),
  `≥ ${RACE_BUCKETS[RACE_BUCKETS.length - 1]} ms`,
];

export interface ClassSummary {
  readonly n: number;
  readonly observedMs: number;
  readonly predictedMs: number;
  /** Engine: from arrival to the prefill lane (the queue ahead, as the engine lived it). */
  readonly queuedMs: number;
  /** Engine: from the prefill lane to the first token (its own prefill). */
  readonly ownMs: number;
  /** Counts per race bucket (BUCKET_NAMES). */
  readonly buckets: ReadonlyMap<string, number>;
}

export function summarizeClass(ms: readonly Miss[]): ClassSummary {
  const med = (xs: number[]) =>
    xs.length === 0
      ? NaN
      : percentile(
          xs.sort((a, b) => a - b),
          50,
        );
  const buckets = new Map<string, number>(BUCKET_NAMES.map((b) => [b, 0]));
  for (const m of ms) buckets.set(raceBucket(m), buckets.get(raceBucket(m))! + 1);
  return {
    n: ms.length,
    observedMs: med(ms.map((m) => m.decision.observedMs)),
    predictedMs: med(ms.map((m) => m.decision.predictedMs)),
    queuedMs: med(ms.map((m) => m.engine.prefillStartedAt - m.engine.arrivedAt)),
    ownMs: med(ms.map((m) => m.engine.firstTokenAt - m.engine.prefillStartedAt)),
    buckets,
  };
}

/** Too low (predicted under 0.7 × observed), within 0.3, too high (over 1.3 ×). */
export function classes(ms: readonly Miss[]): { tooLow: Miss[]; within: Miss[]; tooHigh: Miss[] } {
  return {
    tooLow: ms.filter((m) => m.error < -0.3),
    within: ms.filter((m) => Math.abs(m.error) <= 0.3),
    tooHigh: ms.filter((m) => m.error > 0.3),
  };
}

if (import.meta.main) {
  const { positionals } = parseArgs({ allowPositionals: true, options: {} });
  const [accessFile, engineFile] = positionals;
  if (accessFile === undefined || engineFile === undefined)
    throw new Error("usage: bun bench/replay/race-misses.ts ACCESS_LOG ENGINE_LOG");
  const decisions = decisionsOf(readFileSync(accessFile, "utf8"));
  const engine = engineRequestsOf(readFileSync(engineFile, "utf8"));
  if (decisions.length === 0)
    throw new Error(
      `${accessFile}: no access lines with predicted_ttft_ms and ttft_ms (--policy kv --log-format json?)`,
    );
  if (engine.length === 0)
    throw new Error(`${engineFile}: no engine request-log lines (mocker --request-log?)`);
  const all = joinRequests(decisions, engine);
  const kept = all.slice(Math.floor(all.length / 3));
  const { tooLow, within, tooHigh } = classes(kept);
  const f = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : "-");
  const rows = (
    [
      ["predicted too low", tooLow],
      ["within 0.3", within],
      ["predicted too high", tooHigh],
    ] as const
  ).map(([name, ms]) => {
    const s = summarizeClass(ms);
    return [
      name,
      String(s.n),
      f(s.observedMs),
      f(s.predictedMs),
      f(s.queuedMs),
      f(s.ownMs),
      ...BUCKET_NAMES.map((b) => String(s.buckets.get(b))),
    ];
  });
  console.log(
    `${kept.length} requests joined (of ${all.length}; the first third left out); medians in ms; the last columns count requests by how long before them the youngest request from another router that was still in the engine ahead of them arrived there`,
  );
  console.log(
    textTable(
      [
        "",
        "n",
        "TTFT",
        "predicted",
        "engine queue",
        "own prefill",
        ...BUCKET_NAMES.map((b) => `rival ${b}`),
      ],
      rows,
    ),
  );
}
