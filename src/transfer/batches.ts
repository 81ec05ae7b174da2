/**
 * Batching (Dynamo KVBM's ConnectorTransferBatcher, its offload manager's batching): a
 * request larger than the maximum batch size is cut into consecutive batches that run
 * concurrently, so one huge request cannot exhaust the copy resources.
 */

/** MAX_TRANSFER_BATCH_SIZE of the offload manager. */
export const DEFAULT_MAX_TRANSFER_BATCH_SIZE = 16;
export const MAX_BATCH_SIZE_ENV = "DYN_KVBM_MAX_TRANSFER_BATCH_SIZE";

/** The configured maximum batch size: the env override when it is a positive integer. */
export function maxTransferBatchSize(env: Readonly<Record<string, string | undefined>>): number {
  const raw = env[MAX_BATCH_SIZE_ENV];
  const n = raw === undefined ? NaN : Number(raw);
  return Number.isInteger(n) && n > 0 ? n : DEFAULT_MAX_TRANSFER_BATCH_SIZE;
}

/**
 * Flat (from, to) pairs cut into batches of at most `maxBatch` pairs: views on `pairs`,
 * in order, every batch full except possibly the last.
 */
export function splitIntoBatches(pairs: Uint32Array, maxBatch: number): Uint32Array[] {
  if (!Number.isInteger(maxBatch) || maxBatch < 1)
    throw new RangeError(`max batch size must be a positive integer, got ${maxBatch}`);
  const n = pairs.length >>> 1;
  if (n <= maxBatch) return [pairs];
  const out: Uint32Array[] = [];
  for (let i = 0; i < n; i += maxBatch)
    out.push(pairs.subarray(2 * i, 2 * Math.min(n, i + maxBatch)));
  return out;
}
