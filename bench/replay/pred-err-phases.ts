/**
 * `bun bench/replay/pred-err-phases.ts LOG [--parts 10]`: kv's TTFT predictor error through a
 * run, from a router's access log (`--log-format json`: each line's `predicted_ttft_ms` beside its
 * `ttft_ms`). Requests in the order they arrived, cut into consecutive parts; per part the p50 and
 * p90 of |predicted ÷ observed − 1|, the median of predicted ÷ observed and how many were more
 * than 0.3 off; then the whole run and the run after its first third.
 *
 * Why: the bench's "pred err" is the whole run's (the router's histogram), and on a fresh cluster
 * the first second's first tokens come late (every process still compiling), so a short run can
 * read as a bad predictor when only its start is. This says which. Replay with the router's log
 * on: `bun run bench:replay --policies kv --verbose --router-arg=--log-format --router-arg=json
 * 2> LOG`. Note `ttft_ms` runs from the request's arrival at the router, the predictor's own
 * sample from its booking a little later, so these errors lean slightly to under-prediction.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { textTable } from "../support/text-table.ts";
import { percentile } from "./stats.ts";

export interface Sample {
  /** When the request arrived (ms since the epoch). */
  readonly at: number;
  readonly predictedMs: number;
  readonly observedMs: number;
}

/**
 * The JSON objects of a log, one per line, from each line's first `{` (a process's prefix before
 * it is skipped); with `contains`, only the lines that hold that text. Lines that are not a JSON
 * object (a router's plain output) are skipped.
 */
export function jsonLinesOf(text: string, contains?: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of text.split("\n")) {
    const start = line.indexOf("{");
    if (start < 0 || (contains !== undefined && !line.includes(contains))) continue;
    try {
      const o = JSON.parse(line.slice(start));
      if (o !== null && typeof o === "object" && !Array.isArray(o))
        out.push(o as Record<string, unknown>);
    } catch {
      // Not JSON: skipped.
    }
  }
  return out;
}

/** The routers' access lines (`--log-format json`, msg "request"). */
export const accessLinesOf = (text: string) => jsonLinesOf(text, '"msg":"request"');

/** The access lines that carry both a prediction and a TTFT, in arrival order. Other lines (and non-JSON output) are skipped. */
export function samplesOf(text: string): Sample[] {
  const out: Sample[] = [];
  for (const o of accessLinesOf(text) as {
    time?: string;
    duration_ms?: number;
    predicted_ttft_ms?: number | null;
    ttft_ms?: number | null;
  }[]) {
    const p = o.predicted_ttft_ms;
    const t = o.ttft_ms;
    if (typeof p !== "number" || typeof t !== "number" || !(t > 0) || typeof o.time !== "string")
      continue;
    out.push({ at: Date.parse(o.time) - (o.duration_ms ?? 0), predictedMs: p, observedMs: t });
  }
  return out.sort((a, b) => a.at - b.at);
}

export interface ErrorSummary {
  readonly n: number;
  readonly p50: number;
  readonly p90: number;
  /** Median of predicted ÷ observed: above 1, the predictor expected more than came. */
  readonly ratio: number;
  /** Samples more than 0.3 off (the bound on the p90). */
  readonly over: number;
}

export function summarize(samples: readonly Sample[]): ErrorSummary {
  const err = samples.map((s) => Math.abs(s.predictedMs / s.observedMs - 1)).sort((a, b) => a - b);
  const ratio = samples.map((s) => s.predictedMs / s.observedMs).sort((a, b) => a - b);
  if (err.length === 0) return { n: 0, p50: NaN, p90: NaN, ratio: NaN, over: 0 };
  return {
    n: err.length,
    p50: percentile(err, 50),
    p90: percentile(err, 90),
    ratio: percentile(ratio, 50),
    over: err.filter((e) => e > 0.3).length,
  };
}

/** `parts` consecutive slices of about equal size (the last takes the remainder). */
export function phases(samples: readonly Sample[], parts: number): Sample[][] {
  const size = Math.max(1, Math.floor(samples.length / parts));
  const out: Sample[][] = [];
  for (let k = 0; k < parts && k * size < samples.length; k++)
    out.push(samples.slice(k * size, k === parts - 1 ? samples.length : (k + 1) * size));
  return out;
}

if (import.meta.main) {
  const { values: a, positionals } = parseArgs({
    allowPositionals: true,
    options: { parts: { type: "string", default: "10" } },
  });
  const file = positionals[0];
  if (file === undefined)
    throw new Error("usage: bun bench/replay/pred-err-phases.ts LOG [--parts 10]");
  const parts = Number(a.parts);
  if (!(Number.isInteger(parts) && parts >= 1))
    throw new Error(`--parts must be a whole number ≥ 1, got ${a.parts}`);
  const samples = samplesOf(readFileSync(file, "utf8"));
  if (samples.length === 0)
    throw new Error(
      `${file}: no access lines with predicted_ttft_ms and ttft_ms (was the router run with --log-format json under --policy kv?)`,
    );
  const f = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : "-");
  const row = (name: string, s: ErrorSummary) => [
    name,
    String(s.n),
    f(s.p50),
    f(s.p90),
    f(s.ratio),
    String(s.over),
  ];
  let from = 0;
  const rows = phases(samples, parts).map((p) => {
    const r = row(`${from + 1}–${from + p.length}`, summarize(p));
    from += p.length;
    return r;
  });
  rows.push(row("whole run", summarize(samples)));
  rows.push(row("after the first third", summarize(samples.slice(Math.floor(samples.length / 3)))));
  console.log(
    textTable(
      [
        "requests (arrival order)",
        "n",
        "err p50",
        "err p90",
        "predicted ÷ observed (median)",
        "> 0.3 off",
      ],
      rows,
    ),
  );
}
