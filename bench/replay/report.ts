/** The replay's outputs: a plain table, the JSON shape scripts read, and an SVG plot. */
import { textTable } from "../support/text-table.ts";

export interface PolicyResult {
  hit_rate: number;
  hit_rate_vs_ideal: number;
  ttft_ms: { p50: number; p90: number; p99: number };
  e2e_ms: { p50: number; p90: number; p99: number };
  output_tokens_per_s: number;
  load_max_over_mean: number;
  router_overhead_us: { p50: number; p99: number };
  requests: number;
  errors: number;
  /** Requests the router refused with 429 (admission queue full or timed out). */
  rejected_429?: number;
  /** Completed requests per second whose TTFT met --ttft-slo-ms. */
  goodput_rps?: number;
  /** Prefill tokens computed (prompt − cached, engines' own counters) on the busiest engine ÷ the mean. */
  work_max_over_mean?: number;
  /** Requests on the busiest engine ÷ the mean, engines' own counters. */
  engine_request_max_over_mean?: number;
  /** Engines that computed no prefill. */
  idle_engines?: number;
  /** Σ prefill busy time ÷ (engines × replay time). */
  utilisation?: number;
  /** Routers' CPU time (utime + stime from /proc) per request, all routers together. */
  router_cpu_us_per_request?: number;
  /**
   * TTFT as the engines' timing model gives it for where each request was placed and what it
   * found cached (placement.ts): the routing without the machine's noise. Beside ttft_ms, not for it.
   */
  ttft_placement_ms?: { p50: number; p90: number; p99: number };
  /** |predicted ÷ observed TTFT − 1| over the requests the routers predicted (their switchyard_ttft_prediction_error_ratio, all routers). */
  ttft_prediction_error?: { p50: number; p90: number };
  /** The machine's 1-minute load average when the row's replay ended (a shared machine's noise, said beside its figures). */
  load_avg?: number;
  /** TTFT of the cell's measured requests alone (CellOptions.measured: the fan-out's branches). */
  subset_ttft_ms?: { p50: number; p90: number; p99: number };
  /** Shares of the prompt tokens served from each place (engines' counters; tier-cells.ts prints them). */
  tier_hits?: { gpu: number; cpu: number; disk: number; peer: number };
  /** Raw TTFTs (ms), for the plot; not written to JSON. */
  ttfts?: number[];
}

export interface OfflineRow {
  hit_rate: number;
  hit_rate_vs_ideal: number;
  load_max_over_mean: number;
}

export interface ReplayReport {
  trace: string;
  requests: number;
  engines: number;
  kv_blocks_per_engine: number;
  block_size: number;
  speedup: number;
  unique_blocks: number;
  ideal_hit_rate: number;
  offline: Record<string, OfflineRow>;
  policies: Record<string, PolicyResult>;
  routers?: number;
  engine_restarts?: number;
  arrival_scale?: number;
  prompt_format?: string;
  /** Rows measured in a later run than the rest of the cell (suite-merge.ts), by policy name. */
  rerun_policies?: string[];
}

const f = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "-");

export function formatTable(r: ReplayReport): string {
  const head = [
    "policy",
    "hit",
    "÷ideal",
    "ttft p50",
    "p90",
    "p99",
    "e2e p50",
    "p99",
    "out tok/s",
    "max/mean",
    "work max/mean",
    "idle",
    "util",
    "route µs p50",
    "p99",
    "cpu µs/req",
    "reqs",
    "errors",
    "429",
    "goodput/s",
    "pred err p50",
    "p90",
  ];
  const rows: string[][] = [];
  for (const [name, p] of Object.entries(r.policies)) {
    rows.push([
      name,
      f(p.hit_rate, 3),
      f(p.hit_rate_vs_ideal, 3),
      f(p.ttft_ms.p50),
      f(p.ttft_ms.p90),
      f(p.ttft_ms.p99),
      f(p.e2e_ms.p50),
      f(p.e2e_ms.p99),
      f(p.output_tokens_per_s, 0),
      f(p.engine_request_max_over_mean ?? p.load_max_over_mean, 2),
      f(p.work_max_over_mean ?? NaN, 2),
      p.idle_engines === undefined ? "" : String(p.idle_engines),
      f(p.utilisation ?? NaN, 2),
      f(p.router_overhead_us.p50, 0),
      f(p.router_overhead_us.p99, 0),
      f(p.router_cpu_us_per_request ?? NaN, 0),
      String(p.requests),
      String(p.errors),
      String(p.rejected_429 ?? ""),
      p.goodput_rps === undefined ? "" : f(p.goodput_rps, 1),
      f(p.ttft_prediction_error?.p50 ?? NaN, 2),
      f(p.ttft_prediction_error?.p90 ?? NaN, 2),
    ]);
  }
  for (const [name, o] of Object.entries(r.offline)) {
    rows.push([
      `offline ${name}`,
      f(o.hit_rate, 3),
      f(o.hit_rate_vs_ideal, 3),
      "",
      "",
      "",
      "",
      "",
      "",
      f(o.load_max_over_mean, 2),
      "",
      "",
      "",
      "",
      "",
      "",
      "",
      "",
      "",
      "",
      "",
      "",
    ]);
  }
  return [
    `trace ${r.trace}: ${r.requests} requests, ${r.engines} engines × ${r.kv_blocks_per_engine} KV blocks of ${r.block_size} tokens, speedup ${r.speedup}×, unique blocks ${r.unique_blocks}, ideal hit rate ${f(r.ideal_hit_rate, 3)}` +
      `, routers ${r.routers ?? 1}, engine restarts ${r.engine_restarts ?? 0}, arrival scale ${r.arrival_scale ?? 1}, prompts ${r.prompt_format ?? "tokens"}`,
    textTable(head, rows),
  ].join("\n");
}

