/**
 * `bun bench/replay/gen/run.ts --shape chat|agentic|rag [--seed 1] [--out FILE]`: write a
 * generated trace as Mooncake JSONL (with session_id) and print its summary. The replay bench
 * also takes `--trace gen:SHAPE` directly.
 */
import { parseArgs } from "node:util";
import { writeFileSync } from "node:fs";
import { idealHitRate } from "../oracle.ts";
import { uniqueFullBlocks } from "../trace.ts";
import { SHAPES, generate, toJsonl, type Shape } from "./shapes.ts";

const { values: a } = parseArgs({
  options: {
    shape: { type: "string", default: "chat" },
    seed: { type: "string", default: "1" },
    out: { type: "string" },
  },
});
if (!(SHAPES as readonly string[]).includes(a.shape!))
  throw new Error(`--shape must be one of ${SHAPES.join(", ")}`);
const trace = generate(a.shape as Shape, Number(a.seed));
const span = (trace.at(-1)!.timestamp - trace[0]!.timestamp) / 1000;
const tokens = trace.reduce((s, r) => s + r.inputLength, 0);
console.log(
  `${a.shape} seed ${a.seed}: ${trace.length} requests over ${span.toFixed(0)} s, ${(tokens / trace.length).toFixed(0)} prompt tokens mean, ` +
    `${uniqueFullBlocks(trace)} unique blocks, ideal hit rate ${idealHitRate(trace).toFixed(3)}`,
);
if (a.out) writeFileSync(a.out, toJsonl(trace));
