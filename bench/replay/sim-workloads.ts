/** The suite's seven workloads for the timing simulation (sim-grid.ts, sim-routers.ts): first `n` requests of each. */
import { join } from "node:path";
import { generate } from "./gen/shapes.ts";
import { loadTrace, TRACE_BLOCK_TOKENS, uniqueFullBlocks, type TraceRequest } from "./trace.ts";
import type { SchedulerConfig } from "../../src/router/choose/config.ts";
import type { SimOptions } from "./sim.ts";

const TRACES = join(import.meta.dir, "..", "..", "..", "shared", "traces");

/** [name, trace, KV capacity as a fraction of the trace's unique blocks]. */
export function simWorkloads(n: number): [string, TraceRequest[], number][] {
  return [
    ["conversation half", loadTrace(join(TRACES, "conversation_trace.jsonl"), n), 0.5],
    ["conversation quarter", loadTrace(join(TRACES, "conversation_trace.jsonl"), n), 0.25],
    ["synthetic half", loadTrace(join(TRACES, "synthetic_trace.jsonl"), n), 0.5],
    ["synthetic quarter", loadTrace(join(TRACES, "synthetic_trace.jsonl"), n), 0.25],
    ["chat half", generate("chat", 1).slice(0, n), 0.5],
    ["agentic half", generate("agentic", 1).slice(0, n), 0.5],
    ["rag half", generate("rag", 1).slice(0, n), 0.5],
  ];
}

/** The suite's cluster in the simulation: 8 engines, the mocker's timing, 32 output tokens. */
export function simOptions(
  trace: readonly TraceRequest[],
  kvFraction: number,
  arrivalScale: number,
  routers = 1,
): SimOptions {
  const engines = 8;
  return {
    engines,
    kvBlocks: Math.max(1, Math.ceil((uniqueFullBlocks(trace) * kvFraction) / engines)),
    prefillUsPerToken: 200,
    decodeMsPerStep: 20,
    maxOutputTokens: 32,
    arrivalScale,
    seed: 1,
    routers,
  };
}

/** kv's knobs at the router's defaults, as the CLI sets them (src/config/schema.ts), on trace blocks. */
export const KV_DEFAULTS: Partial<SchedulerConfig> = {
  blockSize: TRACE_BLOCK_TOKENS,
  overlapCredit: 16,
  inflightOverlap: true,
  prefillWaitFactor: 1.05,
  prefillWaitQueueShare: 0.75,
};
