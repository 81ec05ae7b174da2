/**
 * One price over four places a prompt's KV can come from, on hand-built cases: this engine's CPU
 * tier against a peer's GPU against computing; a busy peer; a slow link, learned from first tokens;
 * engines that report no tier, priced exactly as without plans. Engines prefill at 0.01 ms per
 * token with 1 ms of latency (the predictor is taught that first), blocks of 16 tokens.
 */
import { describe, expect, test } from "bun:test";
import type { KvMedium } from "../../../../src/core/events.ts";
import type { WorkerKey, WorkerWithDpRank } from "../../../../src/core/ids.ts";
import { keyOf } from "../../../../src/core/ids.ts";
import type { OverlapScores } from "../../../../src/core/overlap.ts";
import { LoadTracker } from "../../../../src/router/books/load-tracker.ts";
import { RequestLease } from "../../../../src/router/books/request-lease.ts";
import { TtftPredictor } from "../../../../src/router/books/ttft-predictor.ts";
import { schedulerConfig } from "../../../../src/router/choose/config.ts";
import { endpointsOf } from "../../../../src/router/choose/endpoints.ts";
import { findBestMatch } from "../../../../src/router/choose/find-best-match.ts";
import { createPipeline } from "../../../../src/router/choose/registry.ts";
import { kvPlanText as describePlan } from "../../../../src/observe/kv-plan-text.ts";
import { KvPlanner, learnFromFirstToken } from "../../../../src/router/kv-plan/plan.ts";
import { PRIOR_SHARE, TransferRates } from "../../../../src/router/kv-plan/transfer-rates.ts";
import { storedEvent } from "../../../../src/core/events.ts";
import { RadixTree } from "../../../../src/router/kv-index/radix-tree.ts";
import { chain, seededRng } from "../choose/helpers.ts";

const BS = 16;
const MS_PER_TOKEN = 0.01;
const K1 = "1:0";
const K2 = "2:0";
const K3 = "3:0";

function world(engines = 3, tiered: readonly WorkerKey[] = [K1, K2, K3]) {
  const endpoints = endpointsOf(
    Array.from({ length: engines }, (_, i) => ({ workerId: BigInt(i + 1) })),
  );
  const config = schedulerConfig({ blockSize: BS });
  const tracker = new LoadTracker({ blockSize: BS });
  tracker.updateWorkers(endpoints.map((e) => e.worker));
  const ttft = new TtftPredictor({ blockSize: BS });
  const rng = seededRng(5);
  for (let round = 0; round < 12; round++) {
    for (const e of endpoints) {
      const tokens = 100 + Math.floor(rng() * 3000);
      ttft.observe({ key: e.key, bookedAt: -1e6, at: -1e6 + 1 + MS_PER_TOKEN * tokens, tokens });
    }
  }
  const pipeline = createPipeline("kv", config);
  const rates = new TransferRates();
  const planner = new KvPlanner(rates, (w: WorkerWithDpRank) => tiered.includes(keyOf(w)));
  const pick = seededRng(1);
  let n = 0;
  const choose = (hashes: BigUint64Array, overlaps: OverlapScores, now = 0, withPlanner = true) =>
    findBestMatch({
      overlaps,
      seqHashes: hashes,
      isl: hashes.length * BS,
      endpoints,
      tracker,
      pipeline,
      config,
      now,
      rng: pick,
      ttft,
      kvPlanner: withPlanner ? planner : undefined,
    });
  /** A prefill of `tokens` booked on `key` (nothing it shares with the prompts here): a queue there. */
  const busy = (key: WorkerKey, tokens: number) => {
    const e = endpoints.find((x) => x.key === key)!;
    RequestLease.book(
      tracker,
      {
        requestId: `busy${n++}`,
        worker: e.worker,
        seqHashes: chain(9000 + n, tokens / BS),
        isl: tokens,
        overlap: 0,
      },
      0,
      BS,
      () => 0,
      pick,
    );
  };
  return { choose, busy, rates, planner };
}

