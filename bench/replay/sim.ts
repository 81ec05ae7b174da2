/**
 * A deterministic, single-process timing simulation of the replay (no processes, no sockets,
 * trace time only), driving the router's real scheduler code (createPipeline + findBestMatch,
 * booked through a RequestLease on a LoadTracker, as the router does) against modelled engines: one FIFO prefill lane each, 1 ms + `prefillUsPerToken`
 * per uncached token, an LRU prefix cache of `kvBlocks` trace blocks checked when the prefill
 * starts and filled when it ends (as the simulated engine does; the router's precise index sees
 * the caches as KV events would, without their delay, and knows each engine's capacity as an engine
 * reports it), decode of `maxOutputTokens` steps. With `engine: "v1"` each engine instead steps as
 * vLLM V1's scheduler does (src/mocker/step-scheduler.ts on the engine-wire branch: a token budget
 * per step, running decodes first, prefill chunks in what is left; a step costs its decodes' time
 * plus its prompt tokens'), so first tokens wait for the decodes running there.
 *
 * Why: on the shared 2-core machine the real replay's TTFTs move ±30% run to run, more than the
 * differences between settings of one policy; choosing kv's defaults needs a measurement
 * without that noise. It is not the measurement of record (run.ts / suite.ts are): no HTTP, no
 * event delay, one router, no `approx`. `bun bench/replay/sim.ts --trace gen:agentic --sweep`.
 */
import { parseArgs } from "node:util";
import type { WorkerKey, WorkerWithDpRank } from "../../src/core/ids.ts";
import type { OverlapScores } from "../../src/core/overlap.ts";
import { schedulerConfig, type SchedulerConfig } from "../../src/router/choose/config.ts";
import { endpointsOf } from "../../src/router/choose/endpoints.ts";
import { findBestMatch } from "../../src/router/choose/find-best-match.ts";
import { LoadTracker } from "../../src/router/books/load-tracker.ts";
import { RequestLease } from "../../src/router/books/request-lease.ts";
import {
  decodeSampler,
  firstTokenSampler,
  queueAtBooking,
  TtftPredictor,
} from "../../src/router/books/ttft-predictor.ts";
import type { Pipeline } from "../../src/router/choose/types.ts";
import { countTraffic } from "../../src/router/routing-service.ts";
import { createIndexer } from "../../src/router/kv-index/indexer.ts";
import { createPipeline, isPolicyName } from "../../src/router/choose/registry.ts";
import { mulberry32 } from "../../test/support/prng.ts";
import { textTable } from "../support/text-table.ts";
import { idealHitRate } from "./oracle.ts";
import { KV_DEFAULTS } from "./sim-workloads.ts";
import { summarize } from "./stats.ts";
import { fullBlockIds, TRACE_BLOCK_TOKENS, uniqueFullBlocks, type TraceRequest } from "./trace.ts";

export interface SimOptions {
  engines: number;
  kvBlocks: number;
  prefillUsPerToken: number;
  decodeMsPerStep: number;
  maxOutputTokens: number;
  arrivalScale: number;
  seed: number;
  /**
   * Routers in front of the engines (default 1); arrival i goes to router i mod N. They share
   * active load at once (Redis sync without its delay); under `approx` each router knows only
   * its own decisions, as real approx routers do; under any other policy the index is the
   * engines' caches, which KV events give every router alike.
   */
  routers?: number;
  /**
   * Route request i to engine assignment[i] instead of asking the policy (booked the same way):
   * the offline oracle's decisions replayed in time, for the oracle's own TTFT.
   */
  assignment?: readonly number[];
  /**
   * Trace block ids each engine holds before the first request (engine e: warmBlocks[e]), as
   * if placed there ahead of time at no cost: what a copy made in advance would buy, an upper
   * bound for a policy that replicates hot prefixes (sim-agentic-tail.ts). The router's index
   * sees them, as it would see an engine's KV events.
   */
  warmBlocks?: readonly (readonly number[])[];
  /**
   * Mean of an exponential delay (ms) between an engine's first token and the router seeing it
   * (a busy router's event loop, the network): its books hold the prefill that long after the
   * engine finished. 0 (default): at once.
   */
  firstTokenDelayMs?: number;
  /**
   * "fifo" (default): one prefill lane per engine, decodes beside it and never in its way. "v1":
   * vLLM V1's steps (`v1BatchedTokens` per step, 8,192 by default; at most 64 running; a decode
   * step 1 + 0.02 × (decodes − 1) times `decodeMsPerStep`; 1 ms per prompt chunk).
   */
  engine?: "fifo" | "v1";
  v1BatchedTokens?: number;
  /**
   * Feed the routers' predictors what the router feeds them on the request path: the step time
   * each first token met, the inter-token gaps, each prefix group's arrivals. Off: they learn from
   * first tokens alone, as before running decodes and prefix groups were priced (the kv of 99be34e).
   */
  learnDecodes?: boolean;
  /**
   * Count each decision's prefix traffic as the router does (routing-service.ts countTraffic: the
   * group's arrivals and homes, new prefixes pending): default on; off with learnDecodes off is
   * the kv of 99be34e.
   */
  countTraffic?: boolean;
  /**
   * Count each answer's output tokens on its lease at its first token and at its end, as the
   * router's proxy does (its output blocks then hold KV in the books). Always on with
   * `learnDecodes`; off by default, as the studies before it ran.
   */
  countOutput?: boolean;
  /** Called as each request's first token comes (for studies of single decisions). */
  onFirstToken?: (
    i: number,
    x: {
      arrival: number;
      start: number;
      done: number;
      engine: number;
      uncached: number;
      predictedMs: number | undefined;
      predictedTokens: number | undefined;
      bookedUncached: number | undefined;
    },
  ) => void;
}

