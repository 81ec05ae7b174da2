/**
 * `bun bench/replay/sim-grid.ts`: kv's knobs (credit × wait factor × slack) on every workload of
 * the suite at three loads, in the timing simulation (sim.ts), and the setting whose worst
 * TTFT p90 ÷ that workload's best p90 is smallest: how the defaults were chosen. Seconds, no
 * processes; not the measurement of record.
 */
import { join } from "node:path";
import { schedulerConfig } from "../../src/scheduler/config.ts";
import { textTable } from "../support/text-table.ts";
import { generate } from "./gen/shapes.ts";
import { simulate, type SimOptions } from "./sim.ts";
import { loadTrace, TRACE_BLOCK_TOKENS, uniqueFullBlocks, type TraceRequest } from "./trace.ts";

const TRACES = join(import.meta.dir, "..", "..", "..", "shared", "traces");
const N = Number(process.argv[2] ?? 1000);
const workloads: [string, TraceRequest[], number][] = [
  ["conversation half", loadTrace(join(TRACES, "conversation_trace.jsonl"), N), 0.5],
  ["conversation quarter", loadTrace(join(TRACES, "conversation_trace.jsonl"), N), 0.25],
  ["synthetic half", loadTrace(join(TRACES, "synthetic_trace.jsonl"), N), 0.5],
  ["synthetic quarter", loadTrace(join(TRACES, "synthetic_trace.jsonl"), N), 0.25],
  ["chat half", generate("chat", 1).slice(0, N), 0.5],
  ["agentic half", generate("agentic", 1).slice(0, N), 0.5],
  ["rag half", generate("rag", 1).slice(0, N), 0.5],
];
const list = (name: string, dflt: number[]) => (process.env[name] ? process.env[name]!.split(",").map(Number) : dflt);
const credits = list("CREDITS", [0, 8, 32]);
const factors = list("FACTORS", [0, 1.1, 1.2, 1.5]);
const slacks = list("SLACKS", [0, 0.5, 1, 2]);
/** The setting to report workload by workload (the default). */
const chosen = process.env["CHOSEN"] ?? "c=16 f=1.05 s=0.75";
const settings: { label: string; c: number; f: number; s: number }[] = [];
for (const c of credits) for (const f of factors) for (const s of f === 0 ? [0] : slacks) settings.push({ label: `c=${c} f=${f} s=${s}`, c, f, s });
const peers = ["dynamo", "sglang", "llm-d", "prodstack-prefix", "prodstack-session", "least-loaded"];

const worst = new Map<string, number>();
const rows: string[][] = [];
for (const [name, trace, frac] of workloads) {
  for (const scale of [2, 1, 0.5]) {
    const o: SimOptions = { engines: 8, kvBlocks: Math.max(1, Math.ceil((uniqueFullBlocks(trace) * frac) / 8)), prefillUsPerToken: 200, decodeMsPerStep: 20, maxOutputTokens: 32, arrivalScale: scale, seed: 1 };
    const base = { blockSize: TRACE_BLOCK_TOKENS, inflightOverlap: true };
    const p90 = new Map<string, number>();
    for (const st of settings) {
      const r = simulate(trace, "kv", schedulerConfig({ ...base, overlapCredit: st.c, prefillWaitFactor: st.f === 0 ? null : st.f, prefillWaitQueueShare: st.s }), o);
      p90.set(st.label, r.ttft.p90);
    }
    const best = Math.min(...p90.values());
    for (const [k, v] of p90) worst.set(k, Math.max(worst.get(k) ?? 0, v / best));
    const peer = peers.map((p) => [p, simulate(trace, p, schedulerConfig(base), o).ttft.p90] as const).sort((x, y) => x[1] - y[1])[0]!;
    const bestLabel = [...p90].sort((x, y) => x[1] - y[1])[0]![0];
    const mine = p90.get(chosen) ?? NaN;
    rows.push([name, `×${1 / scale}`, bestLabel, best.toFixed(0), `${peer[0]} ${peer[1].toFixed(0)}`, mine.toFixed(0), (mine / best).toFixed(2), (mine / peer[1]).toFixed(2)]);
  }
}
console.log(textTable(["workload", "load", "best kv setting", "its p90 (trace ms)", "best peer p90", `${chosen} p90`, "÷ best kv", "÷ best peer"], rows));
const ranked = [...worst].sort((x, y) => x[1] - y[1]);
console.log(textTable(["setting", "worst p90 ÷ best"], ranked.slice(0, 12).map(([k, v]) => [k, v.toFixed(2)])));