function overlaps(
  gpu: Record<WorkerKey, number>,
  tiers: Partial<Record<KvMedium, Record<WorkerKey, number>>> = {},
): OverlapScores {
  const tierScores = new Map<KvMedium, Map<WorkerKey, number>>();
  for (const [m, s] of Object.entries(tiers))
    tierScores.set(m as KvMedium, new Map(Object.entries(s)));
  return {
    scores: new Map(Object.entries(gpu)),
    treeSizes: new Map(),
    frequencies: [],
    tierScores: tierScores.size > 0 ? tierScores : undefined,
  };
}

/** 100 shared blocks (1,600 tokens) then 4 of its own. */
const PROMPT = (() => {
  const h = new BigUint64Array(104);
  h.set(chain(7, 100));
  h.set(chain(1000, 4, 100), 100);
  return h;
})();

describe("kv-plan: where the shared prefix comes from", () => {
  test("on this engine's CPU, against a busy peer's GPU and an idle engine that would pull or compute: loaded here", () => {
    const w = world();
    w.busy(K2, 8000); // 80 ms of queue on the GPU holder
    const sel = w.choose(PROMPT, overlaps({ [K2]: 100 }, { cpu: { [K1]: 100 } }));
    expect(sel.key).toBe(K1);
    expect(sel.kvPlan?.kind).toBe("load");
    expect(sel.kvPlan?.media).toEqual(["cpu"]);
    expect(sel.kvPlan?.blocks).toBe(100);
    // 64 tokens computed, 1,600 loaded at the prior (1/16 of computing), 1 ms latency.
    expect(sel.predictedTtftMs!).toBeCloseTo(
      1 + 64 * MS_PER_TOKEN + 1600 * MS_PER_TOKEN * PRIOR_SHARE.cpu,
      1,
    );
    expect(sel.uncachedTokens).toBe(64);
  });

  test("on a busy peer's GPU only: an idle engine pulls it from that peer", () => {
    const w = world();
    w.busy(K2, 8000);
    w.busy(K3, 4000);
    const sel = w.choose(PROMPT, overlaps({ [K2]: 100 }));
    expect(sel.key).toBe(K1);
    expect(sel.kvPlan?.kind).toBe("pull");
    expect(sel.kvPlan?.fromKey).toBe(K2);
    expect(sel.kvPlan?.tokens).toBe(1600);
    expect(describePlan(sel.kvPlan!)).toMatch(
      /^100 blocks pulled from worker 2 rank 0, predicted \d+ ms$/,
    );
  });

  test("a busy peer: of two holders, the pull comes from the one whose link other pulls are not using", () => {
    const w = world();
    w.busy(K2, 8000);
    w.busy(K3, 8000);
    w.rates.startPull(K2, 0, 50); // 50 ms of another pull still to go from worker 2
    const sel = w.choose(PROMPT, overlaps({ [K2]: 100, [K3]: 100 }));
    expect(sel.key).toBe(K1);
    expect(sel.kvPlan?.fromKey).toBe(K3);
    // Once that pull is over, worker 2 is as good a source again (the first in the index's order).
    const later = w.choose(PROMPT, overlaps({ [K2]: 100, [K3]: 100 }), 60);
    expect(later.kvPlan?.kind).toBe("pull");
  });

  test("a slow link, learned from first tokens: after a pull that took as long as computing, the prefix is computed", () => {
    const w = world();
    w.busy(K2, 8000);
    const o = overlaps({ [K2]: 100 });
    const first = w.choose(PROMPT, o);
    expect(first.kvPlan?.kind).toBe("pull");
    const linkKey = first.kvPlan!.rates[0]!.key;
    // The pull's first token came as late as if the engine had computed the whole prompt (it did: the pull failed).
    learnFromFirstToken(w.rates, first.kvPlan!, 1 + 1664 * MS_PER_TOKEN * 1.2);
    expect(first.kvPlan!.observedTtftMs).toBeCloseTo(1 + 1664 * MS_PER_TOKEN * 1.2, 6);
    expect(describePlan(first.kvPlan!)).toMatch(
      /^100 blocks pulled from worker 2 rank 0, predicted \d+ ms, observed 21 ms$/,
    );
    expect(w.rates.reading("link", linkKey, MS_PER_TOKEN).source).toBe("learned");
    expect(w.rates.msPerToken("link", linkKey, MS_PER_TOKEN)).toBeGreaterThan(MS_PER_TOKEN);
    // Per link: worker 3 still pulls over its own, untaught one.
    const other = w.choose(PROMPT, o);
    expect(other.key).toBe(K3);
    expect(other.kvPlan?.kind).toBe("pull");
    learnFromFirstToken(w.rates, other.kvPlan!, 1 + 1664 * MS_PER_TOKEN * 1.2);
    const after = w.choose(PROMPT, o);
    expect(after.kvPlan).toBeUndefined();
    expect(after.uncachedTokens).toBe(1664);
  });

  test("a fast load learned as fast: the rate follows what first tokens say", () => {
    const rates = new TransferRates();
    for (let i = 0; i < 9; i++) rates.observe("1:0|cpu", 0.0005);
    expect(rates.msPerToken("cpu", "1:0|cpu", MS_PER_TOKEN)).toBeCloseTo(0.0005, 9);
    // An engine whose CPU tier was not used yet takes the fleet's, being faster than the prior.
    expect(rates.msPerToken("cpu", "2:0|cpu", MS_PER_TOKEN)).toBeCloseTo(0.0005, 9);
    // A disk tier is another kind: its prior stands.
    expect(rates.msPerToken("disk", "2:0|disk", MS_PER_TOKEN)).toBeCloseTo(
      MS_PER_TOKEN * PRIOR_SHARE.disk,
      9,
    );
  });

  test("engines that report no tier are priced exactly as without plans, even where a peer holds more", () => {
    const a = world(3, []);
    const b = world(3, []);
    a.busy(K2, 8000);
    b.busy(K2, 8000);
    const o = overlaps({ [K2]: 100 });
    const withPlans = a.choose(PROMPT, o);
    const without = b.choose(PROMPT, o, 0, false);
    expect(withPlans.kvPlan).toBeUndefined();
    expect(withPlans.key).toBe(without.key);
    expect(withPlans.predictedTtftMs).toBe(without.predictedTtftMs!);
    expect(withPlans.candidates.map((c) => c.cost)).toEqual(without.candidates.map((c) => c.cost));
  });

  test("a fleet where no engine reports a tier: the planner reads nothing and plans nothing", () => {
    const rates = new TransferRates();
    const planner = new KvPlanner(
      rates,
      () => true,
      () => false,
    );
    expect(planner.prepare(overlaps({ [K2]: 100 }), BS, 0)).toBe(false);
    // A tier in the request's overlaps is enough to plan.
    expect(planner.prepare(overlaps({ [K2]: 100 }, { cpu: { [K1]: 100 } }), BS, 0)).toBe(true);
  });

  test("the index knows whether any engine reports a tier", () => {
    const tree = new RadixTree();
    tree.applyEvent(storedEvent(1n, 0n, [{ blockHash: 11n, tokensHash: 11n }]));
    expect(tree.hasTiers()).toBe(false);
    tree.applyEvent(storedEvent(1n, 1n, [{ blockHash: 11n, tokensHash: 11n }], null, 0, "cpu"));
    expect(tree.hasTiers()).toBe(true);
    tree.removeWorker(1n);
    expect(tree.hasTiers()).toBe(false);
  });
});

