/** `--trace` values: `gen:SHAPE` generates (seeded); anything else is a Mooncake JSONL path. */
import { existsSync } from "node:fs";
import { SHAPES, generate, type Shape } from "./gen/shapes.ts";
import { loadTrace, type TraceRequest } from "./trace.ts";

export function traceOf(
  spec: string,
  limit: number,
  seed: number,
): { trace: TraceRequest[]; name: string } {
  if (spec.startsWith("gen:")) {
    const shape = spec.slice(4);
    if (!(SHAPES as readonly string[]).includes(shape))
      throw new Error(`--trace gen:SHAPE: SHAPE must be one of ${SHAPES.join(", ")}, got ${shape}`);
    return { trace: generate(shape as Shape, seed).slice(0, limit), name: `gen-${shape}` };
  }
  if (!existsSync(spec)) {
    throw new Error(
      `trace ${spec} not found: pass --trace PATH (Mooncake JSONL; bench/replay/fixtures/synthetic-300.jsonl is a small one) or gen:${SHAPES.join("|")}`,
    );
  }
  return {
    trace: loadTrace(spec, limit),
    name: spec
      .split("/")
      .pop()!
      .replace(/\.jsonl$/, ""),
  };
}