export interface SimResult {
  hit: number;
  ttft: { p50: number; p90: number; p99: number };
  /** |predicted ÷ observed TTFT − 1| over the requests the routers predicted (every policy's decisions carry a prediction). */
  predictorError: { p50: number; p90: number };
  workMaxOverMean: number;
  util: number;
  idle: number;
}

/** An engine's prefix cache of trace blocks, least recently used out first (also the shared cache of ttft-floor.ts's pooled reference with the cell's cache). */
export class Lru {
  readonly map = new Map<number, true>();
  constructor(readonly capacity: number) {}
  prefix(ids: readonly number[]): number {
    let n = 0;
    while (n < ids.length && this.map.has(ids[n]!)) n++;
    return n;
  }
  /** Last block first: parents stay more recent than children, so eviction takes leaves (as the simulated engine). */
  touch(ids: readonly number[]): void {
    for (let k = ids.length - 1; k >= 0; k--) {
      const id = ids[k]!;
      this.map.delete(id);
      this.map.set(id, true);
    }
    while (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value!);
  }
}

/** A binary min-heap of [time, seq, action]: ties in time run in insertion order. */
class Events {
  /** The time of the event being run. */
  now = 0;
  #h: [number, number, () => void][] = [];
  #seq = 0;
  push(t: number, f: () => void): void {
    const h = this.#h;
    h.push([t, this.#seq++, f]);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (less(h[p]!, h[i]!)) break;
      [h[p], h[i]] = [h[i]!, h[p]!];
      i = p;
    }
  }
  pop(): [number, () => void] | undefined {
    const h = this.#h;
    if (h.length === 0) return undefined;
    const top = h[0]!;
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && less(h[l]!, h[m]!)) m = l;
        if (r < h.length && less(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[m], h[i]] = [h[i]!, h[m]!];
        i = m;
      }
    }
    return [top[0], top[2]];
  }
}
const less = (a: [number, number, unknown], b: [number, number, unknown]) =>
  a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);

