/**
 * bench:tokens's run as three bar panels, one group of bars per encoder (default, hf-js, native:
 * whichever ran), medians of the rounds with each round as a dot:
 * - tokenize + hash + match + schedule for an 8k-token and a 128k-token chat seen for the first
 *   time ("cold"), p50 and p99 on a log axis, the targets (p99 ≤ 2 ms, ≤ 25 ms) as lines;
 * - the encoder alone, tokens/s cold and warm, beside HF's Rust tokenizers called from Python
 *   (encode() in a loop, encode_batch) where that reference ran, with the faster Rust way as the
 *   lines the default must stay above.
 *
 *   bun bench/tokens/plot.ts RUN.json OUT.svg      re-plots what `bench:tokens --json` wrote
 *
 * `bench:tokens --svg FILE` writes the same beside its JSON.
 */
import { readFileSync, writeFileSync } from "node:fs";
import {
  barChartsSvg,
  type BarGroup,
  type BarPanel,
  type Maybe,
  type TargetLine,
} from "../support/bar-chart.ts";

interface Quantiles {
  p50?: Maybe;
  p99?: Maybe;
}
interface Rate {
  cold_tokens_per_s?: Maybe;
  warm_tokens_per_s?: Maybe;
}
/** One encoder's figures from one round (its child process). */
interface EncoderRound {
  library?: Rate;
  chat_8k?: { cold?: { total_ms?: Quantiles } };
  chat_128k?: { cold?: { total_ms?: Quantiles } };
}
interface RustRound {
  tokenizers?: string;
  loop?: Rate;
  batch?: Rate;
}

/** The part of bench:tokens's JSON this plot reads. A round without the Rust reference is a string saying why. */
export interface TokensReport {
  model: string;
  native_hasher?: boolean;
  workers?: number;
  block_size?: number;
  results: Readonly<Record<string, readonly EncoderRound[]>>;
  rust?: readonly (RustRound | string)[];
}

/** The median of the rounds as bench:tokens's table reports it: the lower middle for an even count. */
export function roundsMedian(xs: readonly number[]): number | undefined {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length === 0 ? undefined : s[Math.floor((s.length - 1) / 2)];
}

const isNumber = (x: Maybe): x is number => typeof x === "number" && Number.isFinite(x);
const RATES = [
  ["cold", "cold_tokens_per_s"],
  ["warm", "warm_tokens_per_s"],
] as const;

/** Bars of one figure per series, each the median of its rounds with the rounds as dots. */
function groupOf(
  label: string,
  series: readonly (readonly [string, readonly Maybe[]])[],
): BarGroup {
  return {
    label,
    bars: series.map(([name, rounds]) => ({
      series: name,
      value: roundsMedian(rounds.filter(isNumber)),
      runs: rounds,
    })),
  };
}

function latencyPanel(
  r: TokensReport,
  size: "chat_8k" | "chat_128k",
  title: string,
  target: number,
): BarPanel {
  const groups = Object.entries(r.results).map(([impl, rounds]) =>
    groupOf(
      impl,
      (["p50", "p99"] as const).map(
        (q) => [q, rounds.map((x) => x[size]?.cold?.total_ms?.[q])] as const,
      ),
    ),
  );
  return {
    title,
    yLabel: "ms (log)",
    yLog: true,
    series: ["p50", "p99"],
    groups,
    targets: [{ y: target, label: `target p99 ≤ ${target} ms` }],
  };
}

function ratePanel(r: TokensReport): BarPanel {
  const groups = Object.entries(r.results).map(([impl, rounds]) =>
    groupOf(
      impl,
      RATES.map(([name, key]) => [name, rounds.map((x) => x.library?.[key])] as const),
    ),
  );
  const rust = (r.rust ?? []).filter((x): x is RustRound => typeof x !== "string");
  const targets: TargetLine[] = [];
  if (rust.length > 0) {
    for (const [way, label] of [
      ["loop", "HF Rust\nencode()"],
      ["batch", "HF Rust\nencode_batch"],
    ] as const) {
      groups.push(
        groupOf(
          label,
          RATES.map(([name, key]) => [name, rust.map((x) => x[way]?.[key])] as const),
        ),
      );
    }
    // The target is "the default at least as fast as the faster Rust way", per round, as run.ts judges it.
    const defaults = r.results.default;
    for (const [name, key] of RATES) {
      const best = roundsMedian(
        rust.map((x) => Math.max(x.loop?.[key] ?? NaN, x.batch?.[key] ?? NaN)),
      );
      const mine =
        defaults === undefined
          ? undefined
          : roundsMedian(defaults.map((x) => x.library?.[key]).filter(isNumber));
      const ratio =
        best !== undefined && mine !== undefined ? `: default ${(mine / best).toFixed(1)}×` : "";
      targets.push({
        y: best,
        label: `faster HF Rust way, ${name} (${best === undefined ? "-" : (best / 1e6).toFixed(2)} M/s)${ratio}`,
      });
    }
  }
  return {
    title: "encoder alone: tokens/s, ~8k-token texts",
    yLabel: "tokens/s (log)",
    yLog: true,
    series: ["cold", "warm"],
    groups,
    targets,
  };
}

export function tokensSvg(r: TokensReport): string {
  if (r.results === undefined || typeof r.results !== "object")
    throw new Error("not bench:tokens --json output: no results");
  const rounds = Math.max(0, ...Object.values(r.results).map((x) => x.length));
  const setup = [
    `medians of ${rounds} round${rounds === 1 ? "" : "s"} (dots: each round)`,
    r.workers !== undefined ? `${r.workers} workers` : "",
    r.block_size !== undefined ? `block size ${r.block_size}` : "",
    r.native_hasher === undefined ? "" : r.native_hasher ? "native hasher" : "portable hasher",
    (r.rust ?? []).some((x) => typeof x !== "string") ? "" : "no Rust reference in this run",
  ].filter((x) => x !== "");
  return barChartsSvg(
    `bench:tokens, model ${r.model}: tokenize + hash + match + schedule of a chat seen for the first time; the encoder alone\n${setup.join(", ")}`,
    [
      latencyPanel(r, "chat_8k", "8k-token chat, first sight", 2),
      latencyPanel(r, "chat_128k", "128k-token chat, first sight", 25),
      ratePanel(r),
    ],
    3,
  );
}

if (import.meta.main) {
  const [input, output] = process.argv.slice(2);
  if (!input || !output) {
    console.error(
      "usage: bun bench/tokens/plot.ts RUN.json OUT.svg   (RUN.json: what bench:tokens --json wrote)",
    );
    process.exit(2);
  }
  writeFileSync(output, tokensSvg(JSON.parse(readFileSync(input, "utf8")) as TokensReport));
  console.log(`wrote ${output}`);
}
