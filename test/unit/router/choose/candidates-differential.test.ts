/**
 * The allocation-free candidate builder (candidates.ts, list-view.ts, the predictor's
 * msPerTokenOf/tokensBefore, the rank's kept prefill head) against the builder it replaced
 * (reference-candidates.ts), over seeded random fleets: every field of every candidate must be
 * identical (Object.is), and the kv, kv-blocks and least-loaded pipelines must price and choose
 * the same, with fresh candidates and with ones reused from earlier decisions (candidate-pool.ts).
 * Fleets mix dp ranks, untracked and duplicated endpoints, ranks with and without a KV
 * capacity, learned per-rank speeds or none, requests booked, completed and freed and ranks
 * joining and leaving the tracker as time moves.
 * A failure names its seed and decision.
 */
import { describe, expect, test } from "bun:test";
import type { WorkerKey } from "../../../../src/core/ids.ts";
import type { OverlapScores } from "../../../../src/core/overlap.ts";
import { LoadTracker } from "../../../../src/router/books/load-tracker.ts";
import { TtftPredictor } from "../../../../src/router/books/ttft-predictor.ts";
import { CandidatePool } from "../../../../src/router/choose/candidate-pool.ts";
import { buildCandidates } from "../../../../src/router/choose/candidates.ts";
import { schedulerConfig } from "../../../../src/router/choose/config.ts";
import { endpoint, endpointsOf } from "../../../../src/router/choose/endpoints.ts";
import { runPipeline } from "../../../../src/router/choose/pipeline.ts";
import { createPipeline, type PolicyName } from "../../../../src/router/choose/registry.ts";
import type {
  Candidate,
  Endpoint,
  SchedulingContext,
} from "../../../../src/router/choose/types.ts";
import { chain, seededRng } from "./helpers.ts";
import { referenceCandidates } from "./reference-candidates.ts";

const SEEDS = 50;
const DECISIONS_PER_SEED = 20;
const POLICIES: PolicyName[] = ["kv", "kv-blocks", "least-loaded"];
const FIELDS: (keyof Candidate)[] = [
  "endpoint",
  "key",
  "overlapBlocks",
  "treeSize",
  "tracked",
  "prefillTokens",
  "decodeBlocks",
  "activePrefillTokens",
  "activeDecodeBlocks",
  "activeRequests",
  "prefillingRequests",
  "lastBookedAt",
  "uncachedTokens",
  "predictedTtftMs",
  "ttftTokens",
  "cost",
];

interface Booked {
  readonly id: string;
  readonly key: WorkerKey;
  /** Prefill tokens booked: max(0, isl − overlap·bs). */
  readonly tokens: number;
  readonly bookedAt: number;
  prefilling: boolean;
}

