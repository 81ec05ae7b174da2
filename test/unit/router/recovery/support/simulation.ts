/**
 * A seeded end-to-end run of the recovery driver against true engine streams.
 *
 * Time is discrete steps. Each step an engine rank may emit one event (store with a parent,
 * evict leaves, clear, or restart: ids back to 0, cache emptied, buffer emptied). Every
 * emitted event is dropped, or delivered after a random delay (so events reorder), and
 * sometimes delivered twice. Worker queries are answered a few steps after they are asked,
 * from the engine's state at answer time; backoff sleeps last ms/100 steps.
 *
 * Two assumptions, both documented in src/router/recovery/README.md:
 * - A restart fences delivery: events of the old process are delivered (or lost) before
 *   any event of the new one (a process restart takes far longer than transit).
 * - A process restarts only after emitting RESTART_MIN_LIFE events, so its new ids fall
 *   below the router's cursor by more than the restart margin.
 * At the end every rank emits one heartbeat Stored that is delivered reliably after
 * everything else: without a later event no router can learn that the tail was lost.
 */
import type { RouterEvent } from "../../../../../src/core/events.ts";
import { workerKey, type DpRank, type WorkerId } from "../../../../../src/core/ids.ts";
import { RecoveryDriver } from "../../../../../src/router/recovery/driver.ts";
import type {
  IndexSink,
  RecoveryStats,
  WorkerKvQueryResponse,
} from "../../../../../src/router/recovery/types.ts";
import { FakeEngineRank } from "./fake-engine.ts";
import { sorted } from "./model-index.ts";
import { mulberry32, pick, randInt } from "../../../../support/prng.ts";

export const RESTART_MIN_LIFE = 30n;

export interface SimParams {
  readonly workers: number;
  readonly ranks: number;
  readonly steps: number;
  readonly dropRate: number;
  readonly dupRate: number;
  readonly maxDelay: number;
  readonly restartRate: number;
  readonly clearRate: number;
  readonly engineBufferCapacity: number;
  readonly pendingLimit: number;
}

export interface SimResult {
  readonly params: SimParams;
  /** Engine truth per "w:r" (non-empty ranks only, sorted hashes). */
  readonly truth: Map<string, bigint[]>;
  readonly stats: RecoveryStats;
  readonly steps: number;
  readonly emitted: number;
}

export function paramsFor(seed: number): SimParams {
  const rng = mulberry32(seed ^ 0x5eed);
  const ranks = 1 + randInt(rng, 2);
  return {
    workers: 1 + randInt(rng, 3),
    ranks,
    steps: 80 + randInt(rng, 220),
    dropRate: pick(rng, [0, 0.05, 0.15, 0.3]),
    dupRate: pick(rng, [0, 0.05, 0.15]),
    maxDelay: pick(rng, [0, 1, 3, 6]),
    restartRate: pick(rng, [0, 0.02, 0.05]),
    clearRate: pick(rng, [0, 0.02, 0.05]),
    engineBufferCapacity: rng() < 0.75 ? 1024 : 8,
    pendingLimit: rng() < 0.75 ? 1024 : 2,
  };
}