export function toJson(r: ReplayReport): string {
  return JSON.stringify(r, (k, v) => (k === "ttfts" ? undefined : v), 2);
}

const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"];

/** Left: TTFT CDF per policy (log-x). Right: hit rate per policy beside the offline bounds. */
export function toSvg(r: ReplayReport): string {
  const W = 960,
    H = 420,
    pad = 50,
    half = W / 2;
  const names = Object.keys(r.policies);
  const all = names.flatMap((n) => r.policies[n]!.ttfts ?? []).filter((x) => x > 0);
  const lo = Math.max(0.1, Math.min(...all, 1));
  const hi = Math.max(...all, 10);
  const lx = (v: number) =>
    pad +
    ((Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) *
      (half - 2 * pad);
  const ly = (q: number) => H - pad - q * (H - 2 * pad);
  const parts: string[] = [];
  parts.push(
    `<text x="${pad}" y="20" font-size="14">TTFT CDF (ms, log scale) — ${esc(r.trace)}</text>`,
  );
  parts.push(
    `<line x1="${pad}" y1="${H - pad}" x2="${half - pad}" y2="${H - pad}" stroke="#000"/><line x1="${pad}" y1="${pad}" x2="${pad}" y2="${H - pad}" stroke="#000"/>`,
  );
  for (let d = Math.ceil(Math.log10(lo)); d <= Math.floor(Math.log10(hi)); d++) {
    const x = lx(10 ** d);
    parts.push(
      `<line x1="${x}" y1="${H - pad}" x2="${x}" y2="${H - pad + 5}" stroke="#000"/><text x="${x - 10}" y="${H - pad + 18}" font-size="11">${10 ** d}</text>`,
    );
  }
  for (const q of [0, 0.5, 0.9, 1])
    parts.push(`<text x="${pad - 30}" y="${ly(q) + 4}" font-size="11">${q}</text>`);
  names.forEach((n, i) => {
    const t = [...(r.policies[n]!.ttfts ?? [])].sort((a, b) => a - b);
    if (!t.length) return;
    const step = Math.max(1, Math.floor(t.length / 300));
    const pts: string[] = [];
    for (let k = 0; k < t.length; k += step)
      pts.push(`${lx(t[k]!).toFixed(1)},${ly((k + 1) / t.length).toFixed(1)}`);
    pts.push(`${lx(t[t.length - 1]!).toFixed(1)},${ly(1).toFixed(1)}`);
    parts.push(
      `<polyline fill="none" stroke="${COLORS[i % COLORS.length]}" stroke-width="2" points="${pts.join(" ")}"/>`,
    );
    parts.push(
      `<text x="${pad + 10}" y="${pad + 16 * i}" font-size="12" fill="${COLORS[i % COLORS.length]}">${esc(n)}</text>`,
    );
  });
  // Hit-rate bars.
  const bars = [
    ...names.map((n) => [n, r.policies[n]!.hit_rate] as const),
    ...Object.entries(r.offline).map(([n, o]) => [`offline ${n}`, o.hit_rate] as const),
    ["ideal", r.ideal_hit_rate] as const,
  ];
  const bw = (half - 2 * pad) / bars.length;
  const by = (v: number) => H - pad - v * (H - 2 * pad);
  parts.push(`<text x="${half + pad}" y="20" font-size="14">prefix-cache hit rate</text>`);
  parts.push(
    `<line x1="${half + pad}" y1="${H - pad}" x2="${W - pad}" y2="${H - pad}" stroke="#000"/>`,
  );
  bars.forEach(([n, v], i) => {
    const x = half + pad + i * bw;
    const color = i < names.length ? COLORS[i % COLORS.length] : "#999";
    parts.push(
      `<rect x="${x + 4}" y="${by(v)}" width="${bw - 8}" height="${H - pad - by(v)}" fill="${color}"/>`,
    );
    parts.push(`<text x="${x + 4}" y="${by(v) - 4}" font-size="11">${v.toFixed(2)}</text>`);
    parts.push(
      `<text x="${x + bw / 2}" y="${H - pad + 14}" font-size="10" text-anchor="end" transform="rotate(-30 ${x + bw / 2} ${H - pad + 14})">${esc(n)}</text>`,
    );
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H + 40}" font-family="sans-serif"><rect width="100%" height="100%" fill="#fff"/>${parts.join("")}</svg>\n`;
}

function esc(s: string): string {
  return s.replace(
    /[<>&"]/g,
    (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;" })[c]!,
  );
}
