/**
 * Native batch hasher (bun:ffi -> ffi/build/libswitchyard.so) beside the portable one.
 *
 *   bun bench/micro/hash-native.ts [--json FILE]
 *
 * Cases: an 8k-token prompt at block size 16, and a 128k-token prompt at block sizes 16
 * and 512, each hashed by the portable hasher (src/core/block-hash.ts, on src/core/xxh3.ts) and by the native one
 * (one FFI call per prompt, output array included). Median of timed batches after a warm-up,
 * as µs per prompt and tokens/s. Needs `bun run build:ffi`.
 */
import {
  portableBatchHasher,
  XXH3_SEED,
  type BatchBlockHasher,
} from "../../src/core/block-hash.ts";
import { createNativeBlockHasher } from "../../src/runtime/bun/ffi-hasher.ts";
import { loadNativeLibrary } from "../../src/transfer/native/library.ts";
import { randomTokens } from "../../test/support/prng.ts";
import { median } from "../replay/stats.ts";
import { textTable } from "../support/text-table.ts";

interface CaseResult {
  name: string;
  hasher: "portable" | "native";
  tokens: number;
  blockSize: number;
  medianUs: number;
  minUs: number;
  tokensPerSec: number;
}

/** Deterministic pseudo-random token ids (seeded xorshift32), vocabulary 150k. */
const makeTokens = (n: number, seed = 12345): Uint32Array => randomTokens(n, 150_000, seed);

function timeCase(
  hasher: CaseResult["hasher"],
  h: BatchBlockHasher,
  tokens: Uint32Array,
  bs: number,
): CaseResult {
  const fn = () => h(tokens, bs, XXH3_SEED);
  const warmEnd = performance.now() + 400;
  while (performance.now() < warmEnd) fn();
  let inner = 1;
  for (;;) {
    const t0 = performance.now();
    for (let i = 0; i < inner; i++) fn();
    if (performance.now() - t0 >= 5 || inner >= 1 << 16) break;
    inner *= 2;
  }
  const samples: number[] = [];
  const start = performance.now();
  while (samples.length < 9 || (performance.now() - start < 300 && samples.length < 101)) {
    const t0 = performance.now();
    for (let i = 0; i < inner; i++) fn();
    samples.push(((performance.now() - t0) * 1000) / inner);
  }
  const med = median(samples);
  const k = tokens.length >= 1024 ? `${tokens.length >> 10}k` : String(tokens.length);
  return {
    name: `${hasher} ${k} bs${bs}`,
    hasher,
    tokens: tokens.length,
    blockSize: bs,
    medianUs: med,
    minUs: Math.min(...samples),
    tokensPerSec: tokens.length / (med / 1e6),
  };
}

export async function runNativeHashBench(): Promise<Record<string, unknown>> {
  const lib = loadNativeLibrary();
  if (!lib.ok) return { bench: "hash-native", skipped: lib.message, cases: [] };
  const native = createNativeBlockHasher(lib.library);
  const t8k = makeTokens(8192);
  const t128k = makeTokens(131072);
  for (const [t, bs] of [
    [t8k, 16],
    [t128k, 16],
    [t128k, 512],
  ] as const) {
    const a = portableBatchHasher(t, bs, XXH3_SEED),
      b = native(t, bs, XXH3_SEED);
    if (a.length !== b.length || a.some((v, i) => v !== b[i]))
      throw new Error(`native and portable hashes differ at bs ${bs}`);
  }
  const cases: CaseResult[] = [];
  for (const [t, bs] of [
    [t8k, 16],
    [t128k, 16],
    [t128k, 512],
  ] as const) {
    cases.push(timeCase("portable", portableBatchHasher, t, bs));
    cases.push(timeCase("native", native, t, bs));
  }
  return { bench: "hash-native", runtime: `bun ${Bun.version}`, library: lib.library.path, cases };
}

function printTable(cases: CaseResult[]): void {
  const head = ["case", "median µs", "min µs", "Mtok/s", "speed-up"];
  const rows = cases.map((c) => {
    const portable = cases.find(
      (p) => p.hasher === "portable" && p.tokens === c.tokens && p.blockSize === c.blockSize,
    );
    const up =
      c.hasher === "native" && portable ? `${(portable.medianUs / c.medianUs).toFixed(1)}x` : "";
    return [
      c.name,
      c.medianUs.toFixed(2),
      c.minUs.toFixed(2),
      (c.tokensPerSec / 1e6).toFixed(1),
      up,
    ];
  });
  console.log(textTable(head, rows));
}

if (import.meta.main) {
  const result = await runNativeHashBench();
  if (result.skipped) console.log(`skipped: ${result.skipped}`);
  printTable(result.cases as CaseResult[]);
  const i = process.argv.indexOf("--json");
  if (i > 0 && process.argv[i + 1]) {
    await Bun.write(process.argv[i + 1]!, JSON.stringify(result, null, 2) + "\n");
    console.log(`wrote ${process.argv[i + 1]}`);
  }
}
