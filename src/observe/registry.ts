/**
 * A small Prometheus registry: counters, gauges and histograms with label values, written
 * in the text exposition format (version 0.0.4). Hot-path cost is one Map lookup per
 * observation (label values joined into a key); formatting happens only on scrape.
 */

type LabelValues = readonly string[];

function escapeLabel(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function labelText(names: readonly string[], values: LabelValues, extra?: string): string {
  const parts = names.map((n, i) => `${n}="${escapeLabel(values[i] ?? "")}"`);
  if (extra) parts.push(extra);
  return parts.length ? `{${parts.join(",")}}` : "";
}

function formatNumber(x: number): string {
  if (x === Infinity) return "+Inf";
  if (x === -Infinity) return "-Inf";
  return String(x);
}

/** Separator that cannot appear in sensible label values. */
const SEP = "\u0001";

abstract class Metric {
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {}
  abstract readonly type: "counter" | "gauge" | "histogram";
  abstract samples(out: string[]): void;
  render(out: string[]): void {
    out.push(`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} ${this.type}`);
    this.samples(out);
  }
}

export class Counter extends Metric {
  readonly type = "counter";
  readonly #values = new Map<string, { labels: LabelValues; value: number }>();
  #collect: ((c: Counter) => void) | undefined;
  inc(labels: LabelValues = [], by = 1): void {
    const key = labels.join(SEP);
    const cell = this.#values.get(key);
    if (cell) cell.value += by;
    else this.#values.set(key, { labels: [...labels], value: by });
  }
  /** For counters kept elsewhere (e.g. by the index) and copied in at scrape time. */
  set(labels: LabelValues, value: number): void {
    const key = labels.join(SEP);
    const cell = this.#values.get(key);
    if (cell) cell.value = value;
    else this.#values.set(key, { labels: [...labels], value });
  }
  get(labels: LabelValues = []): number {
    return this.#values.get(labels.join(SEP))?.value ?? 0;
  }
  /** Drop one label set (its subject is gone, e.g. a removed worker). */
  remove(labels: LabelValues): void {
    this.#values.delete(labels.join(SEP));
  }
  /** Optional callback that refreshes the values just before a scrape. */
  onCollect(fn: (c: Counter) => void): this {
    this.#collect = fn;
    return this;
  }
  samples(out: string[]): void {
    this.#collect?.(this);
    for (const { labels, value } of this.#values.values())
      out.push(`${this.name}${labelText(this.labelNames, labels)} ${formatNumber(value)}`);
  }
}

export class Gauge extends Metric {
  readonly type = "gauge";
  readonly #values = new Map<string, { labels: LabelValues; value: number }>();
  /** Optional callback that refreshes the values just before a scrape. */
  #collect: ((g: Gauge) => void) | undefined;
  set(labels: LabelValues, value: number): void {
    const key = labels.join(SEP);
    const cell = this.#values.get(key);
    if (cell) cell.value = value;
    else this.#values.set(key, { labels: [...labels], value });
  }
  get(labels: LabelValues = []): number {
    return this.#values.get(labels.join(SEP))?.value ?? 0;
  }
  remove(labels: LabelValues): void {
    this.#values.delete(labels.join(SEP));
  }
  /** Drop every value (before a collect callback refills them). */
  reset(): void {
    this.#values.clear();
  }
  onCollect(fn: (g: Gauge) => void): this {
    this.#collect = fn;
    return this;
  }
  samples(out: string[]): void {
    this.#collect?.(this);
    for (const { labels, value } of this.#values.values())
      out.push(`${this.name}${labelText(this.labelNames, labels)} ${formatNumber(value)}`);
  }
}

interface Series {
  readonly labels: LabelValues;
  /** Per bucket, not cumulative; made cumulative when rendered. */
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

/** One label set of a histogram, resolved once so hot paths skip the label lookup. */
export interface HistogramSeries {
  observe(value: number): void;
}

export class Histogram extends Metric {
  readonly type = "histogram";
  readonly #series = new Map<string, Series>();
  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    readonly buckets: readonly number[],
  ) {
    super(name, help, labelNames);
  }
  observe(labels: LabelValues, value: number): void {
    this.#record(this.#get(labels), value);
  }
  /** A handle on one label set (created now, so it shows in the output even before use). */
  series(labels: LabelValues): HistogramSeries {
    const s = this.#get(labels);
    return { observe: (value) => this.#record(s, value) };
  }
  count(labels: LabelValues = []): number {
    return this.#series.get(labels.join(SEP))?.count ?? 0;
  }
  #get(labels: LabelValues): Series {
    const key = labels.join(SEP);
    let s = this.#series.get(key);
    if (!s) {
      s = { labels: [...labels], counts: new Float64Array(this.buckets.length), sum: 0, count: 0 };
      this.#series.set(key, s);
    }
    return s;
  }
  #record(s: Series, value: number): void {
    const b = this.buckets;
    for (let i = 0; i < b.length; i++) {
      if (value <= b[i]!) {
        s.counts[i]!++;
        break;
      }
    }
    s.sum += value;
    s.count++;
  }
  samples(out: string[]): void {
    for (const s of this.#series.values()) {
      let cum = 0;
      for (let i = 0; i < this.buckets.length; i++) {
        cum += s.counts[i]!;
        out.push(
          `${this.name}_bucket${labelText(this.labelNames, s.labels, `le="${formatNumber(this.buckets[i]!)}"`)} ${cum}`,
        );
      }
      out.push(
        `${this.name}_bucket${labelText(this.labelNames, s.labels, 'le="+Inf"')} ${s.count}`,
      );
      out.push(`${this.name}_sum${labelText(this.labelNames, s.labels)} ${formatNumber(s.sum)}`);
      out.push(`${this.name}_count${labelText(this.labelNames, s.labels)} ${s.count}`);
    }
  }
}

export class MetricsRegistry {
  readonly #metrics: Metric[] = [];
  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return this.#add(new Counter(name, help, labelNames));
  }
  gauge(name: string, help: string, labelNames: readonly string[] = []): Gauge {
    return this.#add(new Gauge(name, help, labelNames));
  }
  histogram(
    name: string,
    help: string,
    labelNames: readonly string[],
    buckets: readonly number[],
  ): Histogram {
    return this.#add(new Histogram(name, help, labelNames, buckets));
  }
  #add<M extends Metric>(m: M): M {
    if (this.#metrics.some((x) => x.name === m.name))
      throw new Error(`metric ${m.name} registered twice`);
    this.#metrics.push(m);
    return m;
  }
  /** Prometheus text exposition. */
  render(): string {
    const out: string[] = [];
    for (const m of this.#metrics) m.render(out);
    return out.join("\n") + "\n";
  }
}

/** The content type Prometheus expects for the text format. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
