/**
 * Event builders for the indexer tests, in the Dynamo tests' two conventions:
 * - createStoreEvent: tokens_hash = l, block_hash = l * 100 (radix_tree.rs test_utils);
 * - makeStoreEvent: block_hash = the real sequence hash of the local hashes (indexer.rs).
 */
import type { RouterEvent } from "../../../../src/core/events.ts";
import { clearedEvent, removedEvent, storedEvent } from "../../../../src/core/events.ts";
import { computeSeqHashes } from "../../../../src/core/block-hash.ts";
import type { OverlapScores } from "../../../../src/core/overlap.ts";

export function createStoreEvent(
  worker: number | bigint,
  id: number,
  locals: readonly number[],
  parent: number | null = null,
  dpRank = 0,
): RouterEvent {
  return storedEvent(
    BigInt(worker),
    BigInt(id),
    locals.map((l) => ({ tokensHash: BigInt(l), blockHash: BigInt(l) * 100n })),
    parent === null ? null : BigInt(parent),
    dpRank,
  );
}

export function createRemoveEvent(
  worker: number | bigint,
  id: number,
  locals: readonly number[],
  dpRank = 0,
): RouterEvent {
  return removedEvent(
    BigInt(worker),
    BigInt(id),
    locals.map((l) => BigInt(l) * 100n),
    dpRank,
  );
}

export function seqHashes(locals: readonly number[]): bigint[] {
  return [...computeSeqHashes(BigUint64Array.from(locals.map(BigInt)))];
}

export function makeStoreEvent(worker: number, locals: readonly number[], dpRank = 0): RouterEvent {
  const seq = seqHashes(locals);
  return storedEvent(
    BigInt(worker),
    0n,
    locals.map((l, i) => ({ tokensHash: BigInt(l), blockHash: seq[i]! })),
    null,
    dpRank,
  );
}

/** Store `locals` as the continuation of `prefix` (parent = seq hash of the prefix). */
export function makeStoreEventWithParent(
  worker: number,
  prefix: readonly number[],
  locals: readonly number[],
): RouterEvent {
  const full = seqHashes([...prefix, ...locals]);
  const parent = full[prefix.length - 1]!;
  const blocks = locals.map((l, i) => ({
    tokensHash: BigInt(l),
    blockHash: full[prefix.length + i]!,
  }));
  return storedEvent(BigInt(worker), 0n, blocks, parent, 0);
}

export function makeRemoveEvent(
  worker: number,
  locals: readonly number[],
  dpRank = 0,
): RouterEvent {
  return removedEvent(BigInt(worker), 0n, seqHashes(locals), dpRank);
}

export function makeClearEvent(worker: number, dpRank = 0): RouterEvent {
  return clearedEvent(BigInt(worker), 0n, dpRank);
}

export function q(...locals: number[]): BigUint64Array {
  return BigUint64Array.from(locals.map(BigInt));
}

export function range(from: number, to: number): number[] {
  const out: number[] = [];
  for (let i = from; i <= to; i++) out.push(i);
  return out;
}

/** Scores as a plain sorted object, for readable equality assertions. */
export function scoresOf(s: OverlapScores): Record<string, number> {
  return Object.fromEntries([...s.scores.entries()].sort(([a], [b]) => (a < b ? -1 : 1)));
}
