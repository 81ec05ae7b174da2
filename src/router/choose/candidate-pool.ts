/**
 * Candidate objects reused from one decision to the next, per endpoint list: a caller that keeps
 * nothing of a Selection's candidates past its own synchronous use (the routing service copies
 * what the status page and traces keep, kept-candidates.ts) passes one to findBestMatch, and a
 * 1,024-rank decision allocates no candidates at all. Without one, every decision builds fresh
 * candidates, which any caller may keep.
 *
 * Each list's objects are written again by the next decision on that list: a Selection built
 * from a pool is valid until then.
 */
import type { Candidate, Endpoint } from "./types.ts";

/** A candidate as candidates.ts fills it in. */
export type CandidateSlot = { -readonly [K in keyof Candidate]: Candidate[K] };

/** A candidate for `e` with every field present (one object shape for fresh and reused ones). */
export function blankCandidate(e: Endpoint): CandidateSlot {
  return {
    endpoint: e,
    key: e.key,
    overlapBlocks: 0,
    treeSize: 0,
    tracked: false,
    prefillTokens: 0,
    decodeBlocks: 0,
    activePrefillTokens: 0,
    activeDecodeBlocks: 0,
    activeRequests: 0,
    prefillingRequests: undefined,
    lastBookedAt: undefined,
    uncachedTokens: undefined,
    predictedTtftMs: undefined,
    ttftTokens: undefined,
    msPerToken: undefined,
    stepMs: 0,
    kvPlan: undefined,
    cost: 0,
  };
}

export class CandidatePool {
  readonly #lists = new WeakMap<readonly Endpoint[], CandidateSlot[]>();

  /** This list's candidates, one per endpoint in its order; their fields are the caller's to overwrite. */
  candidatesFor(endpoints: readonly Endpoint[]): CandidateSlot[] {
    let list = this.#lists.get(endpoints);
    if (list === undefined || list.length !== endpoints.length) {
      list = endpoints.map(blankCandidate);
      this.#lists.set(endpoints, list);
    }
    return list;
  }
}