/** Run one seed; the sink is the index under test. */
export async function simulate(
  seed: number,
  sink: IndexSink,
  params = paramsFor(seed),
): Promise<SimResult> {
  const rng = mulberry32(seed);
  const p = params;
  const engines: FakeEngineRank[] = [];
  for (let w = 0; w < p.workers; w++) {
    for (let r = 0; r < p.ranks; r++)
      engines.push(new FakeEngineRank(BigInt(1000 + w), r, p.engineBufferCapacity));
  }
  const byKey = new Map(engines.map((e) => [workerKey(e.workerId, e.dpRank), e]));
  const fence = new Map<FakeEngineRank, number>(engines.map((e) => [e, 0]));
  const lastScheduled = new Map<FakeEngineRank, number>(engines.map((e) => [e, 0]));

  let now = 0;
  let emitted = 0;
  let nextHash = 1n;
  let latestDelivery = 0;
  const deliveries = new Map<number, RouterEvent[]>();
  const timers = new Map<number, (() => void)[]>();
  let timersPending = 0;

  const at = <T>(m: Map<number, T[]>, t: number, x: T) => {
    const list = m.get(t);
    if (list === undefined) m.set(t, [x]);
    else list.push(x);
  };
  /** Runs `fn` `delay` (>= 1) steps from now: this step's timers may already have fired. */
  const timer = (delay: number, fn: () => void) => {
    timersPending += 1;
    at(timers, now + Math.max(1, delay), fn);
  };
  const deliverAt = (e: FakeEngineRank, ev: RouterEvent, t: number) => {
    const when = Math.max(t, fence.get(e)!);
    at(deliveries, when, ev);
    lastScheduled.set(e, Math.max(lastScheduled.get(e)!, when));
    latestDelivery = Math.max(latestDelivery, when);
  };
  const send = (e: FakeEngineRank, ev: RouterEvent) => {
    emitted += 1;
    if (rng() >= p.dropRate) deliverAt(e, ev, now + randInt(rng, p.maxDelay + 1));
    if (rng() < p.dupRate) deliverAt(e, ev, now + randInt(rng, 2 * p.maxDelay + 2));
  };

  // The worker answers from its state when the request reaches it (now or a step later);
  // the answer then travels back for a few steps while the engine moves on.
  const query = (w: WorkerId, r: DpRank, start?: bigint, end?: bigint) =>
    new Promise<WorkerKvQueryResponse>((resolve) => {
      const answer = () => {
        const e = byKey.get(workerKey(w, r));
        const resp: WorkerKvQueryResponse =
          e === undefined ? { kind: "error", message: "unknown rank" } : e.query(start, end);
        timer(1 + randInt(rng, 3), () => resolve(resp));
      };
      if (rng() < 0.5) answer();
      else timer(1, answer);
    });
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => timer(Math.max(1, Math.round(ms / 100)), resolve));

  const driver = new RecoveryDriver({ sink, query, sleep, pendingLimit: p.pendingLimit });
  for (const e of engines) if (rng() < 0.5) driver.addRank(e.workerId, e.dpRank);

  const storeOn = (e: FakeEngineRank) => {
    const blocks = e.blocks();
    const parent = blocks.length === 0 || rng() < 0.3 ? null : pick(rng, blocks);
    const n = 1 + randInt(rng, 3);
    const hashes: bigint[] = [];
    for (let i = 0; i < n; i++) hashes.push(nextHash++);
    return e.store(parent, hashes);
  };

  const engineStep = () => {
    const e = pick(rng, engines);
    const x = rng();
    if (e.nextId >= RESTART_MIN_LIFE && x < p.restartRate) {
      e.restart();
      fence.set(e, lastScheduled.get(e)! + 1);
      return;
    }
    if (x < p.restartRate + p.clearRate) return send(e, e.clear());
    const leaves = e.leaves();
    if (leaves.length > 0 && x < p.restartRate + p.clearRate + 0.3) {
      const victims = new Set([pick(rng, leaves), pick(rng, leaves)]);
      return send(e, e.remove([...victims]));
    }
    send(e, storeOn(e));
  };

  const tick = async () => {
    for (const ev of deliveries.get(now) ?? []) driver.onLiveEvent(ev);
    deliveries.delete(now);
    const due = timers.get(now) ?? [];
    timers.delete(now);
    timersPending -= due.length;
    for (const fn of due) fn();
    // Let recoveries run on; how far they get before the next step varies with the seed.
    const hops = 2 + randInt(rng, 12);
    for (let i = 0; i < hops; i++) await null;
    now += 1;
  };

  for (let s = 0; s < p.steps; s++) {
    if (rng() < 0.85) engineStep();
    await tick();
  }
  // Heartbeats: one reliable event per rank, after everything else.
  const hbAt = Math.max(latestDelivery, now) + 1;
  for (const e of engines) {
    emitted += 1;
    deliverAt(e, storeOn(e), hbAt);
  }
  const limit = now + 100_000;
  while (now <= latestDelivery || timersPending > 0 || driver.recovering > 0) {
    if (now > limit) throw new Error(`seed ${seed}: the driver did not settle`);
    await tick();
  }
  await driver.idle();

  const truth = new Map<string, bigint[]>();
  for (const e of engines) {
    const blocks = e.blocks();
    if (blocks.length > 0) truth.set(workerKey(e.workerId, e.dpRank), sorted(blocks));
  }
  return { params: p, truth, stats: driver.stats(), steps: now, emitted };
}
