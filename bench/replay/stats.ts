/** Percentiles and small summaries shared by the benches. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function summarize(values: readonly number[]): {
  p50: number;
  p90: number;
  p99: number;
  mean: number;
} {
  const s = [...values].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / (s.length || 1);
  return { p50: percentile(s, 50), p90: percentile(s, 90), p99: percentile(s, 99), mean };
}

/** The middle value; the mean of the two middle ones for an even count (NaN when empty). */
export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * Quantile from a Prometheus histogram (cumulative bucket counts by upper bound), by linear
 * interpolation inside the bucket, as histogram_quantile() does.
 */
export function histogramQuantile(
  buckets: readonly { le: number; count: number }[],
  q: number,
): number {
  const b = [...buckets].sort((x, y) => x.le - y.le);
  const total = b.length ? b[b.length - 1]!.count : 0;
  if (total === 0) return NaN;
  const rank = q * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const { le, count } of b) {
    if (count >= rank) {
      if (!Number.isFinite(le)) return prevLe;
      const inBucket = count - prevCount;
      return inBucket > 0 ? prevLe + ((le - prevLe) * (rank - prevCount)) / inBucket : le;
    }
    prevLe = le;
    prevCount = count;
  }
  return prevLe;
}