/** `makePipeline` replaces the named policy's pipeline (a variant under study); `policy` still names it. */
export function simulate(
  trace: readonly TraceRequest[],
  policy: string,
  config: SchedulerConfig,
  o: SimOptions,
  makePipeline?: () => Pipeline,
): SimResult {
  if (!isPolicyName(policy)) throw new Error(`unknown policy ${policy}`);
  const endpoints = endpointsOf(
    Array.from({ length: o.engines }, (_, i) => ({ workerId: BigInt(i + 1) })),
  );
  const keys: WorkerKey[] = endpoints.map((e) => e.key);
  const tracker = new LoadTracker({ blockSize: config.blockSize });
  tracker.updateWorkers(endpoints.map((e) => e.worker));
  // The engines' KV capacity, as the router learns it from each engine (kv_blocks, num_gpu_blocks).
  for (const e of endpoints) tracker.setKvCapacity(e.worker, o.kvBlocks);
  // One pipeline per router: the peers' own trees (sglang, prodstack-prefix, llm-d) are per process.
  const pipelines = Array.from(
    { length: Math.max(1, o.routers ?? 1) },
    () => makePipeline?.() ?? createPipeline(policy, config),
  );
  // One predictor per router, as in the router: each learns from the first tokens of its own requests.
  const predictors = pipelines.map(() => new TtftPredictor({ blockSize: config.blockSize }));
  const errors: number[] = [];
  const rng = mulberry32(o.seed);
  const caches = keys.map(() => new Lru(o.kvBlocks));
  o.warmBlocks?.forEach((ids, e) => caches[e]?.touch(ids));
  // Engine e is worker e + 1 (endpoints above): its cache's size, as the index answers indexBlocksOf.
  const indexBlocksOf = (w: WorkerWithDpRank) => caches[Number(w.workerId) - 1]?.map.size ?? 0;
  const lanes = keys.map(() => ({ busy: false, queue: [] as (() => void)[] }));
  const work = new Array<number>(o.engines).fill(0);
  const ttfts: number[] = [];
  let cachedBlocks = 0;
  let promptBlocks = 0;
  const ev = new Events();
  const approxIndexes =
    policy === "approx"
      ? Array.from({ length: Math.max(1, o.routers ?? 1) }, () => createIndexer("approximate"))
      : undefined;
  const t0 = trace[0]?.timestamp ?? 0;
  let lastT = 0;

  // vLLM V1's steps per engine (o.engine === "v1").
  interface StepEntry {
    begin(): number;
    prefillLeft: number;
    generated: number;
    readonly out: number;
    first(at: number): void;
    end(at: number): void;
  }
  const v1 = keys.map(() => ({
    waiting: [] as StepEntry[],
    running: [] as StepEntry[],
    stepping: false,
  }));
  const budgetOf = o.v1BatchedTokens ?? 8192;
  const step = (e: number) => {
    const x = v1[e]!;
    if (x.stepping || (x.waiting.length === 0 && x.running.length === 0)) return;
    const work: [StepEntry, number][] = [];
    let budget = budgetOf;
    let decodes = 0;
    let chunks = 0;
    let tokens = 0;
    for (const r of x.running) {
      if (budget <= 0) break;
      const n = r.prefillLeft > 0 ? Math.min(r.prefillLeft, budget) : 1;
      if (r.prefillLeft > 0) {
        chunks++;
        tokens += n;
      } else decodes++;
      work.push([r, n]);
      budget -= n;
    }
    while (x.waiting.length > 0 && budget > 0 && x.running.length < 64) {
      const r = x.waiting.shift()!;
      r.prefillLeft = Math.max(1, r.begin());
      x.running.push(r);
      const n = Math.min(r.prefillLeft, budget);
      work.push([r, n]);
      budget -= n;
      chunks++;
      tokens += n;
    }
    const ms =
      (decodes > 0 ? o.decodeMsPerStep * (1 + 0.02 * (decodes - 1)) : 0) +
      chunks +
      (tokens * o.prefillUsPerToken) / 1000;
    x.stepping = true;
    ev.push(ev.now + ms, () => {
      x.stepping = false;
      for (const [r, n] of work) {
        if (r.prefillLeft > 0) {
          r.prefillLeft -= n;
          if (r.prefillLeft > 0) continue;
          r.first(ev.now);
        }
        r.generated++;
        if (r.generated >= r.out) {
          x.running.splice(x.running.indexOf(r), 1);
          r.end(ev.now);
        }
      }
      step(e);
    });
  };

  const runLane = (e: number) => {
    const lane = lanes[e]!;
    if (lane.busy) return;
    const next = lane.queue.shift();
    if (next) {
      lane.busy = true;
      next();
    }
  };

  trace.forEach((r, i) => {
    const arrival = (r.timestamp - t0) * o.arrivalScale;
    ev.push(arrival, () => {
      const ids = fullBlockIds(r);
      const seqHashes = BigUint64Array.from(ids, (id) => BigInt(id) + 1n);
      const approxIndex = approxIndexes?.[i % approxIndexes.length];
      let overlaps: OverlapScores;
      if (approxIndex) overlaps = approxIndex.findMatches(seqHashes, arrival);
      else {
        const scores = new Map<WorkerKey, number>();
        const treeSizes = new Map<WorkerKey, number>();
        // As the router's index answers: tree sizes for the engines that match (Dynamo's
        // treeSizes), every engine's on demand (indexBlocksOf).
        caches.forEach((c, e) => {
          const d = c.prefix(ids);
          if (d > 0) {
            scores.set(keys[e]!, d);
            treeSizes.set(keys[e]!, c.map.size);
          }
        });
        overlaps = { scores, treeSizes, frequencies: [], indexBlocksOf };
      }
      const predictor = predictors[i % predictors.length]!;
      const assigned = o.assignment?.[i];
      const sel = findBestMatch({
        overlaps,
        seqHashes,
        isl: r.inputLength,
        endpoints: assigned === undefined ? endpoints : [endpoints[assigned]!],
        tracker,
        pipeline: pipelines[i % pipelines.length]!,
        config,
        now: arrival,
        rng,
        sessionId: r.sessionId,
        ttft: predictor,
        otherRouters: pipelines.length - 1,
      });
      const booking = {
        requestId: `r${i}`,
        worker: sel.worker,
        seqHashes,
        isl: r.inputLength,
        overlap: sel.overlapBlocks,
      };
      const queue = queueAtBooking(tracker.slotOf(sel.key));
      const learn = o.learnDecodes === true;
      const count = learn || o.countOutput === true;
      const sample = firstTokenSampler(
        predictor,
        {
          key: sel.key,
          bookedAt: arrival,
          tokens: sel.ttftTokens ?? 0,
          ownTokens: sel.uncachedTokens,
          predictedMs: sel.predictedTtftMs,
          stepMs: learn ? sel.stepMs : undefined,
          queue,
        },
        (e) => errors.push(e),
      );
      // As the router does (routing-service.ts): the group's arrival, or a new prefix started.
      if (learn || o.countTraffic !== false)
        countTraffic(predictor.traffic, sel, arrival, seqHashes.length);
      const ended = learn
        ? decodeSampler(predictor, sel.key, arrival, tracker.slotOf(sel.key))
        : undefined;
      const lease = RequestLease.book(
        tracker,
        booking,
        arrival,
        config.blockSize,
        () => ev.now,
        rng,
        sample,
        ended,
      );
      const e = keys.indexOf(sel.key);
      approxIndex?.recordDecision(seqHashes, seqHashes, sel.worker, arrival);
      const out = Math.min(r.outputLength, o.maxOutputTokens);
      const firstToken = (at: number) => {
        const seen = o.firstTokenDelayMs ? -Math.log(1 - rng()) * o.firstTokenDelayMs : 0;
        const tell = () => {
          lease.firstToken();
          if (count) lease.outputTokens(1);
        };
        if (seen > 0) ev.push(at + seen, tell);
        else tell();
      };
      if (o.engine === "v1") {
        let start = 0;
        let uncached = 0;
        v1[e]!.waiting.push({
          prefillLeft: 0,
          generated: 0,
          out: Math.max(1, out),
          begin: () => {
            start = ev.now;
            const cached = caches[e]!.prefix(ids);
            caches[e]!.touch(ids.slice(0, cached));
            uncached = r.inputLength - cached * TRACE_BLOCK_TOKENS;
            work[e]! += uncached;
            cachedBlocks += cached;
            promptBlocks += ids.length;
            return uncached;
          },
          first: (at) => {
            caches[e]!.touch(ids);
            ttfts.push(at - arrival);
            o.onFirstToken?.(i, {
              arrival,
              start,
              done: at,
              engine: e,
              uncached,
              predictedMs: sel.predictedTtftMs,
              predictedTokens: sel.ttftTokens,
              bookedUncached: sel.uncachedTokens,
            });
            firstToken(at);
          },
          end: () => {
            if (count) lease.outputTokens(out);
            lease.free();
          },
        });
        step(e);
        return;
      }
      lanes[e]!.queue.push(() => {
        const start = ev.now;
        const cached = caches[e]!.prefix(ids);
        caches[e]!.touch(ids.slice(0, cached));
        const uncached = r.inputLength - cached * TRACE_BLOCK_TOKENS;
        work[e]! += uncached;
        cachedBlocks += cached;
        promptBlocks += ids.length;
        const done = start + 1 + (uncached * o.prefillUsPerToken) / 1000;
        ev.push(done, () => {
          caches[e]!.touch(ids);
          ttfts.push(done - arrival);
          o.onFirstToken?.(i, {
            arrival,
            start,
            done,
            engine: e,
            uncached,
            predictedMs: sel.predictedTtftMs,
            predictedTokens: sel.ttftTokens,
            bookedUncached: sel.uncachedTokens,
          });
          firstToken(done);
          lanes[e]!.busy = false;
          runLane(e);
          ev.push(done + Math.max(0, out - 1) * o.decodeMsPerStep, () => {
            if (count) lease.outputTokens(out);
            lease.free();
          });
        });
      });
      runLane(e);
    });
  });
  for (let x = ev.pop(); x; x = ev.pop()) {
    ev.now = x[0];
    lastT = x[0];
    x[1]();
  }
  const mean = work.reduce((s, w) => s + w, 0) / work.length;
  const t = summarize(ttfts);
  const err = summarize(errors);
  return {
    hit: promptBlocks ? cachedBlocks / promptBlocks : 0,
    ttft: { p50: t.p50, p90: t.p90, p99: t.p99 },
    predictorError: { p50: err.p50, p90: err.p90 },
    workMaxOverMean: mean ? Math.max(...work) / mean : 0,
    util:
      (work.reduce((s, w) => s + w, 0) * o.prefillUsPerToken) /
      1000 /
      (o.engines * Math.max(1, lastT)),
    idle: work.filter((w) => w === 0).length,
  };
}

