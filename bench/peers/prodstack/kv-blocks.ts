/**
 * Prints the per-engine KV blocks bench:replay would give a trace (cell.ts: --kv-fraction of the
 * replay's unique full 512-token blocks, split over the engines), so run.sh can start the
 * engines in front of production-stack's router with exactly the capacity our side gets.
 * Usage: bun kv-blocks.ts TRACE REQUESTS [ENGINES=8] [KV_FRACTION=0.5] [SEED=1]
 */
import { traceOf } from "../../replay/trace-spec.ts";
import { TRACE_BLOCK_TOKENS, uniqueFullBlocks } from "../../replay/trace.ts";

const [spec, requests, engines = "8", fraction = "0.5", seed = "1"] = process.argv.slice(2);
if (!spec || !requests)
  throw new Error("usage: bun kv-blocks.ts TRACE REQUESTS [ENGINES] [KV_FRACTION] [SEED]");
const { trace } = traceOf(spec, Number(requests), Number(seed));
const blockSize = 512;
console.log(
  Math.max(
    1,
    Math.ceil(
      (uniqueFullBlocks(trace) * Number(fraction) * (TRACE_BLOCK_TOKENS / blockSize)) /
        Number(engines),
    ),
  ),
);
