import { BACKLOG_CAP, EVENT_LOOP_SAMPLE_MS, SCRAPE_STORE_TIMEOUT_MS } from './metrics.js';

/** One row of the metrics table of docs/logs-and-metrics.md: one family, or a few read together. */
export interface MetricFamilyRow {
  /** The families' names, as the registry has them; a name ending in `*` stands for every family it starts. */
  readonly names: readonly string[];
  /** As the registry says: counter, gauge or histogram; empty for the `*` row, whose families are of every type. */
  readonly type: '' | 'counter' | 'gauge' | 'histogram';
  /** The label names, in the order the registry has them; `same`: those of the row above. */
  readonly labels: readonly string[] | 'same';
  /** What the family is for, as an operator reads it. */
  readonly meaning: string;
}

/**
 * Every family a server exposes, in the order the metrics page lists them. docs/logs-and-metrics.md's
 * table is written from this one (npm run docs:tables); test/contract/metrics-table.test.ts checks it
 * against the families a Metrics registry really holds (names, types, labels), both ways.
 */
export const METRIC_FAMILIES: readonly MetricFamilyRow[] = [
  {
    names: ['plantstore_http_requests_total'],
    type: 'counter',
    labels: ['route', 'method', 'status_class'],
    meaning:
      'Traffic and errors per route: `route` is the route\'s pattern (`/plants`, `/plants/:id`, `/webhooks/:id/deliveries`…), `unmatched` for a request no route takes (404, and 405 for a method the path does not have); `status_class` is `2xx`…`5xx`',
  },
  {
    names: ['plantstore_http_request_duration_seconds'],
    type: 'histogram',
    labels: 'same',
    meaning:
      'Latency per route, from the request\'s arrival to the answer sent (buckets 0.5 ms to 10 s)',
  },
  {
    names: ['plantstore_auth_refusals_total'],
    type: 'counter',
    labels: ['reason'],
    meaning:
      'Why requests are turned away: `missing_token`, `malformed`, `unknown`, `revoked`, `expired` (opaque tokens), `jwt_signature`, `jwt_expired`, `jwt_aud`, `jwt_iss`, `jwt_unknown_key`… (one per JWT check), `insufficient_scope`, `admin_required`, `failure_limit` (AUTH_FAILURE_LIMIT), `rate_limit` (RATE_LIMIT), `provider_unavailable` (the identity provider\'s keys cannot be fetched)',
  },
  {
    names: ['plantstore_store_up'],
    type: 'gauge',
    labels: [],
    meaning:
      `1 when the store answered this scrape's readiness check (what \`/readyz\` asks) within ${SCRAPE_STORE_TIMEOUT_MS / 1000} s; 0 when it did not, or is not open yet`,
  },
  {
    names: ['plantstore_store_operation_duration_seconds'],
    type: 'histogram',
    labels: ['operation', 'backend'],
    meaning:
      'Time of each store operation as the server waits for it (`createPlant`, `listPlants` — a cached page included —, `deletePlant`, `findTokenByHash`, `hit`, `claimDeliveries`, `recordAttempts`…)',
  },
  {
    names: ['plantstore_store_group_commit_writes'],
    type: 'histogram',
    labels: ['backend'],
    meaning:
      'Writes committed together by one group commit (SQLite: every write; PostgreSQL: creates): how much sharing a commit saves',
  },
  {
    names: ['plantstore_list_cache_hits_total', 'plantstore_list_cache_misses_total'],
    type: 'counter',
    labels: [],
    meaning:
      'SQLite only: lists answered from the list cache, and lists it did not hold (or held stale)',
  },
  {
    names: ['plantstore_list_cache_entries', 'plantstore_list_cache_plants', 'plantstore_list_cache_bytes', 'plantstore_list_cache_max_bytes'],
    type: 'gauge',
    labels: [],
    meaning:
      'SQLite only: what the list cache holds against its bounds (`LIST_CACHE_PLANTS`)',
  },
  {
    names: ['plantstore_postgres_pool_connections', 'plantstore_postgres_pool_idle_connections', 'plantstore_postgres_pool_waiting_requests', 'plantstore_postgres_pool_max_connections'],
    type: 'gauge',
    labels: [],
    meaning:
      'PostgreSQL only: the connection pool; requests waiting for a connection mean `DATABASE_POOL_SIZE` is too small (or the database too slow)',
  },
  {
    names: ['plantstore_webhook_delivery_attempts_total'],
    type: 'counter',
    labels: ['result'],
    meaning:
      'Delivery attempts by result: `delivered`, `retry` (failed, will be retried), `failed` (retries exhausted), `gone` (the receiver answered 410; its endpoint is disabled)',
  },
  {
    names: ['plantstore_webhook_pending_events'],
    type: 'gauge',
    labels: [],
    meaning:
      `Events waiting for delivery, every endpoint and instance; counted up to ${BACKLOG_CAP.toLocaleString('en')} (past that it reads ${BACKLOG_CAP})`,
  },
  {
    names: ['plantstore_webhook_oldest_pending_age_seconds'],
    type: 'gauge',
    labels: [],
    meaning:
      'How long the oldest of them has waited (0 when none is): the backlog alert\'s measure',
  },
  {
    names: ['plantstore_feed_streams'],
    type: 'gauge',
    labels: [],
    meaning:
      'Live feed streams (`GET /plants/events`) open on this instance; FEED_MAX_STREAMS is its bound',
  },
  {
    names: ['plantstore_feed_streams_ended_total'],
    type: 'counter',
    labels: ['reason'],
    meaning:
      'Streams ended, by reason: `client` (it went away), `slow-reader` (it did not read fast enough), `shutting-down`, `token-revoked`',
  },
  {
    names: ['plantstore_feed_events_sent_total'],
    type: 'counter',
    labels: [],
    meaning:
      'Events written to streams, one per stream an event went to',
  },
  {
    names: ['plantstore_build_info'],
    type: 'gauge',
    labels: ['version', 'backend'],
    meaning:
      '1; which version runs on which backend',
  },
  {
    names: ['process_*', 'nodejs_*'],
    type: '',
    labels: [],
    meaning:
      `The process (CPU, memory, open files) and Node.js (event loop lag, heap, garbage collection), from prom-client's default metrics, with their customary names. The event loop lag percentiles (\`nodejs_eventloop_lag_p99_seconds\`…) are sampled every ${EVENT_LOOP_SAMPLE_MS} ms rather than prom-client's 10 ms: each sample wakes the server, 100 times a second at 10 ms even when idle, and instances sharing a machine slow each other with it; a stall still delays whichever sample falls due during it`,
  },
];
