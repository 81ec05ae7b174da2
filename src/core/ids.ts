/**
 * Identifiers shared by every part of the router (Dynamo's identifiers).
 *
 * All 64-bit values (worker ids, block hashes, event ids) are `bigint`: JavaScript numbers
 * lose bits above 2^53 and engine hashes use the whole u64 range. A data-parallel rank is
 * a u32 and fits a `number`.
 */

/** A worker (engine instance) id: u64. */
export type WorkerId = bigint;
/** A data-parallel rank inside a worker: u32, 0 when DP is not used. */
export type DpRank = number;
/** Hash of the tokens of one block (plus LoRA salt / multimodal info), as Dynamo's compute_block_hash_for_seq. */
export type LocalBlockHash = bigint;
/** The engine's own hash of a block; depends on the whole prefix. */
export type ExternalBlockHash = bigint;
/** The router's rolling prefix hash (Dynamo's compute_seq_hash_for_block). */
export type SequenceHash = bigint;
/** A KV event id: u64, dense per (worker, dp_rank) publisher. */
export type EventId = bigint;

/** A routing target: one data-parallel rank of one worker. */
export interface WorkerWithDpRank {
  readonly workerId: WorkerId;
  readonly dpRank: DpRank;
}

/**
 * This router process's identity: one u64, drawn at random once at start (the composition
 * root), never derived from the clock, so two routers started in the same millisecond still
 * differ. It names the router in load-sync messages, in /health's router header and as the
 * prefix of its request ids; 0 is a router alone (tests, benches).
 */
export type RouterId = bigint;

/** A router id as 16 hex digits: its form wherever a string is needed (headers, request ids, logs). */
export function routerIdHex(id: RouterId): string {
  return id.toString(16).padStart(16, "0");
}

/**
 * Map key for a (worker, dp_rank) pair. Strings keep Map lookups cheap and exact; the
 * format is stable and parseable so keys can travel through logs and Redis.
 */
export type WorkerKey = string;

export function workerKey(workerId: WorkerId, dpRank: DpRank = 0): WorkerKey {
  return `${workerId}:${dpRank}`;
}

export function keyOf(w: WorkerWithDpRank): WorkerKey {
  return `${w.workerId}:${w.dpRank}`;
}

export function parseWorkerKey(key: WorkerKey): WorkerWithDpRank {
  const i = key.lastIndexOf(":");
  if (i <= 0) throw new Error(`invalid worker key "${key}"`);
  return { workerId: BigInt(key.slice(0, i)), dpRank: Number(key.slice(i + 1)) };
}

export function worker(workerId: WorkerId | number, dpRank: DpRank = 0): WorkerWithDpRank {
  return { workerId: BigInt(workerId), dpRank };
}

/** Ordering by (worker_id, dp_rank), as Dynamo's derived Ord. */
export function compareWorkers(a: WorkerWithDpRank, b: WorkerWithDpRank): number {
  if (a.workerId !== b.workerId) return a.workerId < b.workerId ? -1 : 1;
  return a.dpRank - b.dpRank;
}
