/**
 * Burst claims in the decision (src/router/books/burst-claims.ts, RoutingService): which returned
 * claims count as unseen load, and what the kv policy does with them. The claim store here is a
 * recording fake (the Redis adapter has its own contract test, test/contract/burst-claims.test.ts).
 */
import { describe, expect, test } from "bun:test";
import { portableBatchHasher } from "../../../src/core/block-hash.ts";
import { keyOf, worker, type WorkerWithDpRank } from "../../../src/core/ids.ts";
import { RouterMetrics } from "../../../src/observe/names.ts";
import { createRouter } from "../../../src/router/create-router.ts";
import {
  claimPrefix,
  sharedBlocks,
  unseenClaims,
  type BurstClaim,
  type BurstClaims,
  type HeldClaim,
} from "../../../src/router/books/burst-claims.ts";
import { LoadTracker } from "../../../src/router/books/load-tracker.ts";
import { MemoryAffinityStore } from "../../../src/router/sessions/memory-store.ts";
import { StickyRouter } from "../../../src/router/sessions/sticky.ts";
import { WorkerRegistry } from "../../../src/fleet/registry.ts";
import type { PolicyName } from "../../../src/router/choose/registry.ts";

const BS = 16;
const ME = 0x11n;
const OTHER = 0x22n;
const R0 = worker(1n, 0);
const R1 = worker(1n, 1);

const claimOf = (
  routerId: bigint,
  requestId: string,
  w: WorkerWithDpRank,
  tokens: number,
  prefix: BurstClaim["prefix"] = [],
): BurstClaim => ({ routerId, requestId, worker: w, tokens, prefix });

describe("prefix marks", () => {
  const seq = BigUint64Array.from({ length: 40 }, (_, i) => BigInt(1000 + i));
  test("a claim marks its prompt's sequence hash at 1, 2, 3, 4, 6, 8, 12, ... blocks, and at n, n - 1, n - 2, n - 4, ... back from its last", () => {
    expect(claimPrefix(seq).map((m) => m.blocks)).toEqual([
      1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 36, 38, 39, 40,
    ]);
    expect(claimPrefix(seq).every((m) => m.hash === seq[m.blocks - 1])).toBe(true);
    expect(claimPrefix(seq.subarray(0, 1)).map((m) => m.blocks)).toEqual([1]);
    expect(claimPrefix(null)).toEqual([]);
  });

  test("the shared prefix is the deepest mark that matches: never more than the truth, at most a third less", () => {
    const marks = claimPrefix(seq);
    for (let diverge = 0; diverge <= 40; diverge++) {
      // Another prompt equal to `seq` for its first `diverge` blocks, then different, 50 blocks long.
      const other = BigUint64Array.from({ length: 50 }, (_, i) =>
        i < diverge ? seq[i]! : BigInt(9000 + i),
      );
      const s = sharedBlocks(marks, other);
      expect({ diverge, s, ok: s <= diverge && s >= Math.floor((2 * diverge) / 3) }).toEqual({
        diverge,
        s,
        ok: true,
      });
    }
    expect(sharedBlocks(marks, seq.subarray(0, 5))).toBe(4);
    // A sibling that differs only in its last block: known to share all but that one.
    const sibling = BigUint64Array.from(seq, (h, i) => (i === 39 ? 1n : h));
    expect(sharedBlocks(marks, sibling)).toBe(39);
    expect(sharedBlocks(marks, null)).toBe(0);
  });
});

