/**
 * Is the hand-written MessagePack reader (src/runtime/bun/zmq/msgpack.ts) still needed, or does a
 * well-kept library (msgpackr) do the job as fast? Issue 10 asks for this bench before keeping it.
 *
 *   bun bench/events/msgpack.ts [--runs 7] [--json FILE]
 *
 * Payloads: vLLM KVEventBatch messages as its publisher writes them (array_like events,
 * `["BlockStored", block_hashes, parent, token_ids, block_size, lora_id, medium, …]`, u64 hashes
 * above 2^53), the shapes bench/events/zmq.ts sends. Per batch, median of `--runs` runs:
 *   - ours decode()          generic decode to JS values (the hand-written reader)
 *   - msgpackr unpack        generic decode to JS values (int64AsType "auto": bigint only past 2^53, as ours)
 *   - ours vLLM, no hashing  decodeVllmBatch with a hasher that does nothing: the whole read
 *                            straight to RouterEvents (tokens into a Uint32Array, hashes to bigint)
 *   - ours vLLM, portable    decodeVllmBatch as the router runs it without the native library
 * A msgpackr-based decoder would cost at least `msgpackr unpack` plus the walk over its output,
 * so it can only win if `msgpackr unpack` alone is below `ours vLLM, no hashing`.
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { Packr, Unpackr } from "msgpackr";
import type { BatchBlockHasher } from "../../src/core/block-hash.ts";
import { decode } from "../../src/runtime/bun/zmq/msgpack.ts";
import { decodeVllmBatch } from "../../src/runtime/bun/zmq/vllm-decode.ts";
import { textTable } from "../support/text-table.ts";

const { values } = parseArgs({ options: { runs: { type: "string" }, json: { type: "string" } } });
const RUNS = Number(values.runs ?? 7);
const BS = 16;

const packr = new Packr({ useRecords: false, variableMapSize: true });
// "auto" (documented in msgpackr's README) is missing from its type declaration.
const unpackr = new Unpackr({
  useRecords: false,
  int64AsType: "auto" as "bigint",
  mapsAsObjects: false,
});

/** One batch of `events` BlockStored events of `blocks` blocks each, as vLLM's publisher packs it. */
function vllmBatch(events: number, blocks: number, seed: number): Uint8Array {
  const evs: unknown[] = [];
  let h = BigInt(seed) * 0x9e3779b97f4a7c15n;
  for (let e = 0; e < events; e++) {
    const hashes: bigint[] = [];
    for (let b = 0; b < blocks; b++) {
      h = (h * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
      hashes.push(h | (1n << 63n)); // past 2^53, as real hashes mostly are
    }
    const tokens = Array.from(
      { length: blocks * BS },
      (_, i) => (seed * 7919 + e * 131 + i * 17) % 151_000,
    );
    evs.push([
      "BlockStored",
      hashes,
      e === 0 ? null : hashes[0]! ^ 1n,
      tokens,
      BS,
      null,
      "GPU",
      null,
      null,
      0,
      null,
      null,
    ]);
  }
  return packr.pack([1_700_000_000.25, evs, 0]);
}

const noHash: BatchBlockHasher = (tokens, blockSize) =>
  new BigUint64Array(Math.floor(tokens.length / blockSize));

interface Row {
  case: string;
  bytes: number;
  ns: Record<string, number>;
}

function nsPerOp(fn: () => unknown, payloads: readonly Uint8Array[]): number {
  // Warm up, then time enough iterations for ~50 ms per run; median of RUNS runs.
  for (let i = 0; i < 200; i++) for (const p of payloads) void p, fn();
  let iters = 1;
  for (;;) {
    const t0 = performance.now();
    for (let i = 0; i < iters; i++) fn();
    if (performance.now() - t0 > 50) break;
    iters *= 2;
  }
  const samples: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = performance.now();
    for (let i = 0; i < iters; i++) fn();
    samples.push(((performance.now() - t0) * 1e6) / iters);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)]!;
}

const CASES: [string, number, number][] = [
  ["1 event x 1 block", 1, 1],
  ["8 events x 4 blocks", 8, 4],
  ["1 event x 64 blocks (1024 tokens)", 1, 64],
];

const rows: Row[] = [];
for (const [name, events, blocks] of CASES) {
  const payloads = Array.from({ length: 16 }, (_, i) => vllmBatch(events, blocks, i + 1));
  // Same answers before timing: both decoders read the same values.
  const ours = decode(payloads[0]!) as unknown[];
  const theirs = unpackr.unpack(payloads[0]!) as unknown[];
  if (
    JSON.stringify(ours, (_k, x) => (typeof x === "bigint" ? `${x}n` : x)) !==
    JSON.stringify(theirs, (_k, x) => (typeof x === "bigint" ? `${x}n` : x))
  ) {
    throw new Error(`${name}: decode() and msgpackr disagree`);
  }
  let k = 0;
  const next = () => payloads[k++ & 15]!;
  const opts = { workerId: 1n, blockSize: BS, firstEventId: 0n };
  const ns = {
    "ours decode()": nsPerOp(() => decode(next()), payloads),
    "msgpackr unpack": nsPerOp(() => unpackr.unpack(next()), payloads),
    "ours vLLM, no hashing": nsPerOp(
      () => decodeVllmBatch(next(), { ...opts, hasher: noHash }),
      payloads,
    ),
    "ours vLLM, portable": nsPerOp(() => decodeVllmBatch(next(), opts), payloads),
  };
  rows.push({ case: name, bytes: payloads[0]!.length, ns });
}

const cols = Object.keys(rows[0]!.ns);
console.log(`median ns per batch (${RUNS} runs)`);
console.log(
  textTable(
    ["case", "bytes", ...cols],
    rows.map((r) => [r.case, String(r.bytes), ...cols.map((c) => r.ns[c]!.toFixed(0))]),
  ),
);
if (values.json) writeFileSync(values.json, JSON.stringify(rows, null, 2));
