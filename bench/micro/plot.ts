/**
 * bench:micro's run as bar panels beside the routing core's targets (one run: no dots):
 * - hash + match + schedule (find-best-match), p50 and p99 on a log axis, for an 8k-token prompt
 *   with the native and the portable hashers and a 128k-token one with the native hashers, each
 *   with its own target over its bars (p99 ≤ 25 / 100 / 250 µs);
 * - event apply, stored blocks/s (as RouterEvent objects, as typed arrays, steady churn) against
 *   5 M blocks/s;
 * - bytes per (block, worker) entry at 1 M entries against 100 B.
 * A part the run left out (`--only`) or that failed has no panel.
 *
 *   bun bench/micro/plot.ts RUN.json OUT.svg      re-plots what `bench:micro --json` wrote
 *
 * `bench:micro --svg FILE` writes the same beside its JSON.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { barChartsSvg, type BarPanel, type Maybe } from "../support/bar-chart.ts";

/** The part of bench:micro's JSON this plot reads; a part that failed holds `error` instead. */
export interface MicroReport {
  load_average?: readonly number[] | null;
  "find-best-match"?: {
    workers?: number;
    indexed_entries?: number;
    latency_us?: Readonly<Record<string, { total?: { p50?: Maybe; p99?: Maybe } }>>;
    error?: string;
  };
  index?: {
    apply?: {
      blocksPerSec?: Maybe;
      typedArraysBlocksPerSec?: Maybe;
      churnBlocksPerSec?: Maybe;
      targetBlocksPerSec?: Maybe;
    };
    memory?: {
      bytesPerEntryHeap?: Maybe;
      bytesPerEntryTypedArrays?: Maybe;
      bytesPerEntryRss?: Maybe;
      targetBytesPerEntry?: Maybe;
    };
    error?: string;
  };
}

/** Issue 24's p99 targets for hash + match + schedule, per case of find-best-match's JSON. */
const ROUTE_TARGETS_US: readonly (readonly [key: string, label: string, p99: number])[] = [
  ["8k/native", "8k native", 25],
  ["8k/portable", "8k portable", 100],
  ["128k/native", "128k native", 250],
];
const APPLY_TARGET = 5_000_000;
const BYTES_TARGET = 100;

const isNumber = (x: Maybe): x is number => typeof x === "number" && Number.isFinite(x);
const verdict = (x: Maybe, met: (v: number) => boolean) =>
  isNumber(x) ? (met(x) ? ", met" : ", missed") : "";

function routePanel(f: NonNullable<MicroReport["find-best-match"]>): BarPanel {
  const lat = f.latency_us ?? {};
  const cases = ROUTE_TARGETS_US.filter(([key]) => lat[key] !== undefined);
  const entries = isNumber(f.indexed_entries)
    ? `, ${(f.indexed_entries / 1e6).toFixed(1)} M entries`
    : "";
  return {
    title: `hash + match + schedule${f.workers ? `, ${f.workers} workers` : ""}${entries}`,
    yLabel: "µs (log)",
    yLog: true,
    series: ["p50", "p99"],
    groups: cases.map(([key, label]) => ({
      label,
      bars: (["p50", "p99"] as const).map((q) => ({ series: q, value: lat[key]?.total?.[q] })),
    })),
    targets: cases.map(([key, label, p99]) => ({
      y: p99,
      group: label,
      label: `p99 ≤ ${p99} µs${verdict(lat[key]?.total?.p99, (v) => v <= p99)}`,
    })),
  };
}

function applyPanel(a: NonNullable<NonNullable<MicroReport["index"]>["apply"]>): BarPanel {
  const target = isNumber(a.targetBlocksPerSec) ? a.targetBlocksPerSec : APPLY_TARGET;
  const rate = (x: Maybe) => (isNumber(x) ? `: ${(x / 1e6).toFixed(2)} M/s` : "");
  return {
    title: "event apply, stored blocks/s, 64 workers",
    yLabel: "blocks/s",
    series: ["blocks/s"],
    groups: [
      { label: "events", bars: [{ series: "blocks/s", value: a.blocksPerSec }] },
      { label: "typed arrays", bars: [{ series: "blocks/s", value: a.typedArraysBlocksPerSec }] },
      {
        label: "store + evict\n(steady churn)",
        bars: [{ series: "blocks/s", value: a.churnBlocksPerSec }],
      },
    ],
    targets: [
      {
        y: target,
        label: `events ≥ ${target / 1e6} M blocks/s${rate(a.blocksPerSec)}${verdict(a.blocksPerSec, (v) => v >= target)}`,
      },
    ],
  };
}

function memoryPanel(m: NonNullable<NonNullable<MicroReport["index"]>["memory"]>): BarPanel {
  const target = isNumber(m.targetBytesPerEntry) ? m.targetBytesPerEntry : BYTES_TARGET;
  return {
    title: "bytes per (block, worker) entry, 1 M entries",
    yLabel: "bytes",
    series: ["bytes"],
    groups: [
      { label: "heap +\ntyped arrays", bars: [{ series: "bytes", value: m.bytesPerEntryHeap }] },
      {
        label: "the index's\ntyped arrays",
        bars: [{ series: "bytes", value: m.bytesPerEntryTypedArrays }],
      },
      { label: "RSS", bars: [{ series: "bytes", value: m.bytesPerEntryRss }] },
    ],
    targets: [
      {
        y: target,
        label: `heap + typed arrays ≤ ${target} B${verdict(m.bytesPerEntryHeap, (v) => v <= target)}`,
      },
    ],
  };
}

export function microSvg(r: MicroReport): string {
  const panels: BarPanel[] = [];
  const f = r["find-best-match"];
  if (f?.latency_us !== undefined) panels.push(routePanel(f));
  if (r.index?.apply !== undefined) panels.push(applyPanel(r.index.apply));
  if (r.index?.memory !== undefined) panels.push(memoryPanel(r.index.memory));
  if (panels.length === 0)
    throw new Error(
      "nothing to plot: the JSON has no find-best-match or index figures (bench:micro --json, with those parts run)",
    );
  const load = r.load_average ? `load average ${r.load_average.join(" ")}` : "";
  return barChartsSvg(
    `bench:micro: the routing core against its targets\none run${load ? `, ${load}` : ""}`,
    panels,
    3,
  );
}

if (import.meta.main) {
  const [input, output] = process.argv.slice(2);
  if (!input || !output) {
    console.error(
      "usage: bun bench/micro/plot.ts RUN.json OUT.svg   (RUN.json: what bench:micro --json wrote)",
    );
    process.exit(2);
  }
  writeFileSync(output, microSvg(JSON.parse(readFileSync(input, "utf8")) as MicroReport));
  console.log(`wrote ${output}`);
}
