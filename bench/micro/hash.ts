/**
 * Micro-benchmark of the portable block hasher (src/core/block-hash.ts, on src/core/xxh3.ts).
 *
 *   bun bench/micro/hash.ts [--json FILE]
 *
 * Cases: an 8k-token prompt at block size 16 (from a Uint32Array and from a number[]), a
 * 128k-token prompt at block sizes 16 and 512 (the specialised paths) and 32 and 64 (the
 * general 17–128 and long paths), and the sequence-hash chain over 8192 blocks. Each case
 * reports the median of several timed runs (after a 600 ms warm-up) as µs per prompt and
 * tokens/s.
 */
import {
  computeBlockHashes,
  computeSeqHashes,
  portableBatchHasher,
  XXH3_SEED,
} from "../../src/core/block-hash.ts";
import { randomTokens } from "../../test/support/prng.ts";
import { median } from "../replay/stats.ts";
import { textTable } from "../support/text-table.ts";

interface CaseResult {
  name: string;
  tokens: number;
  blockSize: number;
  blocks: number;
  medianUs: number;
  minUs: number;
  tokensPerSec: number;
  runs: number;
}

/** Deterministic pseudo-random token ids (seeded xorshift32), vocabulary 150k. */
const makeTokens = (n: number, seed = 12345): Uint32Array => randomTokens(n, 150_000, seed);

/** Times `fn` in batches of `inner` calls so short cases are not dominated by timer noise. */
function timeCase(
  name: string,
  tokens: number,
  blockSize: number,
  blocks: number,
  fn: () => unknown,
): CaseResult {
  // Warm up long enough for the optimizing JIT tier (FTL compiles in the background and
  // takes ~100 ms for the unrolled long path), so the figures are steady-state.
  const warmEnd = performance.now() + 600;
  while (performance.now() < warmEnd) fn();
  const budgetMs = 400;
  let inner = 1;
  // Calibrate: one batch should take about 5 ms.
  for (;;) {
    const t0 = performance.now();
    for (let i = 0; i < inner; i++) fn();
    const dt = performance.now() - t0;
    if (dt >= 5 || inner >= 1 << 16) break;
    inner *= 2;
  }
  const samples: number[] = [];
  const start = performance.now();
  while (samples.length < 9 || (performance.now() - start < budgetMs && samples.length < 101)) {
    const t0 = performance.now();
    for (let i = 0; i < inner; i++) fn();
    samples.push(((performance.now() - t0) * 1000) / inner);
  }
  const med = median(samples);
  return {
    name,
    tokens,
    blockSize,
    blocks,
    medianUs: med,
    minUs: Math.min(...samples),
    tokensPerSec: tokens / (med / 1e6),
    runs: samples.length,
  };
}

export async function runHashBench(): Promise<Record<string, unknown>> {
  const t8k = makeTokens(8192);
  const t128k = makeTokens(131072);
  const seq128k = portableBatchHasher(t128k, 16, XXH3_SEED);
  const asArray8k = Array.from(t8k);
  const cases: CaseResult[] = [
    timeCase("portable 8k bs16", 8192, 16, 512, () => portableBatchHasher(t8k, 16, XXH3_SEED)),
    timeCase("portable 8k bs16 (number[] via computeBlockHashes)", 8192, 16, 512, () =>
      computeBlockHashes(asArray8k, 16),
    ),
    timeCase("portable 128k bs16", 131072, 16, 8192, () =>
      portableBatchHasher(t128k, 16, XXH3_SEED),
    ),
    timeCase("portable 128k bs512", 131072, 512, 256, () =>
      portableBatchHasher(t128k, 512, XXH3_SEED),
    ),
    timeCase("portable 128k bs32 (general 17-128 path)", 131072, 32, 4096, () =>
      portableBatchHasher(t128k, 32, XXH3_SEED),
    ),
    timeCase("portable 128k bs64 (general long path)", 131072, 64, 2048, () =>
      portableBatchHasher(t128k, 64, XXH3_SEED),
    ),
    timeCase("seq hashes 8192 blocks", 131072, 16, 8192, () => computeSeqHashes(seq128k)),
  ];
  return {
    bench: "hash",
    runtime: typeof Bun !== "undefined" ? `bun ${Bun.version}` : "unknown",
    cases,
  };
}

function printTable(cases: CaseResult[]): void {
  const head = ["case", "tokens", "bs", "blocks", "median µs", "min µs", "Mtok/s"];
  const rows = cases.map((c) => [
    c.name,
    String(c.tokens),
    String(c.blockSize),
    String(c.blocks),
    c.medianUs.toFixed(1),
    c.minUs.toFixed(1),
    (c.tokensPerSec / 1e6).toFixed(1),
  ]);
  console.log(textTable(head, rows));
}

if (import.meta.main) {
  const result = await runHashBench();
  printTable(result.cases as CaseResult[]);
  const i = process.argv.indexOf("--json");
  if (i > 0 && process.argv[i + 1]) {
    await Bun.write(process.argv[i + 1]!, JSON.stringify(result, null, 2) + "\n");
    console.log(`wrote ${process.argv[i + 1]}`);
  }
}