if (import.meta.main) {
  const { traceOf } = await import("./trace-spec.ts");
  const { values: a } = parseArgs({
    options: {
      trace: { type: "string", default: "gen:chat" },
      requests: { type: "string", default: "2000" },
      engines: { type: "string", default: "8" },
      "kv-fraction": { type: "string", default: "0.5" },
      policies: {
        type: "string",
        default:
          "kv,dynamo,sglang,llm-d,prodstack-prefix,prodstack-session,least-loaded,round-robin",
      },
      "arrival-scale": { type: "string", default: "1" },
      sweep: { type: "boolean", default: false },
      "sweep-credits": { type: "string", default: "0,8,32,128" },
      "sweep-wait-factors": { type: "string", default: "0,1.1,1.2,1.5,2" },
      "sweep-slacks": { type: "string", default: "0,1,2,4" },
      seed: { type: "string", default: "1" },
      routers: { type: "string", default: "1" },
    },
  });
  const { trace, name } = traceOf(a.trace!, Number(a.requests), Number(a.seed));
  const engines = Number(a.engines);
  const kvBlocks = Math.max(
    1,
    Math.ceil((uniqueFullBlocks(trace) * Number(a["kv-fraction"])) / engines),
  );
  const o: SimOptions = {
    engines,
    kvBlocks,
    prefillUsPerToken: 200,
    decodeMsPerStep: 20,
    maxOutputTokens: 32,
    arrivalScale: Number(a["arrival-scale"]),
    seed: Number(a.seed),
    routers: Number(a.routers),
  };
  const base = KV_DEFAULTS;
  const entries: [string, string, Partial<SchedulerConfig>][] = a
    .policies!.split(",")
    .map((p) => [p, p, {}]);
  if (a.sweep) {
    for (const c of a["sweep-credits"]!.split(",").map(Number))
      for (const f of a["sweep-wait-factors"]!.split(",").map(Number))
        for (const s of f === 0 ? [0] : a["sweep-slacks"]!.split(",").map(Number))
          entries.push([
            `kv c=${c} f=${f} s=${s}`,
            "kv",
            { overlapCredit: c, prefillWaitFactor: f === 0 ? null : f, prefillWaitQueueShare: s },
          ]);
  }
  const rows = entries.map(([label, policy, over]) => {
    const r = simulate(trace, policy, schedulerConfig({ ...base, ...over }), o);
    return [
      label,
      r.hit.toFixed(3),
      r.ttft.p50.toFixed(0),
      r.ttft.p90.toFixed(0),
      r.ttft.p99.toFixed(0),
      r.workMaxOverMean.toFixed(2),
      String(r.idle),
      r.util.toFixed(2),
      r.predictorError.p50.toFixed(2),
      r.predictorError.p90.toFixed(2),
    ];
  });
  console.log(
    `sim ${name}: ${trace.length} requests, ${engines} engines × ${kvBlocks} blocks, ideal hit ${idealHitRate(trace).toFixed(3)}, arrival scale ${a["arrival-scale"]}, ${a.routers} router(s) (TTFT in trace ms)`,
  );
  console.log(
    textTable(
      [
        "policy",
        "hit",
        "ttft p50",
        "p90",
        "p99",
        "work max/mean",
        "idle",
        "util",
        "pred err p50",
        "p90",
      ],
      rows,
    ),
  );
}
