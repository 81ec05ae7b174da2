/**
 * bench:proxy's run as two bar panels, one bar per target that ran (direct, router, nginx,
 * floor, observed, baseline): requests/s and the proxy's CPU µs per request, medians with each
 * run as a dot, and the issue's targets as lines where nginx ran (router ≥ 0.9 × nginx's
 * requests/s, router CPU ≤ 2 × nginx's per request), labelled with the router's ratio.
 *
 *   bun bench/proxy/plot.ts RUN.json OUT.svg      re-plots what `bench:proxy --json` wrote
 *
 * `bench:proxy --svg FILE` writes the same beside its JSON.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { barChartsSvg, type BarPanel, type Maybe, type TargetLine } from "../support/bar-chart.ts";

/** The part of bench:proxy's JSON this plot reads. NaN figures arrive as null. */
export interface ProxyReport {
  date?: string;
  options: {
    runs: number;
    seconds: number;
    connections: number;
    maxTokens: number;
    promptTokens: number;
    decodeMs: number;
    stream: boolean;
    routerArgs?: readonly string[];
    baselineRef?: string | null;
  };
  summary: readonly { target: string; rps: Maybe; proxyCpuUs?: Maybe }[];
  runs?: Readonly<Record<string, readonly { rps: Maybe; proxyCpuUs?: Maybe }[]>>;
}

const THROUGHPUT_TARGET = 0.9;
const CPU_TARGET = 2;

/** The settings that change what a figure means: the kind of answer, decode pacing, prompt size. */
export function proxyMode(o: ProxyReport["options"]): string {
  const decode = o.decodeMs > 0 ? `decode ${o.decodeMs} ms/token` : "decode 0 ms (tokens at once)";
  return `${o.stream ? "streamed" : "whole answers"}, ${decode}, ${o.promptTokens}-token prompt, ${o.maxTokens} tokens out`;
}

export function proxySvg(r: ProxyReport): string {
  if (!Array.isArray(r.summary) || r.options === undefined)
    throw new Error("not bench:proxy --json output: no summary or options");
  const o = r.options;
  const row = (t: string) => r.summary.find((s) => s.target === t);
  const router = row("router");
  const nginx = row("nginx");
  const label = (t: string) =>
    t === "baseline" && o.baselineRef ? `baseline\n${o.baselineRef.slice(0, 12)}` : t;
  const series = r.summary.map((s) => s.target);
  const panel = (
    title: string,
    yLabel: string,
    value: (x: { rps: Maybe; proxyCpuUs?: Maybe }) => Maybe,
    target: TargetLine | undefined,
  ): BarPanel => ({
    title,
    yLabel,
    series,
    legend: false,
    groups: r.summary.map((s) => ({
      label: label(s.target),
      bars: [{ series: s.target, value: value(s), runs: (r.runs?.[s.target] ?? []).map(value) }],
    })),
    targets: target ? [target] : [],
  });
  const judged = (mine: Maybe, theirs: Maybe, bound: number, atLeast: boolean): string => {
    if (typeof mine !== "number" || typeof theirs !== "number" || !Number.isFinite(mine / theirs))
      return "";
    const ratio = mine / theirs;
    return `: ${ratio.toFixed(2)}, ${(atLeast ? ratio >= bound : ratio <= bound) ? "met" : "missed"}`;
  };
  const times = (x: Maybe, k: number) => (typeof x === "number" ? x * k : undefined);
  // Where the line is, in the panel's unit, so it reads without the axis.
  const at = (y: number | undefined, unit: string) =>
    y === undefined || !Number.isFinite(y) ? "" : ` (${Math.round(y)}${unit})`;
  const throughput = panel(
    "requests/s (median; dots: each run)",
    "requests/s",
    (x) => x.rps,
    nginx && {
      y: times(nginx.rps, THROUGHPUT_TARGET),
      label: `router ≥ ${THROUGHPUT_TARGET} × nginx${at(times(nginx.rps, THROUGHPUT_TARGET), "/s")}${judged(router?.rps, nginx.rps, THROUGHPUT_TARGET, true)}`,
    },
  );
  const cpu = panel(
    "proxy CPU per request (median; dots: each run)",
    "CPU µs per request",
    (x) => x.proxyCpuUs,
    nginx && {
      y: times(nginx.proxyCpuUs, CPU_TARGET),
      label: `router ≤ ${CPU_TARGET} × nginx${at(times(nginx.proxyCpuUs, CPU_TARGET), " µs")}${judged(router?.proxyCpuUs, nginx.proxyCpuUs, CPU_TARGET, false)}`,
    },
  );
  const extra = [
    o.routerArgs && o.routerArgs.length > 0 ? `router flags ${o.routerArgs.join(" ")}` : "",
    o.baselineRef ? `baseline = router at ${o.baselineRef}` : "",
    r.date ? r.date.slice(0, 16).replace("T", " ") : "",
  ].filter((x) => x !== "");
  const title = `bench:proxy: ${proxyMode(o)}\nwrk -c${o.connections}, median of ${o.runs} × ${o.seconds} s${extra.length > 0 ? `; ${extra.join("; ")}` : ""}`;
  return barChartsSvg(title, [throughput, cpu], 2);
}

if (import.meta.main) {
  const [input, output] = process.argv.slice(2);
  if (!input || !output) {
    console.error(
      "usage: bun bench/proxy/plot.ts RUN.json OUT.svg   (RUN.json: what bench:proxy --json wrote)",
    );
    process.exit(2);
  }
  writeFileSync(output, proxySvg(JSON.parse(readFileSync(input, "utf8")) as ProxyReport));
  console.log(`wrote ${output}`);
}
