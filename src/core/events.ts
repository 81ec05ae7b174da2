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
  /**
   * A tier's blocks named by reference only (vLLM's OffloadingConnector without self-describing
   * events): each hash is the engine's hash of the LAST block of a chunk of `span` blocks that
   * the same (worker, dp rank) already reported on another medium; no tokens come with it. The
   * index finds the chunk through its own lookups. `blocks` is empty then. Never on the wire.
   */
  readonly chunks?: { readonly tailHashes: readonly ExternalBlockHash[]; readonly span: number };
}
export interface RemovedData {
  readonly type: "removed";
  readonly blockHashes: readonly ExternalBlockHash[];
}
export interface ClearedData {
  readonly type: "cleared";
}
export type KvCacheEventData = StoredData | RemovedData | ClearedData;

/**
 * Where an engine keeps a block: its GPU (the prefix cache routing has always priced), its CPU
 * memory (vLLM's OffloadingConnector, SGLang's HiCache host pool) or its disk / file tier. A
 * block's holder is (worker, dp rank, medium): one block can be on several media of one engine.
 */
export type KvMedium = "gpu" | "cpu" | "disk";
export const KV_MEDIA: readonly KvMedium[] = ["gpu", "cpu", "disk"];

export interface KvCacheEvent {
  readonly eventId: EventId;
  readonly dpRank: DpRank;
  readonly data: KvCacheEventData;
  /**
   * Stored / Removed: the medium they speak for; absent means GPU (every engine without tiers).
   * Cleared: absent empties every medium of the (worker, dp rank) (an engine reset or restart);
   * set, only that medium.
   */
  readonly medium?: KvMedium;
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
  medium?: KvMedium,
): RouterEvent {
  return {
    workerId,
    event: withMedium({ eventId, dpRank, data: { type: "stored", parentHash, blocks } }, medium),
  };
}

export function removedEvent(
  workerId: WorkerId,
  eventId: EventId,
  blockHashes: readonly ExternalBlockHash[],
  dpRank: DpRank = 0,
  medium?: KvMedium,
): RouterEvent {
  return {
    workerId,
    event: withMedium({ eventId, dpRank, data: { type: "removed", blockHashes } }, medium),
  };
}

export function clearedEvent(
  workerId: WorkerId,
  eventId: EventId,
  dpRank: DpRank = 0,
  medium?: KvMedium,
): RouterEvent {
  return { workerId, event: withMedium({ eventId, dpRank, data: { type: "cleared" } }, medium) };
}

/** GPU is the default: an event about the GPU carries no medium, so GPU-only events stay as they were. */
function withMedium(e: KvCacheEvent, medium: KvMedium | undefined): KvCacheEvent {
  return medium === undefined || (medium === "gpu" && e.data.type !== "cleared")
    ? e
    : { ...e, medium };
}

// ---------------------------------------------------------------- wire schemas

const DECIMAL = /^-?\d+$/;

/**
 * A u64 given as a JSON number, a decimal string or a bigint. Checked by type in one step, with
 * the messages a union of the three gave: the union tried its branches in turn and built an
 * issue object for each branch that failed, for every hash of every event (an HTTP event batch
 * spent more time there than the index spent applying it).
 */
