import type { Metric, Registry } from 'prom-client';

/** One label set's counts: bucket counts (not cumulative; the last is +Inf), sum and count. */
export class Series<L extends string> {
  readonly labels: Readonly<Record<L, string>>;
  readonly #bounds: readonly number[];
  readonly #counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(labels: Readonly<Record<L, string>>, bounds: readonly number[]) {
    this.labels = labels;
    this.#bounds = bounds;
    this.#counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    this.#counts[i] = (this.#counts[i] as number) + 1;
    this.sum += value;
    this.count++;
  }

  clear(): void {
    this.#counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }

  /** Cumulative counts, one per bound and the last for +Inf, as the exposition has them. */
  cumulative(): number[] {
    let total = 0;
    return Array.from(this.#counts, (n) => (total += n));
  }
}

/**
 * A labelled histogram for the request path: prom-client's own (15.x) builds a label hash string and
 * looks it up on every observe, which cost far more than the clock reads around it, twice per request
 * (its duration and its store operation's). Here a caller keeps its `Series` (made once per label
 * set) and an observe is a bucket search and three additions. Everything else is prom-client's: the
 * registry writes these samples (names, label escaping, the +Inf bucket, the content type) exactly as it
 * writes its own histograms, from what `get()` returns, the shape its Histogram#get returns.
 */
export class HotHistogram<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  readonly #bounds: readonly number[];
  readonly #series: Series<L>[] = [];

  constructor({ name, help, buckets, registry }: { name: string; help: string; buckets: readonly number[]; registry: Registry }) {
    this.name = name;
    this.help = help;
    this.#bounds = [...buckets].sort((a, b) => a - b);
    // The registry keeps any object with prom-client's metric shape (name, get, reset); its type names
    // only prom-client's own classes.
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series of `labels`, made on first use; keep it and call its observe. */
  series(labels: Readonly<Record<L, string>>): Series<L> {
    const keys = Object.keys(labels) as L[];
    const found = this.#series.find((s) => keys.every((k) => s.labels[k] === labels[k]));
    if (found) return found;
    const series = new Series(labels, this.#bounds);
    this.#series.push(series);
    return series;
  }

  /** Every series so far, in the order they were made. */
  all(): readonly Series<L>[] {
    return this.#series;
  }

  /** What prom-client's Histogram#get returns: each bucket (le), then _sum and _count, per series. */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: HistogramValue[] }> {
    const values: HistogramValue[] = [];
    const bucket = `${this.name}_bucket`;
    for (const series of this.#series) {
      const cumulative = series.cumulative();
      cumulative.forEach((value, i) => {
        values.push({ metricName: bucket, labels: { ...series.labels, le: this.#bounds[i] ?? '+Inf' }, value });
      });
      values.push({ metricName: `${this.name}_sum`, labels: { ...series.labels }, value: series.sum });
      values.push({ metricName: `${this.name}_count`, labels: { ...series.labels }, value: series.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** Registry#resetMetrics calls it; the series stay (their holders keep observing into them). */
  reset(): void {
    for (const series of this.#series) series.clear();
  }
}

interface HistogramValue {
  readonly metricName: string;
  readonly labels: Record<string, string | number>;
  readonly value: number;
}