/** One seed's world, then DECISIONS_PER_SEED decisions as it changes; returns the differences found. */
function runSeed(seed: number): string[] {
  const rng = seededRng(seed);
  const int = (n: number) => Math.floor(rng() * n);
  const bs = [1, 4, 16][int(3)]!;
  const workers = 1 + int(24);
  const listed: Endpoint[] = endpointsOf(
    Array.from({ length: workers }, (_, i) => ({
      workerId: BigInt(i + 1),
      dpSize: rng() < 0.25 ? 1 + int(3) : 1,
    })),
  );
  // The same rank listed twice (a fresh object under the same key) takes the per-endpoint lookups.
  if (rng() < 0.1) listed.push(endpoint(listed[0]!.worker.workerId, listed[0]!.worker.dpRank));
  const tracker = new LoadTracker({ blockSize: bs });
  const trackedSubset = () => {
    const ws = listed.filter(() => rng() < 0.85).map((e) => e.worker);
    ws.push({ workerId: 999n, dpRank: 0 }); // tracked, never listed
    return ws;
  };
  let trackedKeys = trackedSubset();
  tracker.updateWorkers(trackedKeys);
  for (const w of trackedKeys) if (rng() < 0.4) tracker.setKvCapacity(w, 2 + int(60));
  const ttft = rng() < 0.2 ? undefined : new TtftPredictor({ blockSize: bs });
  if (ttft !== undefined && rng() < 0.7) {
    const slow = new Set(listed.filter(() => rng() < 0.3).map((e) => e.key));
    for (let k = 0; k < 200; k++) {
      const e = listed[int(listed.length)]!;
      const tokens = 50 + int(4000);
      ttft.observe({
        key: e.key,
        bookedAt: 0,
        at: 1 + tokens * (slow.has(e.key) ? 0.04 : 0.01) * (0.9 + 0.2 * rng()),
        tokens,
      });
    }
  }
  const keysOf = (ws: typeof trackedKeys) =>
    ws.map((w) => `${w.workerId}:${w.dpRank}` as WorkerKey);
  let trackedList = keysOf(trackedKeys);
  let booked: Booked[] = [];
  const families = Array.from({ length: 4 }, (_, f) => chain(100 + f, 8 + int(40)));
  const promptOf = (): BigUint64Array => {
    const fam = families[int(families.length)]!;
    const shared = int(fam.length + 1);
    const own = int(24);
    const h = new BigUint64Array(shared + own);
    h.set(fam.subarray(0, shared));
    h.set(chain(seed * 1000 + int(1e6), own, shared), shared);
    return h;
  };
  const pipelines = POLICIES.map((name) => {
    const config = schedulerConfig({ blockSize: bs });
    return {
      name,
      config,
      reference: createPipeline(name, config),
      fast: createPipeline(name, config),
      rngSeed: seed * 7 + 1,
    };
  });
  const rngsOf = pipelines.map((p) => [seededRng(p.rngSeed), seededRng(p.rngSeed)] as const);
  const pool = new CandidatePool();
  const diffs: string[] = [];
  let now = 1;
  let nextId = 0;
  for (let d = 0; d < DECISIONS_PER_SEED && diffs.length === 0; d++) {
    const where = `seed ${seed} decision ${d}`;
    // Now and then ranks join and leave the tracker (their requests go with them), so a list
    // position turns from tracked to untracked and back between decisions.
    if (rng() < 0.15) {
      trackedKeys = trackedSubset();
      tracker.updateWorkers(trackedKeys);
      trackedList = keysOf(trackedKeys);
      booked = booked.filter((b) => trackedList.includes(b.key));
    }
    // The world moves: bookings, first tokens, frees.
    for (let k = int(6); k > 0; k--) {
      const key = trackedList[int(trackedList.length)]!;
      const hashes = rng() < 0.1 ? null : promptOf();
      const isl = Math.max(1, (hashes?.length ?? 1 + int(20)) * bs - int(bs));
      const overlap = int((hashes?.length ?? 0) + 1);
      const id = `r${nextId++}`;
      const [workerId, rank] = key.split(":");
      tracker.addRequest(
        {
          requestId: id,
          worker: { workerId: BigInt(workerId!), dpRank: Number(rank) },
          seqHashes: hashes,
          isl,
          overlap,
        },
        now,
      );
      booked.push({
        id,
        key,
        tokens: Math.max(0, isl - overlap * bs),
        bookedAt: now,
        prefilling: Math.max(0, isl - overlap * bs) > 0,
      });
      now += rng() * 5;
    }
    for (const b of booked) {
      if (b.prefilling && rng() < 0.2) {
        tracker.markPrefillCompleted(b.id, now);
        b.prefilling = false;
      }
    }
    for (let i = booked.length - 1; i >= 0; i--) {
      if (rng() < 0.1) {
        tracker.free(booked[i]!.id, now);
        booked.splice(i, 1);
      }
    }
    // The kept head of each rank's prefill queue is the oldest booking still prefilling.
    for (const key of trackedList) {
      const head = booked.find((b) => b.key === key && b.prefilling);
      const got = tracker.slotOf(key)!.prefillHead();
      const want =
        head === undefined ? undefined : { tokens: head.tokens, bookedAt: head.bookedAt };
      if (JSON.stringify(got) !== JSON.stringify(want))
        diffs.push(
          `${where}: prefill head of ${key} ${JSON.stringify(got)} vs ${JSON.stringify(want)}`,
        );
    }
    const hashes = rng() < 0.1 ? null : promptOf();
    const isl = Math.max(1, (hashes?.length ?? 1 + int(20)) * bs - int(bs));
    const scores = new Map<WorkerKey, number>();
    const treeSizes = new Map<WorkerKey, number>();
    for (const e of listed) if (rng() < 0.3) scores.set(e.key, 1 + int(hashes?.length ?? 4));
    for (const e of listed) if (rng() < 0.5) treeSizes.set(e.key, int(5000));
    if (rng() < 0.3) scores.set("4242:0" as WorkerKey, 3); // a rank the list does not have
    const overlaps: OverlapScores = { scores, treeSizes, frequencies: [] };
    const ctxOf = (
      inflightOverlap: boolean,
      creditKeptPrefix: boolean,
      r: () => number,
    ): SchedulingContext => ({
      request: { isl, seqHashes: hashes, overlaps },
      blockSize: bs,
      overlapScoreWeight: 1,
      temperature: 0,
      inflightOverlap,
      creditKeptPrefix,
      now,
      rng: r,
      ttft,
    });
    const inflight = rng() < 0.5;
    const kept = rng() < 0.5;
    const ref = referenceCandidates(ctxOf(inflight, kept, rng), listed, tracker);
    const fresh = buildCandidates(ctxOf(inflight, kept, rng), listed, tracker);
    // Reused objects last held another decision's values (another policy's, too): none may leak.
    const reused = buildCandidates(ctxOf(inflight, kept, rng), listed, tracker, pool);
    for (const [how, got] of [
      ["fresh", fresh],
      ["pooled", reused],
    ] as const) {
      if (ref.length !== got.length)
        diffs.push(`${where} ${how}: ${got.length} candidates vs ${ref.length}`);
      for (let i = 0; i < ref.length && i < got.length; i++) {
        for (const f of FIELDS)
          if (!Object.is(got[i]![f], ref[i]![f]))
            diffs.push(
              `${where} ${how} candidate ${i} ${f}: ${String(got[i]![f])} vs ${String(ref[i]![f])}`,
            );
        const speed = ttft === undefined ? undefined : ttft.speed(ref[i]!.key).msPerToken;
        if (!Object.is(got[i]!.msPerToken, speed))
          diffs.push(
            `${where} ${how} candidate ${i} msPerToken: ${got[i]!.msPerToken} vs ${speed}`,
          );
      }
    }
    // Whole decisions: each policy over each builder's candidates, fresh candidates per policy.
    pipelines.forEach((p, k) => {
      const [rngRef, rngFast] = rngsOf[k]!;
      const flag = p.reference.inflightOverlap ?? p.config.inflightOverlap;
      const credit = p.reference.predictsTtft === true;
      const ctxRef = ctxOf(flag, credit, rngRef);
      const ctxFast = ctxOf(flag, credit, rngFast);
      const a = runPipeline(p.reference, ctxRef, referenceCandidates(ctxRef, listed, tracker));
      const b = runPipeline(p.fast, ctxFast, buildCandidates(ctxFast, listed, tracker, pool));
      if (a.chosen.key !== b.chosen.key)
        diffs.push(`${where} ${p.name}: chose ${b.chosen.key} vs ${a.chosen.key}`);
      a.candidates.forEach((c, i) => {
        if (!Object.is(b.candidates[i]?.cost, c.cost))
          diffs.push(
            `${where} ${p.name} candidate ${i} cost: ${b.candidates[i]?.cost} vs ${c.cost}`,
          );
      });
    });
    now += 1 + rng() * 50;
  }
  return diffs;
}

describe("candidates: the allocation-free builder against the one it replaced", () => {
  test(`${SEEDS} seeded fleets × ${DECISIONS_PER_SEED} decisions: the same candidates, costs and choices`, () => {
    const diffs: string[] = [];
    let decisions = 0;
    for (let seed = 1; seed <= SEEDS; seed++) {
      diffs.push(...runSeed(seed).slice(0, 5));
      decisions += DECISIONS_PER_SEED;
    }
    expect(decisions).toBe(1000);
    expect(diffs).toEqual([]);
  });
});
