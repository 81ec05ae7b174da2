import { describe, expect, test } from "bun:test";
import {
  DEFAULT_MAX_TRANSFER_BATCH_SIZE,
  MAX_BATCH_SIZE_ENV,
  maxTransferBatchSize,
  splitIntoBatches,
} from "../../../src/transfer/batches.ts";

const flat = (n: number) => Uint32Array.from({ length: 2 * n }, (_, i) => i);

describe("splitting a request into batches", () => {
  test("at most max pairs per batch, all full but the last, in order, as views", () => {
    const pairs = flat(35);
    const batches = splitIntoBatches(pairs, 16);
    expect(batches.map((b) => b.length / 2)).toEqual([16, 16, 3]);
    expect(batches.flatMap((b) => [...b])).toEqual([...pairs]);
    expect(batches[1]!.buffer).toBe(pairs.buffer); // no copies
  });

  test("a request that fits is one batch, including an empty one", () => {
    expect(splitIntoBatches(flat(16), 16)).toHaveLength(1);
    expect(splitIntoBatches(flat(0), 16)).toHaveLength(1);
    expect(splitIntoBatches(flat(32), 16).map((b) => b.length / 2)).toEqual([16, 16]);
    expect(splitIntoBatches(flat(3), 1).map((b) => [...b])).toEqual([
      [0, 1],
      [2, 3],
      [4, 5],
    ]);
  });

  test("a max batch size below 1 is an error", () => {
    expect(() => splitIntoBatches(flat(2), 0)).toThrow(RangeError);
  });

  test("the max batch size is 16 unless the env gives a positive integer", () => {
    expect(DEFAULT_MAX_TRANSFER_BATCH_SIZE).toBe(16);
    expect(maxTransferBatchSize({})).toBe(16);
    expect(maxTransferBatchSize({ [MAX_BATCH_SIZE_ENV]: "64" })).toBe(64);
    for (const bad of ["0", "-3", "1.5", "many", ""])
      expect(maxTransferBatchSize({ [MAX_BATCH_SIZE_ENV]: bad })).toBe(16);
  });
});