export const U64Schema = v.pipe(
  v.unknown(),
  v.rawCheck(({ dataset, addIssue }) => {
    const x = dataset.value;
    if (typeof x === "string") {
      if (!DECIMAL.test(x)) addIssue({ message: "must be a decimal integer" });
    } else if (typeof x === "number") {
      if (!Number.isInteger(x)) addIssue({ message: "must be an integer" });
      if (!Number.isSafeInteger(x))
        addIssue({ message: "must be a safe integer; send larger values as strings" });
    } else if (typeof x !== "bigint") {
      addIssue({ message: "must be an unsigned 64-bit integer (number or decimal string)" });
    }
  }),
  v.transform((x) => BigInt(x as number | string | bigint)),
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
  v.union(
    [StoredWire, RemovedWire, ClearedWire],
    'data must be {"stored":{...}}, {"removed":{...}} or "cleared"',
  ),
  v.transform((d): KvCacheEventData => {
    if (d === "cleared") return { type: "cleared" };
    if ("stored" in d) {
      return {
        type: "stored",
        parentHash: d.stored.parent_hash ?? null,
        blocks: d.stored.blocks.map((b) => ({
          blockHash: b.block_hash,
          tokensHash: b.tokens_hash,
        })),
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

/**
 * Dynamo's RouterEvent.storage_tier (lib/kv-router/src/protocols.rs, newer: snake_case
 * StorageTier, default device) -> the medium. "external" (a store shared by the fleet) is not one
 * engine's memory, so no (worker, medium) can hold it: refused by name.
 */
const STORAGE_TIERS: Record<string, KvMedium> = { device: "gpu", host_pinned: "cpu", disk: "disk" };
const MEDIUM_TIERS: Record<KvMedium, string> = { gpu: "device", cpu: "host_pinned", disk: "disk" };
const StorageTierSchema = v.picklist(
  ["device", "host_pinned", "disk"],
  'storage_tier must be "device", "host_pinned" or "disk" ("external" is not held by one worker)',
);

export const RouterEventSchema = v.pipe(
  v.object({
    worker_id: U64Schema,
    storage_tier: v.optional(StorageTierSchema),
    event: KvCacheEventSchema,
  }),
  v.transform((e): RouterEvent => {
    const medium = e.storage_tier === undefined ? undefined : STORAGE_TIERS[e.storage_tier];
    return { workerId: e.worker_id, event: withMedium(e.event, medium) };
  }),
);

export const RouterEventBatchSchema = v.array(RouterEventSchema);

// ---------------------------------------------------------------- the common case, without valibot

const U64_MIN = -(1n << 63n);
const U64_END = 1n << 64n;

/** A u64 exactly as U64Schema reads it, or undefined where U64Schema would report an issue. */
function u64Of(x: unknown): bigint | undefined {
  let b: bigint;
  if (typeof x === "string") {
    if (!DECIMAL.test(x)) return undefined;
    b = BigInt(x);
  } else if (typeof x === "number") {
    if (!Number.isSafeInteger(x)) return undefined;
    b = BigInt(x);
  } else if (typeof x === "bigint") b = x;
  else return undefined;
  return b >= U64_MIN && b < U64_END ? BigInt.asUintN(64, b) : undefined;
}

function plainObject(x: unknown): x is Record<string, unknown> {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

function fastData(d: unknown): KvCacheEventData | undefined {
  if (d === "cleared") return { type: "cleared" };
  if (!plainObject(d)) return undefined;
  const stored = d.stored;
  if (stored !== undefined) {
    if (!plainObject(stored) || !Array.isArray(stored.blocks)) return undefined;
    const p = stored.parent_hash;
    const parentHash = p === undefined || p === null ? null : u64Of(p);
    if (parentHash === undefined) return undefined;
    const sp = stored.start_position;
    if (sp !== undefined && sp !== null && typeof sp !== "number") return undefined;
    const wire = stored.blocks;
    const blocks: StoredBlock[] = new Array(wire.length);
    for (let i = 0; i < wire.length; i++) {
      const b = wire[i];
      if (!plainObject(b)) return undefined;
      const blockHash = u64Of(b.block_hash);
      const tokensHash = u64Of(b.tokens_hash);
      if (blockHash === undefined || tokensHash === undefined) return undefined;
      blocks[i] = { blockHash, tokensHash };
    }
    return { type: "stored", parentHash, blocks };
  }
  const removed = d.removed;
  if (!plainObject(removed) || !Array.isArray(removed.block_hashes)) return undefined;
  const wire = removed.block_hashes;
  const blockHashes: bigint[] = new Array(wire.length);
  for (let i = 0; i < wire.length; i++) {
    const h = u64Of(wire[i]);
    if (h === undefined) return undefined;
    blockHashes[i] = h;
  }
  return { type: "removed", blockHashes };
}

/**
 * A batch of wire events as RouterEventBatchSchema parses it, for the batches engines send
 * (every field where it belongs): checked and converted by hand, in one pass. Anything else —
 * an invalid field, an odd shape — gives undefined, and the caller runs the schema, which
 * names what is wrong. Why: valibot builds and walks a result object per field, and an HTTP
 * batch of Stored events spent ~1 µs per block there, several times the index's apply.
 * test/unit/core/events-fast-path.test.ts holds it equal to the schema.
 */
export function fastRouterEventBatch(json: unknown): RouterEvent[] | undefined {
  if (!Array.isArray(json)) return undefined;
  const out: RouterEvent[] = new Array(json.length);
  for (let i = 0; i < json.length; i++) {
    const e = json[i];
    if (!plainObject(e) || !plainObject(e.event)) return undefined;
    const workerId = u64Of(e.worker_id);
    const ev = e.event;
    const eventId = u64Of(ev.event_id);
    if (workerId === undefined || eventId === undefined) return undefined;
    const r = ev.dp_rank;
    let dpRank = 0;
    if (r !== undefined) {
      if (typeof r !== "number" || !Number.isInteger(r) || r < 0 || r > 0xffffffff)
        return undefined;
      dpRank = r;
    }
    const data = fastData(ev.data);
    if (data === undefined) return undefined;
    const tier = e.storage_tier;
    if (tier === undefined) {
      out[i] = { workerId, event: { eventId, dpRank, data } };
      continue;
    }
    const medium =
      typeof tier === "string" && Object.hasOwn(STORAGE_TIERS, tier)
        ? STORAGE_TIERS[tier]
        : undefined;
    if (medium === undefined) return undefined;
    out[i] = { workerId, event: withMedium({ eventId, dpRank, data }, medium) };
  }
  return out;
}

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
  const event = {
    event_id: e.event.eventId,
    data: eventDataToWire(e.event.data),
    dp_rank: e.event.dpRank,
  };
  const medium = e.event.medium;
  if (medium === undefined) return { worker_id: e.workerId, event };
  return { worker_id: e.workerId, storage_tier: MEDIUM_TIERS[medium], event };
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
