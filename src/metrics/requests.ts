import { Counter, Histogram, type Registry } from 'prom-client';

/** The route label of a request no route matched (404, and 405 from the not-found handler). */
export const UNMATCHED = 'unmatched';

/** Methods kept as their own label value; any other (Node's parser knows a few dozen) is counted as OTHER. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']);
const STATUS_CLASSES = ['other', '1xx', '2xx', '3xx', '4xx', '5xx'];

/** Seconds: a cached list takes well under a millisecond; REQUEST_TIMEOUT is 30 s by default. */
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

type Labels = Record<'route' | 'method' | 'status_class', string>;

/** One series: the histogram's child for its labels, and its request count as a plain number. */
interface Series {
  readonly labels: Labels;
  readonly duration: ReturnType<Histogram<keyof Labels>['labels']>;
  count: number;
}

/**
 * Requests by route pattern, method and status class: a duration histogram and a request counter.
 *
 * Per request this costs two Map lookups, an array read and one prom-client observe (its child for the
 * series is made once). The counter's value is a plain number per series, handed to prom-client at
 * scrape time (its `collect`), so the request path pays for one library call, not two. Label values are
 * bounded by construction: route patterns (or UNMATCHED), the methods the parser accepts, six classes.
 */
export class HttpRequests {
  readonly #byRoute = new Map<string, Map<string, (Series | undefined)[]>>();
  readonly #all: Series[] = [];
  readonly #duration: Histogram<keyof Labels>;

  constructor(registry: Registry, prefix: string) {
    const all = this.#all;
    const labelNames = ['route', 'method', 'status_class'] as const;
    new Counter({
      name: `${prefix}http_requests_total`,
      help: 'Requests answered, by route pattern (unmatched: no route), method and status class',
      labelNames,
      registers: [registry],
      collect(this: Counter<keyof Labels>): void {
        this.reset();
        for (const series of all) this.inc(series.labels, series.count);
      },
    });
    this.#duration = new Histogram({
      name: `${prefix}http_request_duration_seconds`,
      help: 'Time from the request\'s arrival to its answer sent, by route pattern, method and status class',
      labelNames,
      buckets: BUCKETS,
      registers: [registry],
    });
  }

  /** A request was answered: `route` is its pattern (/plants/:id), or UNMATCHED. */
  observe(route: string, method: string, status: number, seconds: number): void {
    let byMethod = this.#byRoute.get(route);
    if (byMethod === undefined) {
      byMethod = new Map();
      this.#byRoute.set(route, byMethod);
    }
    let classes = byMethod.get(method);
    if (classes === undefined) {
      classes = [];
      byMethod.set(method, classes);
    }
    const index = status >= 100 && status < 600 ? (status / 100) | 0 : 0;
    const series = classes[index] ?? this.#series(classes, index, route, method);
    series.count++;
    series.duration.observe(seconds);
  }

  #series(classes: (Series | undefined)[], index: number, route: string, method: string): Series {
    const labels: Labels = {
      route,
      method: METHODS.has(method) ? method : 'OTHER',
      status_class: STATUS_CLASSES[index] ?? 'other',
    };
    // Two raw methods counted as OTHER share one series, so that the exposition has each labels once.
    const series = this.#all.find((s) => s.labels.route === route && s.labels.method === labels.method && s.labels.status_class === labels.status_class)
      ?? { labels, duration: this.#duration.labels(labels), count: 0 };
    if (!this.#all.includes(series)) this.#all.push(series);
    classes[index] = series;
    return series;
  }
}
