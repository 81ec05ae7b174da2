/**
 * `bun bench/replay/suite-plot.ts SUITE.json OUT.svg`: one row per suite cell (workload, routers,
 * restarts, load), one bar per policy: TTFT p90 on a log scale, with the busiest engine's work ÷
 * the mean written above each bar. Reads the JSON that `--suite ... --json` writes.
 */
import { readFileSync, writeFileSync } from "node:fs";
import type { ReplayReport } from "./report.ts";

interface Cell {
  workload: string;
  routers: number;
  restarts: number;
  arrival_scale: number;
  report: ReplayReport;
}

const COLORS: Record<string, string> = {
  kv: "#d62728",
  "kv-blocks": "#17becf",
  approx: "#ff7f0e",
  dynamo: "#1f77b4",
  sglang: "#2ca02c",
  "llm-d": "#9467bd",
  "prodstack-prefix": "#8c564b",
  "prodstack-session": "#e377c2",
  "least-loaded": "#7f7f7f",
  "round-robin": "#bcbd22",
};

export function suiteSvg(cells: readonly Cell[]): string {
  const policies = [...new Set(cells.flatMap((c) => Object.keys(c.report.policies)))];
  const rowH = 28,
    labelW = 330,
    plotW = 620,
    pad = 30;
  const all = cells
    .flatMap((c) => Object.values(c.report.policies).map((p) => p.ttft_ms.p90))
    .filter((x) => x > 0);
  const lo = Math.max(1, Math.min(...all) / 1.5),
    hi = Math.max(...all) * 1.5;
  const x = (v: number) =>
    labelW +
    ((Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * plotW;
  const parts: string[] = [
    `<text x="${pad}" y="20" font-size="14">TTFT p90 per policy (ms, log scale; the number is work max/mean)</text>`,
  ];
  policies.forEach((p, i) =>
    parts.push(
      `<rect x="${pad + i * 105}" y="32" width="10" height="10" fill="${COLORS[p] ?? "#000"}"/><text x="${pad + 14 + i * 105}" y="41" font-size="10">${p}</text>`,
    ),
  );
  let y = 60;
  for (const c of cells) {
    const names = Object.keys(c.report.policies);
    const h = Math.max(rowH, names.length * 9 + 6);
    parts.push(
      `<text x="${pad}" y="${y + h / 2}" font-size="11">${esc(`${c.workload}, N=${c.routers}, restarts ${c.restarts}, load ×${1 / c.arrival_scale}`)}</text>`,
    );
    names.forEach((n, i) => {
      const p = c.report.policies[n]!;
      const by = y + 3 + i * 9;
      parts.push(
        `<rect x="${labelW}" y="${by}" width="${Math.max(1, x(p.ttft_ms.p90) - labelW).toFixed(1)}" height="8" fill="${COLORS[n] ?? "#000"}"/>`,
      );
      parts.push(
        `<text x="${(x(p.ttft_ms.p90) + 3).toFixed(1)}" y="${by + 7}" font-size="7">${p.ttft_ms.p90.toFixed(0)} ms · ${(p.work_max_over_mean ?? NaN).toFixed(2)}</text>`,
      );
    });
    parts.push(
      `<line x1="${pad}" y1="${y + h}" x2="${labelW + plotW}" y2="${y + h}" stroke="#ddd"/>`,
    );
    y += h + 4;
  }
  for (let d = Math.ceil(Math.log10(lo)); d <= Math.floor(Math.log10(hi)); d++) {
    parts.push(
      `<line x1="${x(10 ** d)}" y1="50" x2="${x(10 ** d)}" y2="${y}" stroke="#eee"/><text x="${x(10 ** d) - 8}" y="${y + 12}" font-size="10">${10 ** d}</text>`,
    );
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${labelW + plotW + 120}" height="${y + 24}" font-family="sans-serif"><rect width="100%" height="100%" fill="#fff"/>${parts.join("")}</svg>\n`;
}

function esc(s: string): string {
  return s.replace(
    /[<>&"]/g,
    (ch) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;" })[ch]!,
  );
}

if (import.meta.main) {
  const [input, output] = process.argv.slice(2);
  if (!input || !output)
    throw new Error("usage: bun bench/replay/suite-plot.ts SUITE.json OUT.svg");
  writeFileSync(output, suiteSvg(JSON.parse(readFileSync(input, "utf8")) as Cell[]));
}
