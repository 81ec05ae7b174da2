/**
 * Burst claims: what several routers tell each other at the moment they decide, so that requests
 * that reach different routers in the same instant are not all sent to the engine that looks best
 * to every one of them.
 *
 * The load sync shares each booking after the decision (Dynamo's replica sync does the same), a
 * millisecond or more later. Requests that arrive together (the Mooncake conversation trace sends
 * about ten at each instant of a 3 s grid) are decided by each router before the others' bookings
 * of the same burst reach it: routers that see the same books choose alike, pile onto one engine,
 * and each prediction counts none of the others' prompts (bench/replay/findings.md, "Races between
 * routers"). A claim orders the decisions instead: each router appends its choice to one shared
 * list in one atomic step that returns the choices appended before it, so the later of two racing
 * routers sees the earlier one's prompt and decides again with it counted.
 *
 * This file is the pure half: the claim, the port the Redis adapter implements
 * (src/sync/burst-claim-store.ts), and which returned claims this router's books do not hold yet.
 */
import { keyOf, type WorkerKey, type WorkerWithDpRank } from "../../core/ids.ts";
import type { LoadTracker } from "./load-tracker.ts";

export interface BurstClaim {
  /** The router that decided (core/ids.ts RouterId). */
  readonly routerId: bigint;
  /** Its request id (as that router books and syncs it). */
  readonly requestId: string;
  readonly worker: WorkerWithDpRank;
  /** The prefill tokens the booking adds to that rank's queue (ActiveSequences.newTokens). */
  readonly tokens: number;
  /**
   * The prompt's sequence hashes at a few depths (claimPrefix): enough to tell how long a prefix
   * another prompt shares with it (to within its differing tail, or a third), in a few hundred
   * bytes instead of the whole list the load sync's add carries. Empty: not known.
   */
  readonly prefix: readonly PrefixMark[];
}

/** A prompt's sequence hash after `blocks` blocks (it chains the whole prefix before it). */
export interface PrefixMark {
  readonly blocks: number;
  readonly hash: bigint;
}

/**
 * Depths sampled for claimPrefix: 1, 2, 3, 4, 6, 8, 12, 16, ... (about √2 apart), and counted back
 * from the prompt's last block n: n, n - 1, n - 2, n - 4, n - 8, ... So a prompt that shares all
 * but the tail of a claimed one (siblings of an agent's fan-out, turns of one chat) is known to
 * share it to within that tail, and any other to within a third.
 */
export function claimPrefix(seqHashes: BigUint64Array | null): PrefixMark[] {
  const n = seqHashes?.length ?? 0;
  const depths = new Set<number>();
  for (let p = 1; p < n; p *= 2) {
    depths.add(p);
    const mid = p + (p >> 1);
    if (p >= 2 && mid < n) depths.add(mid);
  }
  for (let back = 0; back < n; back = back === 0 ? 1 : back * 2) depths.add(n - back);
  return [...depths]
    .sort((a, b) => a - b)
    .map((blocks) => ({ blocks, hash: seqHashes![blocks - 1]! }));
}

/**
 * How many leading blocks a claimed prompt shares with this one, as far as its marks tell: the
 * deepest mark equal to this prompt's hash at the same depth (a sequence hash equal at depth d
 * means the whole d-block prefix is equal). At most a third short of the truth.
 */
export function sharedBlocks(
  prefix: readonly PrefixMark[],
  seqHashes: BigUint64Array | null,
): number {
  if (seqHashes === null) return 0;
  let shared = 0;
  for (const m of prefix) {
    if (m.blocks > seqHashes.length) break;
    if (seqHashes[m.blocks - 1] !== m.hash) break;
    shared = m.blocks;
  }
  return shared;
}

/** A claim as stored: the adapter's handle for replacing it. */
export interface HeldClaim {
  readonly stored: string;
}

export interface BurstClaims {
  /**
   * Append `mine` (in place of `replaces`, when given) and return the claims appended before it
   * that are still inside the window, every router's, this one's included. Rejects when the
   * store is away or late (the caller decides without them).
   */
  claim(
    mine: BurstClaim,
    replaces?: HeldClaim,
  ): Promise<{ readonly held: HeldClaim; readonly earlier: readonly BurstClaim[] }>;
}

/**
 * What the unseen claims add to each rank they name: their prefill tokens, queued ahead of this
 * request (whole: a claimed request is counted as a booking is, and claims are young, the window
 * a tenth of a second), and the longest prefix any of them shares with this prompt there
 * (computed before it, so cached for it).
 */
export interface UnseenClaims {
  readonly tokens: ReadonlyMap<WorkerKey, number>;
  readonly sharedBlocks: ReadonlyMap<WorkerKey, number>;
}

/**
 * The claims in `earlier` that these books do not hold (not booked here, this router's own or
 * synced from their router, and not booked and freed already), per rank. Undefined when there
 * are none. `self` is the claim being decided, never counted; `seqHashes` are its prompt's.
 */
export function unseenClaims(
  earlier: readonly BurstClaim[],
  tracker: LoadTracker,
  self: BurstClaim,
  seqHashes: BigUint64Array | null,
): UnseenClaims | undefined {
  let tokens: Map<WorkerKey, number> | undefined;
  let shared: Map<WorkerKey, number> | undefined;
  for (const c of earlier) {
    if (c.tokens <= 0) continue;
    if (c.routerId === self.routerId && c.requestId === self.requestId) continue;
    if (tracker.knowsRequest(c.routerId, c.requestId)) continue;
    const key = keyOf(c.worker);
    tokens ??= new Map();
    shared ??= new Map();
    tokens.set(key, (tokens.get(key) ?? 0) + c.tokens);
    const s = sharedBlocks(c.prefix, seqHashes);
    if (s > (shared.get(key) ?? 0)) shared.set(key, s);
  }
  return tokens === undefined ? undefined : { tokens, sharedBlocks: shared! };
}
