import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { FeedObserver } from '../feed/hub.js';
import type { ListCacheStats, PoolStats, Store, StoreObserver, WebhookBacklog } from '../store/store.js';
import { HotHistogram } from './histogram.js';
import { HttpRequests } from './requests.js';
import { measureStore } from '../store/wrappers/timing.js';
import type { DeliveryObserver } from '../webhooks/attempts.js';

/** Every family's name starts with this (process and Node.js families keep their customary names). */
export const PREFIX = 'plantstore_';

/**
 * The pending webhook events a scrape counts at most (Store.webhookBacklog), so that a scrape's read
 * stays short whatever the backlog (docs/logs-and-metrics.md); past it, the gauge stays at this value and
 * the alert on the oldest event's age still fires.
 */
export const BACKLOG_CAP = 100_000;

/**
 * A scrape waits this long for the store (the readiness ping, the backlog read), then answers without
 * it: plantstore_store_up 0, no backlog gauges. Well under Prometheus's default scrape timeout (10 s).
 */
export const SCRAPE_STORE_TIMEOUT_MS = 2000;
/**
 * How often the event loop's delay is sampled for the nodejs_eventloop_lag_* percentiles (prom-client's
 * default is 10 ms). Each sample is a timer that wakes the main thread, and at prom-client's default an
 * idle instance woke a hundred times a second: instances sharing a machine took each other's CPU with
 * it, measurably per request. At 50 ms the samples are fewer, not
 * different: a stall still delays whichever sample falls due during it, so the percentiles describe the
 * same delays, from 20 samples a second (a scrape resets them; the first interval after it is not
 * counted, as with any precision).
 */
export const EVENT_LOOP_SAMPLE_MS = 50;

const PENDING = `${PREFIX}webhook_pending_events`;
const OLDEST = `${PREFIX}webhook_oldest_pending_age_seconds`;

/** Seconds; from a cached list (tens of µs) to the 5 s bound on a store operation. */
const STORE_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
/** Writes per group commit: PostgreSQL's batches stop at 500 creates. */
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];

export interface MetricsOptions {
  /** The configured backend (sqlite or postgres), known before the store opens. */
  readonly backend: string;
  readonly version: string;
}

/**
 * Everything an operator scrapes, in one prom-client Registry per server (tests build many in one
 * process, so never the global registry). Made only when METRICS_PORT is set: otherwise no hook, no
 * wrapper, no timer exists, and the store and the dispatcher are given no observer.
 *
 * Counted as it happens: HTTP requests (requests.ts), authentication refusals, store operation times
 * (store.ts), group commits, delivery attempts. Read at scrape time: the list cache and the pool (plain
 * numbers their owners keep), the store's readiness and the webhook backlog (one bounded store read).
 */
export class Metrics {
  readonly registry = new Registry();
  readonly http: HttpRequests;
  readonly #refusals: Counter<'reason'>;
  readonly #operations: HotHistogram<'operation' | 'backend'>;
  readonly #batches: HotHistogram<'backend'>;
  readonly #deliveries: Counter<'result'>;
  readonly #streams: Gauge;
  readonly #streamsEnded: Counter<'reason'>;
  readonly #feedEvents: Counter;
  readonly #storeUp: Gauge;
  readonly #pending: Gauge;
  readonly #oldest: Gauge;
  #store: Store | undefined;
  /** The store reads under way (see #readStore). */
  #ping: Promise<boolean> | undefined;
  #backlog: Promise<WebhookBacklog | undefined> | undefined;

