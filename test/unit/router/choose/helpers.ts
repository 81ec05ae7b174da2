/** Test helpers for the scheduler suites: seeded rng, hash sequences, overlaps, contexts, choose-and-book. */
import { keyOf, type WorkerKey } from "../../../../src/core/ids.ts";
import type { OverlapScores } from "../../../../src/core/overlap.ts";
import type {
  Candidate,
  Endpoint,
  SchedulingContext,
  SchedulingRequest,
} from "../../../../src/router/choose/types.ts";
import { endpoint } from "../../../../src/router/choose/endpoints.ts";
import {
  findBestMatch,
  type FindBestMatchInput,
} from "../../../../src/router/choose/find-best-match.ts";
import { RequestLease } from "../../../../src/router/books/request-lease.ts";
import { mulberry32 as seededRng } from "../../../support/prng.ts";

/** The shared seeded generator (test/support/prng.ts: mulberry32) under the name these suites use. */
export { seededRng };

export function seq(...hashes: (number | bigint)[]): BigUint64Array {
  return BigUint64Array.from(hashes.map((h) => BigInt(h)));
}

/** A chain of n pseudo-random 64-bit hashes derived from `base` (like real sequence hashes). */
export function chain(base: number, n: number, from = 0): BigUint64Array {
  const out = new BigUint64Array(n);
  for (let i = 0; i < n; i++)
    out[i] = BigInt.asUintN(
      64,
      BigInt(base) * 0x9e3779b97f4a7c15n + BigInt(from + i) * 0xbf58476d1ce4e5b9n + 1n,
    );
  return out;
}

export function overlapsOf(
  scores: Record<WorkerKey, number> = {},
  treeSizes: Record<WorkerKey, number> = {},
): OverlapScores {
  return {
    scores: new Map(Object.entries(scores)),
    treeSizes: new Map(Object.entries(treeSizes)),
    frequencies: [],
  };
}

export function request(partial: Partial<SchedulingRequest> = {}): SchedulingRequest {
  return { isl: 64, seqHashes: null, overlaps: overlapsOf(), ...partial };
}

export function context(partial: Partial<SchedulingContext> = {}): SchedulingContext {
  return {
    request: request(),
    blockSize: 16,
    overlapScoreWeight: 1,
    temperature: 0,
    inflightOverlap: false,
    now: 0,
    rng: seededRng(1),
    ...partial,
  };
}

/** A candidate with the given facts (untracked defaults are zero load). */
export function candidate(
  workerId: number,
  partial: Partial<Omit<Candidate, "endpoint" | "key">> & { endpoint?: Endpoint } = {},
): Candidate {
  const e = partial.endpoint ?? endpoint(workerId);
  return {
    overlapBlocks: 0,
    treeSize: 0,
    tracked: true,
    prefillTokens: 0,
    decodeBlocks: 0,
    activePrefillTokens: 0,
    activeDecodeBlocks: 0,
    activeRequests: 0,
    cost: 0,
    ...partial,
    endpoint: e,
    key: keyOf(e.worker),
  };
}

/**
 * Choose a worker and book the request there, as the router does: the scheduler only
 * chooses, the request's lease books (routing-service.ts). Returns both.
 */
export function chooseAndBook(input: FindBestMatchInput, requestId: string, loraName?: string) {
  const selection = findBestMatch(input);
  const booking = {
    requestId,
    worker: selection.worker,
    seqHashes: input.seqHashes,
    isl: input.isl,
    overlap: selection.overlapBlocks,
    loraName,
  };
  const lease = RequestLease.book(
    input.tracker,
    booking,
    input.now,
    input.config.blockSize,
    () => input.now,
    input.rng,
  );
  return { selection, lease };
}