/** A prompt of `n` blocks as the index names them (tokens hash = l, as kv-index's tests). */
const locals = (n: number) => BigUint64Array.from({ length: n }, (_, i) => BigInt(i + 1));
function stored(worker: number, from: number, to: number, medium?: KvMedium) {
  const blocks = [];
  for (let l = from; l <= to; l++)
    blocks.push({ tokensHash: BigInt(l), blockHash: BigInt(l) * 100n });
  return storedEvent(
    BigInt(worker),
    0n,
    blocks,
    from === 1 ? null : BigInt(from - 1) * 100n,
    0,
    medium,
  );
}

describe("kv-plan: the prompt priced range by range, from the index", () => {
  test("GPU head, CPU tail on the same engine: the tail is loaded after the GPU prefix", () => {
    const w = world();
    const tree = new RadixTree();
    tree.applyEvent(stored(1, 1, 40));
    tree.applyEvent(stored(1, 41, 100, "cpu")); // offloaded, then evicted from the GPU
    const sel = w.choose(PROMPT, tree.findMatches(locals(104)));
    expect(sel.key).toBe(K1);
    expect(sel.kvPlan?.kind).toBe("load");
    expect(sel.kvPlan?.media).toEqual(["cpu"]);
    expect(sel.kvPlan?.fromBlock).toBe(40);
    expect(sel.kvPlan?.blocks).toBe(60);
    expect(sel.uncachedTokens).toBe(64);
  });

  test("CPU only: the whole prefix is loaded from block 0", () => {
    const w = world();
    const tree = new RadixTree();
    tree.applyEvent(stored(2, 1, 100, "cpu"));
    const sel = w.choose(PROMPT, tree.findMatches(locals(104)));
    expect(sel.key).toBe(K2);
    expect(sel.kvPlan?.kind).toBe("load");
    expect(sel.kvPlan?.fromBlock).toBe(0);
    expect(sel.kvPlan?.blocks).toBe(100);
  });

  test("GPU head here, the rest on a busy peer's GPU: the tail is pulled from the peer", () => {
    const w = world();
    w.busy(K2, 8000);
    const tree = new RadixTree();
    tree.applyEvent(stored(1, 1, 40));
    tree.applyEvent(stored(1, 1, 10, "cpu")); // engine 1 reports a tier: it can pull
    tree.applyEvent(stored(2, 1, 100));
    const sel = w.choose(PROMPT, tree.findMatches(locals(104)));
    expect(sel.key).toBe(K1);
    expect(sel.kvPlan?.kind).toBe("pull");
    expect(sel.kvPlan?.fromKey).toBe(K2);
    expect(sel.kvPlan?.fromBlock).toBe(40);
    expect(sel.kvPlan?.blocks).toBe(60);
  });
});

describe("transfer rates: a link not used yet takes the fleet's", () => {
  test("its own samples first, then the fleet's median of its kind where faster, then the prior", () => {
    const r = new TransferRates();
    const link = (from: string, to: string) => TransferRates.keyOf("link", to, from);
    expect(r.reading("link", link(K1, K2), 0.08)).toEqual({
      msPerToken: 0.08 * PRIOR_SHARE.link,
      source: "prior",
      samples: 0,
    });
    for (const x of [0.001, 0.002, 0.003]) r.observe(link(K1, K2), x);
    // (a fleet median slower than the prior would leave the prior: see the slow-link test above)
    // Another link of the fleet, never used: the fleet's median; a tier is another kind.
    expect(r.reading("link", link(K3, K2), 0.08)).toEqual({
      msPerToken: 0.002,
      source: "fleet",
      samples: 3,
    });
    expect(r.msPerToken("cpu", TransferRates.keyOf("cpu", K2), 0.08)).toBe(0.08 * PRIOR_SHARE.cpu);
    r.observe(link(K3, K2), 0.01);
    expect(r.reading("link", link(K3, K2), 0.08).source).toBe("learned");
    expect(r.msPerToken("link", link(K3, K2), 0.08)).toBe(0.01);
  });
});