  constructor({ backend, version }: MetricsOptions) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
    new Gauge({
      name: `${PREFIX}build_info`,
      help: 'Always 1; its labels say which version runs on which backend',
      labelNames: ['version', 'backend'],
      registers,
    }).set({ version, backend }, 1);
    this.http = new HttpRequests(this.registry, PREFIX);
    this.#refusals = new Counter({
      name: `${PREFIX}auth_refusals_total`,
      help: 'Requests refused authentication or authorization, by reason (missing_token, unknown, expired, jwt_signature, insufficient_scope, failure_limit…)',
      labelNames: ['reason'],
      registers,
    });
    this.#operations = new HotHistogram({
      name: `${PREFIX}store_operation_duration_seconds`,
      help: 'Store operations, from the call to its answer (a cached list included), by operation',
      buckets: STORE_BUCKETS,
      registry: this.registry,
    });
    // A HotHistogram too: under a stream of creates, SQLite commits a batch every turn of the event loop.
    this.#batches = new HotHistogram({
      name: `${PREFIX}store_group_commit_writes`,
      help: 'Writes committed together in one transaction by a group commit (SQLite: any writes; PostgreSQL: creates)',
      buckets: BATCH_BUCKETS,
      registry: this.registry,
    });
    this.#deliveries = new Counter({
      name: `${PREFIX}webhook_delivery_attempts_total`,
      help: 'Webhook delivery attempts by result: delivered, retry (failed, will be retried), failed (retries exhausted), gone (410: endpoint disabled)',
      labelNames: ['result'],
      registers,
    });
    this.#streams = new Gauge({
      name: `${PREFIX}feed_streams`,
      help: 'Live feed streams (GET /plants/events) open on this instance',
      registers,
    });
    this.#streamsEnded = new Counter({
      name: `${PREFIX}feed_streams_ended_total`,
      help: 'Live feed streams ended, by reason: client (it closed), slow-reader, shutting-down, token-revoked',
      labelNames: ['reason'],
      registers,
    });
    this.#feedEvents = new Counter({
      name: `${PREFIX}feed_events_sent_total`,
      help: 'Events written to live feed streams (one per stream an event is sent on)',
      registers,
    });
    this.#storeUp = new Gauge({
      name: `${PREFIX}store_up`,
      help: `1 when the store answered this scrape's readiness check (as /readyz) within ${SCRAPE_STORE_TIMEOUT_MS / 1000} s, else 0`,
      registers,
    });
    // Registered by each scrape that read the backlog, removed by one that could not (see scrape).
    this.#pending = new Gauge({
      name: PENDING,
      help: `Webhook events waiting for delivery, every endpoint (counted up to ${BACKLOG_CAP}); absent when the store did not answer`,
      registers: [],
    });
    this.#oldest = new Gauge({
      name: OLDEST,
      help: 'Age of the oldest webhook event waiting for delivery, 0 when none is; absent when the store did not answer',
      registers: [],
    });
  }

  /**
   * What the store calls as it works: group commits, and the list cache and the pool, whose families
   * exist only where the store has one (SQLite's list cache, PostgreSQL's pool).
   */
  readonly storeObserver: StoreObserver = {
    committed: (backend, writes) => this.#batches.series({ backend }).observe(writes),
    listCache: (read) => listCacheFamilies(this.registry, read),
    pool: (read) => poolFamilies(this.registry, read),
  };

  readonly deliveryObserver: DeliveryObserver = {
    attempted: (outcome) => this.#deliveries.inc({ result: outcome }),
  };

  /** What the live feed tells (src/feed/hub.ts). */
  readonly feedObserver: FeedObserver = {
    opened: () => this.#streams.inc(),
    ended: (reason) => {
      this.#streams.dec();
      this.#streamsEnded.inc({ reason });
    },
    sent: (events) => this.#feedEvents.inc(events),
  };

  /**
   * A refusal by authentication, a scope check or a limit; `reason` is one of a fixed set: the error
   * table's metricLabel column (http/errors.ts), or a verifier's reason (http/plugins/metrics.ts).
   */
  refused(reason: string): void {
    this.#refusals.inc({ reason });
  }

  /** `store` with each operation timed (store.ts); what the app and the dispatcher are given. */
  measure(store: Store): Store {
    return measureStore(store, this.#operations);
  }

  /** The store is open: scrapes check it from now on. Until then plantstore_store_up is 0. */
  storeOpened(store: Store): void {
    this.#store = store;
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The exposition, after reading the store (bounded by SCRAPE_STORE_TIMEOUT_MS). */
  async scrape(): Promise<string> {
    const { up, backlog } = await this.#readStore();
    this.#storeUp.set(up ? 1 : 0);
    // Absent rather than stale or 0 when the store did not answer: an alert on the backlog must not see
    // "no backlog" in an outage (plantstore_store_up says what happened).
    for (const [name, gauge] of [[PENDING, this.#pending], [OLDEST, this.#oldest]] as const) {
      if (backlog === undefined) this.registry.removeSingleMetric(name);
      else if (this.registry.getSingleMetric(name) === undefined) this.registry.registerMetric(gauge);
    }
    if (backlog !== undefined) {
      this.#pending.set(backlog.pending);
      this.#oldest.set(backlog.oldest === null ? 0 : Math.max(0, (Date.now() - backlog.oldest.getTime()) / 1000));
    }
    return this.registry.metrics();
  }

  /**
   * The readiness check and the backlog read, each bounded on its own (a backlog read stuck behind a lock
   * does not make a store that answers its ping look down). A read still running when the next scrape
   * comes is waited on again rather than started twice, so slow reads never pile up.
   */
  async #readStore(): Promise<StoreReading> {
    const store = this.#store;
    if (store === undefined) return { up: false, backlog: undefined };
    this.#ping ??= store.health.ping().then(() => true, () => false).finally(() => (this.#ping = undefined));
    this.#backlog ??= store.outbox.webhookBacklog(BACKLOG_CAP).catch(() => undefined).finally(() => (this.#backlog = undefined));
    const [up, backlog] = await Promise.all([
      within(this.#ping, SCRAPE_STORE_TIMEOUT_MS, false),
      within(this.#backlog, SCRAPE_STORE_TIMEOUT_MS, undefined),
    ]);
    return { up, backlog };
  }
}

/** The list cache's families, read at scrape time (plain numbers the cache keeps: store/wrappers/page-cache.ts). */
function listCacheFamilies(registry: Registry, read: () => ListCacheStats): void {
  const registers = [registry];
  const gauge = (name: string, help: string, key: keyof ListCacheStats): Gauge =>
    new Gauge({ name: `${PREFIX}list_cache_${name}`, help, registers, collect(this: Gauge) { this.set(read()[key]); } });
  const counter = (name: string, help: string, key: keyof ListCacheStats): Counter =>
    new Counter({
      name: `${PREFIX}list_cache_${name}_total`, help, registers,
      collect(this: Counter) {
        this.reset();
        this.inc(read()[key]);
      },
    });
  const what = 'the SQLite list cache (LIST_CACHE_PLANTS)';
  counter('hits', `Lists answered from ${what}`, 'hits');
  counter('misses', `Lists ${what} did not hold (or held stale), read from the store`, 'misses');
  gauge('entries', `Pages held in ${what}`, 'entries');
  gauge('plants', `Plants held in ${what} (an empty page counts one), bounded by LIST_CACHE_PLANTS`, 'plants');
  gauge('bytes', `Estimated bytes held in ${what}`, 'bytes');
  gauge('max_bytes', `The bound on ${PREFIX}list_cache_bytes`, 'maxBytes');
}

/** The PostgreSQL pool's families, read at scrape time (pg's Pool counts). */
function poolFamilies(registry: Registry, read: () => PoolStats): void {
  const registers = [registry];
  const gauge = (name: string, help: string, key: keyof PoolStats): Gauge =>
    new Gauge({ name: `${PREFIX}postgres_pool_${name}`, help, registers, collect(this: Gauge) { this.set(read()[key]); } });
  gauge('connections', 'Connections open in the PostgreSQL pool', 'total');
  gauge('idle_connections', 'Connections of the PostgreSQL pool open and unused', 'idle');
  gauge('waiting_requests', 'Store operations waiting for a connection of the PostgreSQL pool', 'waiting');
  gauge('max_connections', 'The PostgreSQL pool\'s size (DATABASE_POOL_SIZE)', 'max');
}

interface StoreReading {
  readonly up: boolean;
  readonly backlog: WebhookBacklog | undefined;
}

/** `promise`'s value, or `otherwise` after `ms`. */
function within<T>(promise: Promise<T>, ms: number, otherwise: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve) => (timer = setTimeout(resolve, ms, otherwise)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
