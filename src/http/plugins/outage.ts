import type { FastifyBaseLogger } from 'fastify';
import type { Store } from '../../store/store.js';

/** How often a store that failed is pinged, to notice (and log) that it is back. */
const OUTAGE_PROBE_MS = 1000;
/**
 * The store counts as back once a ping succeeds and no request has failed with 503 for this long. The
 * quiet period matters when reads work but writes do not (SQLite: another process holds the write lock
 * past the busy timeout): a ping alone would declare the store back between every two failed writes.
 */
const OUTAGE_QUIET_MS = 5000;

/**
 * Logs a store outage once when it starts (warn, without a stack: it is an expected condition, and the
 * cause is in the reason) and once when it ends (info), instead of once per request answered 503.
 */
export class StoreOutage {
  readonly #store: Store;
  readonly #log: FastifyBaseLogger;
  readonly #probeMs: number;
  readonly #quietMs: number;
  #since = 0;
  #lastFailure = 0;
  #failures = 0;
  #probe: NodeJS.Timeout | undefined;
  #pinging = false;

  /** `timing`: the probe interval and the quiet period, OUTAGE_PROBE_MS and OUTAGE_QUIET_MS unless given. */
  constructor(store: Store, log: FastifyBaseLogger, timing: { readonly probeMs?: number | undefined; readonly quietMs?: number | undefined } = {}) {
    this.#store = store;
    this.#log = log;
    this.#probeMs = timing.probeMs ?? OUTAGE_PROBE_MS;
    this.#quietMs = timing.quietMs ?? OUTAGE_QUIET_MS;
  }

  /** A request was answered 503 50300 because of `error`. */
  failed(error: Error, log: FastifyBaseLogger): void {
    this.#lastFailure = Date.now();
    this.#failures++;
    if (this.#probe !== undefined) return;
    this.#since = this.#lastFailure;
    this.#failures = 1;
    log.warn(error.message);
    this.#probe = setInterval(() => this.#check(), this.#probeMs).unref();
  }

  #check(): void {
    // A ping may take longer than the interval (a PostgreSQL connect timeout): one at a time.
    if (this.#pinging || Date.now() - this.#lastFailure < this.#quietMs) return;
    this.#pinging = true;
    const probe = this.#probe;
    this.#store.health.ping().then(
      () => {
        this.#pinging = false;
        // A failure may have come in while the ping was under way: the outage is not over then.
        if (this.#probe !== probe || Date.now() - this.#lastFailure < this.#quietMs) return;
        this.stop();
        this.#log.info({ unavailableForMs: Date.now() - this.#since, failedRequests: this.#failures }, 'store available again');
      },
      () => {
        this.#pinging = false;
      },
    );
  }

  stop(): void {
    clearInterval(this.#probe);
    this.#probe = undefined;
  }
}
