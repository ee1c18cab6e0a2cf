import type { Metric, MetricValueWithName, Registry } from 'prom-client';

/** Records one observation in seconds (or any unit the histogram's buckets are in). */
export interface Observer {
  observe(value: number): void;
}

interface Series {
  /** The series' label values by name, as prom-client passes them to its formatter. */
  readonly labels: Readonly<Record<string, string>>;
  /** Observations per bucket, not cumulative; the last slot counts those above every bound (+Inf). */
  readonly counts: Float64Array;
  sum: number;
}

type ExportedValue = MetricValueWithName<string> & { sharedLabels?: Readonly<Record<string, string>>; exemplar?: null };

/** A metric as prom-client's Registry reads it. */
interface Exported {
  readonly name: string;
  readonly help: string;
  readonly type: 'histogram';
  readonly values: ExportedValue[];
  readonly aggregator: 'sum';
}

/**
 * A Prometheus histogram for the per-request duration, the one metric every request records.
 * prom-client's Histogram validates and hashes the label set and turns the bucket bound into a
 * property name on every observation: ~0.6 µs in a loop, against a precomputed response's ~17–30 µs
 * (bench suite `overhead`). Here `labels()` fixes a series once and its observer adds to a typed array.
 * The exposition is what prom-client writes for the same observations, series in first-observed
 * order (request-histogram.test.ts compares the two), and it registers in a prom-client Registry.
 * One difference: a series is exported from its `labels()` call on, with zero counts until its
 * first observation (prom-client exports it from that observation).
 */
export class RequestHistogram<L extends string> {
  readonly type = 'histogram' as const;
  readonly aggregator = 'sum' as const;
  readonly #bounds: Float64Array;
  readonly #series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly L[],
    buckets: readonly number[],
    registry: Registry,
  ) {
    this.#bounds = Float64Array.from([...buckets].sort((a, b) => a - b));
    registry.registerMetric(this as unknown as Metric);
  }

  /** The observer of the series with these label values, in `labelNames` order. */
  labels(...values: string[]): Observer {
    if (values.length !== this.labelNames.length) {
      throw new TypeError(`${this.name} takes ${this.labelNames.length} label values (${this.labelNames.join(', ')}), got ${values.length}`);
    }
    const key = values.join('\u0000');
    let series = this.#series.get(key);
    if (series === undefined) {
      series = { labels: Object.fromEntries(this.labelNames.map((name, i) => [name, values[i]!])), counts: new Float64Array(this.#bounds.length + 1), sum: 0 };
      this.#series.set(key, series);
    }
    const bounds = this.#bounds;
    const { counts } = series;
    const target = series;
    return {
      observe(value: number) {
        if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
        let bucket = 0;
        while (bucket < bounds.length && value > bounds[bucket]!) bucket++;
        counts[bucket]!++;
        target.sum += value;
      },
    };
  }

  /** What the registry formats: prom-client's histogram layout, series labels shared by each line. */
  async getForPromString(): Promise<Exported> {
    const values: ExportedValue[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const { labels, counts, sum } of this.#series.values()) {
      let cumulative = 0;
      for (const [i, bound] of this.#bounds.entries()) {
        cumulative += counts[i]!;
        values.push({ labels: { le: bound }, sharedLabels: labels, value: cumulative, metricName: bucketName, exemplar: null });
      }
      const count = cumulative + counts[this.#bounds.length]!;
      values.push({ labels: { le: '+Inf' }, sharedLabels: labels, value: count, metricName: bucketName, exemplar: null });
      values.push({ labels: {}, sharedLabels: labels, value: sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: labels, value: count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** The JSON form (`Registry.getMetricsAsJSON`): each value's labels with the series' merged in. */
  async get(): Promise<Exported> {
    const data = await this.getForPromString();
    const values = data.values.map(({ sharedLabels, labels, ...value }) => ({ ...value, labels: { ...labels, ...sharedLabels } }));
    return { ...data, values };
  }

  reset(): void {
    this.#series.clear();
  }
}