describe("unseenClaims", () => {
  test("counts, per rank, only the claims these books do not hold and did not just let go of", () => {
    const t = new LoadTracker({ blockSize: BS, routerId: ME });
    t.updateWorkers([R0, R1]);
    t.addRequest(
      { requestId: "mine-booked", worker: R0, seqHashes: null, isl: 320, overlap: 0 },
      0,
    );
    t.applyRemote(
      {
        requestId: "theirs-synced",
        worker: R1,
        routerId: OTHER,
        loraName: null,
        data: {
          type: "add_request",
          tokenSequence: null,
          isl: 64,
          overlap: 0,
          expectedOutputTokens: null,
        },
      },
      0,
    );
    t.addRequest({ requestId: "mine-freed", worker: R1, seqHashes: null, isl: 32, overlap: 0 }, 0);
    t.free("mine-freed", 1);
    const self = claimOf(ME, "me-now", R0, 100);
    const earlier = [
      claimOf(ME, "mine-booked", R0, 320),
      claimOf(OTHER, "theirs-synced", R1, 64),
      claimOf(ME, "mine-freed", R1, 32),
      claimOf(OTHER, "mine-booked", R0, 7), // the same id from another router is another request
      claimOf(OTHER, "theirs-unseen", R0, 500),
      claimOf(ME, "mine-in-flight", R1, 40),
      claimOf(OTHER, "nothing-to-compute", R1, 0),
      self,
    ];
    expect(unseenClaims(earlier, t, self, null)?.tokens).toEqual(
      new Map([
        [keyOf(R0), 507],
        [keyOf(R1), 40],
      ]),
    );
    expect(unseenClaims(earlier.slice(0, 3), t, self, null)).toBeUndefined();
  });

  test("a synced request that is freed stays known (the let-go memory)", () => {
    const t = new LoadTracker({ blockSize: BS, routerId: ME });
    t.updateWorkers([R0]);
    const add = {
      requestId: "x",
      worker: R0,
      routerId: OTHER,
      loraName: null,
      data: {
        type: "add_request" as const,
        tokenSequence: null,
        isl: 64,
        overlap: 0,
        expectedOutputTokens: null,
      },
    };
    t.applyRemote(add, 0);
    t.applyRemote({ ...add, data: { type: "free" } }, 1);
    expect(t.knowsRequest(OTHER, "x")).toBe(true);
    expect(t.knowsRequest(ME, "x")).toBe(false);
  });
});

/** A claim store that answers each claim with what `earlierFor` says, and records every call. */
class FakeClaims implements BurstClaims {
  readonly calls: { mine: BurstClaim; replaces?: HeldClaim }[] = [];
  constructor(private readonly earlierFor: (mine: BurstClaim) => BurstClaim[] | Error) {}
  async claim(mine: BurstClaim, replaces?: HeldClaim) {
    this.calls.push({ mine, replaces });
    const earlier = this.earlierFor(mine);
    if (earlier instanceof Error) throw earlier;
    return { held: { stored: `stored:${mine.requestId}:${keyOf(mine.worker)}` }, earlier };
  }
}

function build(claims: BurstClaims | undefined, policy: PolicyName = "kv") {
  const registry = new WorkerRegistry();
  const metrics = new RouterMetrics();
  let clock = 1000;
  const router = createRouter(
    { policy, scheduler: { blockSize: BS }, sessionTtlMs: 60_000, routerId: ME },
    {
      hasher: portableBatchHasher,
      now: () => clock,
      rng: () => 0.5,
      workers: registry,
      sticky: new StickyRouter(
        new MemoryAffinityStore({ clock: { now: () => clock, every: () => () => {} } }),
      ),
      metrics,
      query: async () => ({ kind: "error", message: "none" }),
      sleep: async () => {},
      claims,
    },
  );
  registry.add(1n, "http://w1:1", 2, true, "base");
  router.tracker.updateWorkers([R0, R1]);
  const route = (id: string, n: number) =>
    router.routing.route({
      requestId: id,
      tokens: Uint32Array.from({ length: n }, (_, i) => (i * 7919 + n) % 50_000),
    });
  const outcomes = () => {
    const out: Record<string, number> = {};
    for (const m of metrics
      .render()
      .matchAll(/^switchyard_burst_claims_total\{outcome="(\w+)"\} (\d+)$/gm))
      out[m[1]!] = Number(m[2]);
    return out;
  };
  return { router, route, outcomes, tick: (ms: number) => (clock += ms) };
}

