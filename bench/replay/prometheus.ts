/** Just enough Prometheus text parsing to read one histogram back from the router. */
export interface HistogramBuckets {
  buckets: { le: number; count: number }[];
  sum: number;
  count: number;
}

/**
 * Buckets of histogram `name`, summed over every label set that matches `labels`
 * (e.g. {phase: "total"}); undefined when the family is absent.
 */
export function readHistogram(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): HistogramBuckets | undefined {
  const byLe = new Map<number, number>();
  let sum = 0;
  let count = 0;
  let seen = false;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const [, metric, labelText = "", value] = m;
    const l = Object.fromEntries(
      [...labelText.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]),
    );
    if (!Object.entries(labels).every(([k, v]) => l[k] === v)) continue;
    if (metric === `${name}_bucket`) {
      const le = l.le === "+Inf" ? Infinity : Number(l.le);
      byLe.set(le, (byLe.get(le) ?? 0) + Number(value));
      seen = true;
    } else if (metric === `${name}_sum`) sum += Number(value);
    else if (metric === `${name}_count`) count += Number(value);
  }
  if (!seen) return undefined;
  return {
    buckets: [...byLe].map(([le, c]) => ({ le, count: c })).sort((a, b) => a.le - b.le),
    sum,
    count,
  };
}

/**
 * What `after` gained since `before` (the same histogram read twice from one process): its
 * observations in between. `before` absent: all of `after`. The bench reads this so that the warm-up's
 * observations (warmup.ts) stay out of the replay's figures.
 */
export function histogramSince(
  after: HistogramBuckets,
  before: HistogramBuckets | undefined,
): HistogramBuckets {
  if (before === undefined) return after;
  const was = new Map(before.buckets.map((b) => [b.le, b.count]));
  return {
    buckets: after.buckets.map((b) => ({
      le: b.le,
      count: Math.max(0, b.count - (was.get(b.le) ?? 0)),
    })),
    sum: after.sum - before.sum,
    count: Math.max(0, after.count - before.count),
  };
}
