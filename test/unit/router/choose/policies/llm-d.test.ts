import { describe, expect, test } from "bun:test";
import {
  LLMD_WEIGHTS,
  llmdPicker,
  prefixScore,
  queueScore,
} from "../../../../../src/router/choose/policies/llm-d.ts";
import { candidate, chain, context, request, seededRng } from "../helpers.ts";

const BS = 64;
const ctxFor = (seqHashes: BigUint64Array, seed = 1) =>
  context({
    blockSize: BS,
    rng: seededRng(seed),
    request: request({ isl: seqHashes.length * BS, seqHashes }),
  });

describe("llm-d default profile", () => {
  test("weights: prefix 3, queue 2, kv utilisation 2", () => {
    expect(LLMD_WEIGHTS).toEqual({ prefix: 3, queue: 2, kvUtilization: 2 });
  });

  test("queue scorer is min-max normalised; all equal scores 1", () => {
    expect(queueScore(0, 0, 10)).toBe(1);
    expect(queueScore(10, 0, 10)).toBe(0);
    expect(queueScore(5, 0, 10)).toBe(0.5);
    expect(queueScore(3, 3, 3)).toBe(1);
    expect(prefixScore(3, 4)).toBe(0.75);
    expect(prefixScore(0, 0)).toBe(0);
  });

  test("with equal load the prefix holder wins; its score is 3 + 2 + 2", () => {
    const p = llmdPicker(BS);
    const cs = [candidate(1), candidate(2), candidate(3)];
    p.index.record(cs[1]!.key, chain(5, 8));
    const chosen = p.pick(ctxFor(chain(5, 8)), cs);
    expect(chosen.key).toBe(cs[1]!.key);
    expect(chosen.cost).toBe(-7);
  });

  test("a full queue outweighs a half prefix match (3 x 0.5 < 2 x 1)", () => {
    const p = llmdPicker(BS);
    const cs = [candidate(1, { activeRequests: 10 }), candidate(2, { activeRequests: 0 })];
    p.index.record(cs[0]!.key, chain(5, 4));
    const prompt = new BigUint64Array(8);
    prompt.set(chain(5, 4));
    prompt.set(chain(6, 4, 4), 4);
    expect(p.pick(ctxFor(prompt), cs).key).toBe(cs[1]!.key);
  });

  test("ties are broken at random, reproducibly for a seed", () => {
    const picks = new Set<string>();
    for (let seed = 1; seed <= 20; seed++)
      picks.add(
        llmdPicker(BS).pick(ctxFor(chain(1, 2), seed), [candidate(1), candidate(2), candidate(3)])
          .key,
      );
    expect(picks.size).toBe(3);
  });
});
