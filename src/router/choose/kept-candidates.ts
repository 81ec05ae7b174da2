/**
 * What of a decision's candidates outlives it: copies of the cheapest few and of the chosen one,
 * how many there were and the most blocks any had cached. The status page shows the 12 cheapest
 * of a decision plus the chosen one, traces the 8 cheapest, and both count them and name the
 * best overlap; keeping those instead of every candidate lets the routing service reuse the
 * candidate objects (candidate-pool.ts) and keeps a 1,024-rank fleet's decision log at 13
 * objects a decision instead of 1,024.
 *
 * The copies keep the candidates' order in the list, so a reader that sorts them by cost (a
 * stable sort) ranks them exactly as it would have ranked them among all.
 */
import type { WorkerKey } from "../../core/ids.ts";
import type { Candidate } from "./types.ts";

/** The cheapest this many are kept: what the status page shows (traces show fewer). */
export const CANDIDATES_KEPT = 12;

export interface KeptCandidates {
  /** The cheapest CANDIDATES_KEPT (ties: earlier first) and the chosen one, copied, in list order. */
  readonly candidates: readonly Candidate[];
  /** How many candidates the policy weighed. */
  readonly total: number;
  /** The most prompt blocks any of them had cached (0 when none). */
  readonly bestOverlapBlocks: number;
}

export function keepCandidates(
  all: readonly Candidate[],
  chosenKey: WorkerKey,
  keep: number = CANDIDATES_KEPT,
): KeptCandidates {
  // The `keep` cheapest by (cost, position), as positions in cost order: a short insertion list.
  // Once it is full, a candidate enters only below the dearest kept (`worst`): one comparison
  // for most of a thousand ranks.
  const top: number[] = [];
  let worst = Infinity;
  let best = 0;
  for (let i = 0; i < all.length; i++) {
    const c = all[i]!;
    if (c.overlapBlocks > best) best = c.overlapBlocks;
    if (top.length === keep && !(c.cost < worst)) continue;
    let at = top.length;
    while (at > 0 && c.cost < all[top[at - 1]!]!.cost) at--;
    top.splice(at, 0, i);
    if (top.length > keep) top.pop();
    if (top.length === keep) worst = all[top[keep - 1]!]!.cost;
  }
  // The chosen one is nearly always among the cheapest; else the cheapest candidate under its key.
  if (!top.some((i) => all[i]!.key === chosenKey)) {
    let chosen = -1;
    for (let i = 0; i < all.length; i++)
      if (all[i]!.key === chosenKey && (chosen < 0 || all[i]!.cost < all[chosen]!.cost)) chosen = i;
    if (chosen >= 0) top.push(chosen);
  }
  top.sort((a, b) => a - b);
  return {
    candidates: top.map((i) => ({ ...all[i]! })),
    total: all.length,
    bestOverlapBlocks: best,
  };
}
