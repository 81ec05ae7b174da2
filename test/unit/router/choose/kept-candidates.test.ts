/**
 * keepCandidates keeps what the status page and traces read of a decision, the same as they
 * would read it among all the candidates: ranked by a stable sort on cost, the first 12, the
 * chosen one, the count and the best overlap. Seeded lists with many equal costs; a failure
 * names its seed.
 */
import { describe, expect, test } from "bun:test";
import { CANDIDATES_KEPT, keepCandidates } from "../../../../src/router/choose/kept-candidates.ts";
import type { Candidate } from "../../../../src/router/choose/types.ts";
import { candidate, seededRng } from "./helpers.ts";

/** What the decision log shows: the stable cost ranking's first 12, then the chosen one if missing. */
function shown(cands: readonly Candidate[], chosenKey: string): string[] {
  const ranked = [...cands].sort((a, b) => a.cost - b.cost);
  const out = ranked.slice(0, CANDIDATES_KEPT);
  if (!out.some((c) => c.key === chosenKey)) {
    const c = ranked.find((x) => x.key === chosenKey);
    if (c !== undefined) out.push(c);
  }
  return out.map((c) => `${c.key}@${c.cost}/${c.overlapBlocks}`);
}

describe("keepCandidates", () => {
  test("1,000 seeded lists: the page shows the same candidates in the same order, with the same count and best overlap", () => {
    const diffs: string[] = [];
    for (let seed = 1; seed <= 1000; seed++) {
      const rng = seededRng(seed);
      const n = 1 + Math.floor(rng() * 40);
      const cands = Array.from({ length: n }, (_, i) =>
        candidate(i + 1, { cost: Math.floor(rng() * 6) / 2, overlapBlocks: Math.floor(rng() * 9) }),
      );
      const chosenKey = cands[Math.floor(rng() * n)]!.key;
      const kept = keepCandidates(cands, chosenKey);
      const best = cands.reduce((m, c) => Math.max(m, c.overlapBlocks), 0);
      if (shown(kept.candidates, chosenKey).join() !== shown(cands, chosenKey).join())
        diffs.push(
          `seed ${seed}: shown ${shown(kept.candidates, chosenKey)} vs ${shown(cands, chosenKey)}`,
        );
      if (kept.total !== n || kept.bestOverlapBlocks !== best)
        diffs.push(
          `seed ${seed}: total ${kept.total}/${n}, best ${kept.bestOverlapBlocks}/${best}`,
        );
      if (kept.candidates.length > CANDIDATES_KEPT + 1)
        diffs.push(`seed ${seed}: kept ${kept.candidates.length}`);
    }
    expect(diffs).toEqual([]);
  });

  test("the kept candidates are copies: the pool may rewrite the originals", () => {
    const cands = [candidate(1, { cost: 2 }), candidate(2, { cost: 1 })];
    const kept = keepCandidates(cands, cands[0]!.key);
    cands[0]!.cost = 99;
    expect(kept.candidates.map((c) => c.cost)).toEqual([2, 1]);
  });

  test("the chosen one is kept even when twelve are cheaper", () => {
    const cands = Array.from({ length: 20 }, (_, i) => candidate(i + 1, { cost: i }));
    const kept = keepCandidates(cands, cands[19]!.key);
    expect(kept.candidates).toHaveLength(CANDIDATES_KEPT + 1);
    expect(kept.candidates.at(-1)!.key).toBe(cands[19]!.key);
    expect(kept.total).toBe(20);
  });
});