describe("the kv policy's decision with claims", () => {
  test("two idle ranks: another router claimed a long prompt on the rank this one chose, so it moves to the other, and moves its claim", async () => {
    const fake = new FakeClaims((mine) =>
      mine.requestId === "a" ? [claimOf(OTHER, "theirs", mine.worker, 4096)] : [],
    );
    const { route, outcomes, router } = build(fake);
    const first = fake.calls.length;
    const d = await route("a", 320);
    expect(fake.calls.length).toBe(first + 2);
    const [claimed, moved] = fake.calls;
    expect(d.worker).not.toEqual(claimed!.mine.worker);
    expect(moved!.mine.worker).toEqual(d.worker);
    expect(moved!.replaces).toEqual({ stored: `stored:a:${keyOf(claimed!.mine.worker)}` });
    expect(claimed!.mine).toMatchObject({ routerId: ME, requestId: "a", tokens: 320 });
    expect(outcomes()).toMatchObject({ moved: 1 });
    // Booked once, where it went.
    expect(router.tracker.workerOf("a")).toEqual(d.worker);
    d.lease.free();
  });

  test("the same choice with an unseen claim ahead: the prediction counts the claimed prompt", async () => {
    // Rank 1 is busy with this router's own long prompt, so rank 0 stays best even behind a short unseen one.
    let other: WorkerWithDpRank | undefined;
    const fake = new FakeClaims((mine) =>
      mine.requestId === "b" ? [claimOf(OTHER, "theirs", (other = mine.worker), 100)] : [],
    );
    const { route, outcomes, router } = build(fake);
    router.tracker.addRequest(
      { requestId: "busy", worker: R1, seqHashes: null, isl: 8000, overlap: 0 },
      1000,
    );
    const d = await route("b", 320);
    expect(d.worker).toEqual(R0);
    expect(other).toEqual(R0);
    const chosen = d.candidates.find((c) => c.key === keyOf(R0))!;
    expect(chosen.ttftTokens).toBe(320 + 100);
    expect(outcomes()).toMatchObject({ counted: 1 });
    expect(fake.calls.length).toBe(1);
    d.lease.free();
  });

  test("a sibling: another router claimed the same prompt on the rank this one chose, so it stays and waits for that prefill instead of computing it again", async () => {
    const fake = new FakeClaims((mine) =>
      mine.requestId === "s"
        ? [claimOf(OTHER, "sibling", mine.worker, mine.tokens, mine.prefix)]
        : [],
    );
    const { route, outcomes } = build(fake);
    const d = await route("s", 320);
    const claimed = fake.calls[0]!.mine;
    expect(claimed.prefix.map((m) => m.blocks)).toEqual([1, 2, 3, 4, 6, 8, 12, 16, 18, 19, 20]);
    expect(d.worker).toEqual(claimed.worker);
    expect(d.overlapBlocks).toBe(20);
    // Its whole prompt is the sibling's: it waits behind 320 tokens and computes none.
    const chosen = d.candidates.find((c) => c.key === keyOf(d.worker))!;
    expect({ ttftTokens: chosen.ttftTokens, uncached: chosen.uncachedTokens }).toEqual({
      ttftTokens: 320,
      uncached: 0,
    });
    expect(outcomes()).toMatchObject({ counted: 1 });
    d.lease.free();
  });

  test("claims the books already hold change nothing (clear)", async () => {
    const fake = new FakeClaims(() => [claimOf(ME, "busy", R1, 8000)]);
    const { route, outcomes, router } = build(fake);
    router.tracker.addRequest(
      { requestId: "busy", worker: R1, seqHashes: null, isl: 8000, overlap: 0 },
      1000,
    );
    const d = await route("c", 320);
    expect(d.worker).toEqual(R0);
    expect(d.candidates.find((c) => c.key === keyOf(R0))!.ttftTokens).toBe(320);
    expect(outcomes()).toMatchObject({ clear: 1 });
    d.lease.free();
  });

  test("a store that fails: the decision is the one made without claims, and it is counted as failed", async () => {
    const without = build(undefined);
    const expected = (await without.route("d", 320)).worker;
    const fake = new FakeClaims(() => new Error("redis away"));
    const { route, outcomes } = build(fake);
    const d = await route("d", 320);
    expect(d.worker).toEqual(expected);
    expect(outcomes()).toMatchObject({ failed: 1 });
  });

  test("a policy that does not predict TTFT (kv-blocks) claims nothing", async () => {
    const fake = new FakeClaims(() => []);
    const { route } = build(fake, "kv-blocks");
    (await route("e", 320)).lease.free();
    expect(fake.calls).toEqual([]);
  });
});
