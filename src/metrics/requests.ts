import { Counter, type Registry } from 'prom-client';
import { HotHistogram, type Series } from './histogram.js';

/** The route label of a request no route matched (404, and 405 from the not-found handler). */
export const UNMATCHED = 'unmatched';

/** Methods kept as their own label value; any other (Node's parser knows a few dozen) is counted as OTHER. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']);
const STATUS_CLASSES = ['other', '1xx', '2xx', '3xx', '4xx', '5xx'];

/** Seconds: a cached list takes well under a millisecond; REQUEST_TIMEOUT is 30 s by default. */
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

type Label = 'route' | 'method' | 'status_class';

/**
 * Requests by route pattern, method and status class: a duration histogram and a request counter.
 *
 * Per request: two Map lookups, an array read and one observe on the series, made once per label set
 * (histogram.ts). The counter is the series' count, handed to prom-client at scrape time (its
 * `collect`). Label values are bounded by construction: route patterns (or UNMATCHED), the methods the
 * parser accepts (the rarer ones as OTHER), six classes.
 */
export class HttpRequests {
  readonly #byRoute = new Map<string, Map<string, (Series<Label> | undefined)[]>>();
  readonly #duration: HotHistogram<Label>;

  constructor(registry: Registry, prefix: string) {
    this.#duration = new HotHistogram({
      name: `${prefix}http_request_duration_seconds`,
      help: 'Time from the request\'s arrival to its answer sent, by route pattern, method and status class',
      buckets: BUCKETS,
      registry,
    });
    const duration = this.#duration;
    new Counter({
      name: `${prefix}http_requests_total`,
      help: 'Requests answered, by route pattern (unmatched: no route), method and status class',
      labelNames: ['route', 'method', 'status_class'],
      registers: [registry],
      collect(this: Counter<Label>): void {
        this.reset();
        for (const series of duration.all()) this.inc(series.labels, series.count);
      },
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
    let series = classes[index];
    if (series === undefined) {
      // Two raw methods counted as OTHER get the one series of their labels.
      series = this.#duration.series({ route, method: METHODS.has(method) ? method : 'OTHER', status_class: STATUS_CLASSES[index] ?? 'other' });
      classes[index] = series;
    }
    series.observe(seconds);
  }
}
