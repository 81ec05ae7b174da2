import { describe, expect, test } from "bun:test";
import {
  sglangCacheAwarePicker,
  SGLANG_DEFAULTS,
} from "../../../../../src/router/choose/policies/sglang-cache-aware.ts";
import { candidate, chain, context, request } from "../helpers.ts";

const BS = 16;
const ctxFor = (seqHashes: BigUint64Array, isl = seqHashes.length * BS) =>
  context({ blockSize: BS, request: request({ isl, seqHashes }) });

describe("sglang cache_aware (sgl-model-gateway defaults)", () => {
  test("published defaults: threshold 0.3, balance 64 / 1.5", () => {
    expect(SGLANG_DEFAULTS).toMatchObject({
      cacheThreshold: 0.3,
      balanceAbsThreshold: 64,
      balanceRelThreshold: 1.5,
    });
  });

  test("a prompt matching more than 30% of a worker's tree goes back to that worker", () => {
    const p = sglangCacheAwarePicker(BS);
    const cs = [candidate(1), candidate(2), candidate(3)];
    p.tree.record(cs[2]!.key, chain(1, 10));
    const prompt = new BigUint64Array(20);
    prompt.set(chain(1, 10));
    prompt.set(chain(9, 10, 10), 10); // 10 of 20 blocks match: 0.5 > 0.3
    expect(p.pick(ctxFor(prompt), cs).key).toBe(cs[2]!.key);
  });

  test("a poor match (<= 30%) goes to the smallest tree, which then learns the prompt", () => {
    const p = sglangCacheAwarePicker(BS);
    const cs = [candidate(1), candidate(2), candidate(3)];
    p.tree.record(cs[0]!.key, chain(1, 3));
    p.tree.record(cs[1]!.key, chain(2, 50));
    p.tree.record(cs[2]!.key, chain(3, 5));
    const prompt = new BigUint64Array(10);
    prompt.set(chain(3, 3)); // 3 of 10 on worker 3: 0.3 is not above the threshold
    prompt.set(chain(8, 7, 3), 3);
    const chosen = p.pick(ctxFor(prompt), cs);
    expect(chosen.key).toBe(cs[0]!.key); // tree size 3 < 5 < 50
    expect(p.tree.matchDepth(cs[0]!.key, prompt)).toBe(10);
  });

  test("imbalanced (max-min > 64 and max > 1.5 min): shortest queue, cache ignored", () => {
    const p = sglangCacheAwarePicker(BS);
    const cs = [
      candidate(1, { activeRequests: 100 }),
      candidate(2, { activeRequests: 30 }),
      candidate(3, { activeRequests: 50 }),
    ];
    p.tree.record(cs[0]!.key, chain(1, 10));
    expect(p.pick(ctxFor(chain(1, 10)), cs).key).toBe(cs[1]!.key);
  });

  test("a gap over 64 that is under 1.5x is still balanced: cache wins", () => {
    const p = sglangCacheAwarePicker(BS);
    const cs = [candidate(1, { activeRequests: 300 }), candidate(2, { activeRequests: 230 })];
    p.tree.record(cs[0]!.key, chain(1, 10));
    expect(p.pick(ctxFor(chain(1, 10)), cs).key).toBe(cs[0]!.key);
  });

  test("the tree size is bounded by max_tree_size / block size", () => {
    const p = sglangCacheAwarePicker(BS, { ...SGLANG_DEFAULTS, maxTreeSize: 8 * BS });
    const c = candidate(1);
    p.tree.record(c.key, chain(1, 20));
    expect(p.tree.size(c.key)).toBe(8);
  });
});
