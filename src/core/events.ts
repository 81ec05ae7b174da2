/**
 * KV cache events (Dynamo's KvCacheEvent and RouterEvent): the in-memory types used by the indexer and the
 * recovery core, and their JSON wire form (serde's externally tagged encoding:
 * `{"stored":{...}}`, `{"removed":{...}}`, `"cleared"`, snake_case fields).
 *
 * The wire form is parsed with valibot; every u64 field accepts a JSON number (safe range),
 * a decimal string, or a bigint (after core/json.ts has quoted long literals), so no bits are
 * lost. Signed values are reinterpreted as u64 like Rust's `From<i64>`.
 */
import * as v from "valibot";
import type { DpRank, EventId, ExternalBlockHash, LocalBlockHash, WorkerId } from "./ids.ts";

// ---------------------------------------------------------------- in-memory types

export interface StoredBlock {
  /** Engine hash (prefix-dependent). */
  readonly blockHash: ExternalBlockHash;
  /** Router content hash of the block's tokens (Dynamo's compute_block_hash_for_seq). */
  readonly tokensHash: LocalBlockHash;
}

export interface StoredData {
  readonly type: "stored";
  readonly parentHash: ExternalBlockHash | null;
  readonly blocks: readonly StoredBlock[];
}
export interface RemovedData {
  readonly type: "removed";
  readonly blockHashes: readonly ExternalBlockHash[];
}
export interface ClearedData {
  readonly type: "cleared";
}
export type KvCacheEventData = StoredData | RemovedData | ClearedData;

export interface KvCacheEvent {
  readonly eventId: EventId;
  readonly dpRank: DpRank;
  readonly data: KvCacheEventData;
}

export interface RouterEvent {
  readonly workerId: WorkerId;
  readonly event: KvCacheEvent;
}

export type KvEventType = KvCacheEventData["type"];
/** Outcome labels of applying an event (metric label values, Dynamo's RouterEvent). */
export type KvEventStatus = "ok" | "parent_block_not_found" | "block_not_found" | "invalid_block";

// ---------------------------------------------------------------- builders

export function storedEvent(
  workerId: WorkerId,
  eventId: EventId,
  blocks: readonly StoredBlock[],
  parentHash: ExternalBlockHash | null = null,
  dpRank: DpRank = 0,
): RouterEvent {
  return { workerId, event: { eventId, dpRank, data: { type: "stored", parentHash, blocks } } };
}

export function removedEvent(
  workerId: WorkerId,
  eventId: EventId,
  blockHashes: readonly ExternalBlockHash[],
  dpRank: DpRank = 0,
): RouterEvent {
  return { workerId, event: { eventId, dpRank, data: { type: "removed", blockHashes } } };
}

export function clearedEvent(workerId: WorkerId, eventId: EventId, dpRank: DpRank = 0): RouterEvent {
  return { workerId, event: { eventId, dpRank, data: { type: "cleared" } } };
}

// ---------------------------------------------------------------- wire schemas

const DECIMAL = /^-?\d+$/;

/** A u64 given as a JSON number, a decimal string or a bigint. */
export const U64Schema = v.pipe(
  v.union([
    v.pipe(v.number(), v.integer("must be an integer"), v.safeInteger("must be a safe integer; send larger values as strings")),
    v.pipe(v.string(), v.regex(DECIMAL, "must be a decimal integer")),
    v.bigint(),
  ], "must be an unsigned 64-bit integer (number or decimal string)"),
  v.transform((x) => BigInt(x)),
  v.check((x) => x >= -(1n << 63n) && x < 1n << 64n, "out of 64-bit range"),
  v.transform((x) => BigInt.asUintN(64, x)),
);

export const DpRankSchema = v.pipe(
  v.number("dp_rank must be a number"),
  v.integer("dp_rank must be an integer"),
  v.minValue(0, "dp_rank must be >= 0"),
  v.maxValue(0xffffffff, "dp_rank must fit in u32"),
);

const StoredBlockWire = v.object({
  block_hash: U64Schema,
  tokens_hash: U64Schema,
  mm_extra_info: v.optional(v.unknown()),
});

const StoredWire = v.object({
  stored: v.object({
    parent_hash: v.optional(v.nullable(U64Schema)),
    start_position: v.optional(v.nullable(v.number())),
    blocks: v.array(StoredBlockWire),
  }),
});
const RemovedWire = v.object({ removed: v.object({ block_hashes: v.array(U64Schema) }) });
const ClearedWire = v.literal("cleared");

export const KvCacheEventDataSchema = v.pipe(
  v.union([StoredWire, RemovedWire, ClearedWire], 'data must be {"stored":{...}}, {"removed":{...}} or "cleared"'),
  v.transform((d): KvCacheEventData => {
    if (d === "cleared") return { type: "cleared" };
    if ("stored" in d) {
      return {
        type: "stored",
        parentHash: d.stored.parent_hash ?? null,
        blocks: d.stored.blocks.map((b) => ({ blockHash: b.block_hash, tokensHash: b.tokens_hash })),
      };
    }
    return { type: "removed", blockHashes: d.removed.block_hashes };
  }),
);

export const KvCacheEventSchema = v.pipe(
  v.object({
    event_id: U64Schema,
    data: KvCacheEventDataSchema,
    dp_rank: v.optional(DpRankSchema, 0),
  }),
  v.transform((e): KvCacheEvent => ({ eventId: e.event_id, dpRank: e.dp_rank, data: e.data })),
);

export const RouterEventSchema = v.pipe(
  v.object({ worker_id: U64Schema, event: KvCacheEventSchema }),
  v.transform((e): RouterEvent => ({ workerId: e.worker_id, event: e.event })),
);

export const RouterEventBatchSchema = v.array(RouterEventSchema);

// ---------------------------------------------------------------- wire writers

/** The JSON-ready wire object of an event (bigints kept; write with stringifyBigint). */
export function eventDataToWire(d: KvCacheEventData): unknown {
  switch (d.type) {
    case "stored":
      return {
        stored: {
          parent_hash: d.parentHash,
          blocks: d.blocks.map((b) => ({ block_hash: b.blockHash, tokens_hash: b.tokensHash })),
        },
      };
    case "removed":
      return { removed: { block_hashes: [...d.blockHashes] } };
    case "cleared":
      return "cleared";
  }
}

export function routerEventToWire(e: RouterEvent): unknown {
  return {
    worker_id: e.workerId,
    event: { event_id: e.event.eventId, data: eventDataToWire(e.event.data), dp_rank: e.event.dpRank },
  };
}

/** Format valibot issues as one message naming each bad field path. */
export function describeIssues(issues: readonly v.BaseIssue<unknown>[]): string {
  return issues
    .map((i) => {
      const path = v.getDotPath(i);
      return path ? `${path}: ${i.message}` : i.message;
    })
    .join("; ");
}
