/**
 * A rank's finished requests' prefill, as vLLM V1 records it when a request finishes
 * (vllm/v1/metrics/stats.py, update_from_finished_request; vllm/v1/metrics/loggers.py): the
 * time from its first scheduling to its first token (`vllm:request_prefill_time_seconds`) and
 * the tokens it prefilled, cached ones left out (`vllm:request_prefill_kv_computed_tokens`),
 * each a histogram on vLLM's buckets. Here "scheduled" is the moment a request takes the rank's
 * prefill lane. The router reads the two sums for each engine's own prefill speed.
 */

/** vLLM's request_latency_buckets (loggers.py), in seconds. */
const TIME_BUCKETS = [
  0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
  480.0, 960.0, 1920.0, 7680.0,
];
/** vLLM's build_1_2_5_buckets(max_model_len) for a max_model_len of 131072: 1, 2, 5, 10, ... 100000. */
const TOKEN_BUCKETS = oneTwoFive(131_072);

function oneTwoFive(max: number): number[] {
  const out: number[] = [];
  for (let exp = 1; ; exp *= 10) {
    for (const m of [1, 2, 5]) {
      if (m * exp > max) return out;
      out.push(m * exp);
    }
  }
}

class Histogram {
  readonly counts: number[];
  sum = 0;
  count = 0;
  constructor(readonly bounds: readonly number[]) {
    this.counts = new Array<number>(bounds.length).fill(0);
  }
  observe(v: number): void {
    this.sum += v;
    this.count++;
    const i = this.bounds.findIndex((b) => v <= b);
    if (i >= 0) this.counts[i]!++;
  }
  /** Exposition lines: cumulative buckets, +Inf, sum and count, each with `labels` (`k="v",...`). */
  lines(name: string, labels: string): string[] {
    const out: string[] = [];
    let running = 0;
    this.bounds.forEach((b, i) => {
      running += this.counts[i]!;
      out.push(`${name}_bucket{${labels},le="${b.toFixed(1)}"} ${running}`);
    });
    out.push(
      `${name}_bucket{${labels},le="+Inf"} ${this.count}`,
      `${name}_sum{${labels}} ${this.sum}`,
      `${name}_count{${labels}} ${this.count}`,
    );
    return out;
  }
}

export class PrefillStats {
  readonly seconds = new Histogram(TIME_BUCKETS);
  readonly tokens = new Histogram(TOKEN_BUCKETS);

  /** One finished request: its prefill's wall time (ms) and the tokens it computed. */
  finished(prefillMs: number, computedTokens: number): void {
    this.seconds.observe(Math.max(0, prefillMs) / 1000);
    this.tokens.observe(Math.max(0, computedTokens));
  }
}

/** Both families, every rank's series under its `labels`, with HELP and TYPE as vLLM writes them. */
export function prefillFamilies(
  ranks: readonly (readonly [labels: string, stats: PrefillStats])[],
): string[] {
  return [
    "# HELP vllm:request_prefill_time_seconds Histogram of time spent in PREFILL phase for request.",
    "# TYPE vllm:request_prefill_time_seconds histogram",
    ...ranks.flatMap(([l, s]) => s.seconds.lines("vllm:request_prefill_time_seconds", l)),
    "# HELP vllm:request_prefill_kv_computed_tokens Histogram of new KV tokens computed during prefill (excluding cached tokens).",
    "# TYPE vllm:request_prefill_kv_computed_tokens histogram",
    ...ranks.flatMap(([l, s]) => s.tokens.lines("vllm:request_prefill_kv_computed_tokens", l)),
  ];
}
