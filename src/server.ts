import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { createServer as createApp, plantstore, type AppOptions } from './app.js';
import { describeStore, type DatabaseConfig } from './config/database.js';
import type { Config } from './config/load.js';
import { LateStore } from './store/wrappers/late.js';
import { httpMetrics } from './http/plugins/metrics.js';
import { listenMetrics, type MetricsListener } from './metrics/listener.js';
import { Metrics } from './metrics/metrics.js';
import { openStore, type OpenOptions } from './store/open.js';
import { sqliteDriver } from './store/sqlite/driver.js';
import type { Store, StoreObserver } from './store/store.js';
import { packageVersion } from './version.js';
import { webhookService, type WebhookService } from './webhooks/service.js';

/** After the drain deadline the store still has to close; past this too, the process exits 1. */
const CLOSE_STORE_GRACE_MS = 5000;

/** Signals that stop the server (with a drain). SIGHUP: the terminal running it was closed. */
const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;

/** Start-up failed for a reason the operator has to fix: the CLI logs the message as one fatal line and exits 1. */
export class StartupError extends Error {
  constructor(message: string) {
    super(message.replace(/\s*\n\s*/g, ' '));
  }
}

function storeError(database: DatabaseConfig, error: unknown): StartupError {
  const message = error instanceof Error ? error.message : String(error);
  const place = describeStore(database, 'place');
  // The store's own messages usually name the place already; say it once either way.
  return new StartupError(message.includes(place) ? message : `cannot open the store ${place}: ${message}`);
}

const LISTEN_REASONS: Record<string, string> = {
  EADDRINUSE: 'the port is already in use by another process',
  EADDRNOTAVAIL: 'the address is not one of this machine\'s',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name could not be resolved (DNS unavailable)',
};

/** `what`: '' for the API's listener, ' for metrics' for the metrics listener's. */
function listenError(host: string, port: number, error: unknown, what = ''): StartupError {
  const code = (error as { code?: unknown }).code;
  const reason = typeof code === 'string' && LISTEN_REASONS[code] ? `${LISTEN_REASONS[code]} (${code})` : (error as Error).message;
  return new StartupError(`cannot listen${what} on ${host}:${port}: ${reason}`);
}

/**
 * Binds the address and lets it go at once, so that a port in use, an address that is not this
 * machine's or a host name that does not resolve ends start-up before a new SQLite store is created
 * for a server that never ran. (A port taken between this and the real listen still fails there.)
 */
async function checkAddress(host: string, port: number, what = ''): Promise<void> {
  const server = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host, port, exclusive: true }, resolve);
    });
  } catch (error) {
    throw listenError(host, port, error, what);
  }
  await new Promise((resolve) => server.close(resolve));
}

function open(config: Config, logger: Logger, observer: StoreObserver | undefined, startup: Pick<OpenOptions, 'onWaiting' | 'signal'>): Promise<Store> {
  return openStore(config.database, {
    logger,
    poolSize: config.databasePoolSize,
    startupTimeoutMs: config.databaseStartupTimeoutMs,
    listCachePlants: config.listCachePlants,
    server: true,
    observer,
    ...startup,
  });
}

/** What a shutdown has to stop, as far as start-up got. */
interface Target {
  app: FastifyInstance | undefined;
  store: Store | undefined;
}

/**
 * The webhook worker of the app (src/webhooks/service.ts), on `store`: the open store, or the start-up
 * gate's handle, whose methods are the open store's by the time the worker starts.
 */
function webhooksFor(config: Config, store: Store, logger: Logger, metrics: Metrics | undefined): WebhookService {
  return webhookService(store, {
    webhookTimeoutMs: config.webhookTimeoutMs,
    webhookRetryScheduleMs: config.webhookRetryScheduleMs,
    webhookRetentionMs: config.webhookRetentionMs,
    webhookConcurrency: config.webhookConcurrency,
    webhookEndpointConcurrency: config.webhookEndpointConcurrency,
    webhookAllowPrivate: config.webhookAllowPrivate,
    userAgent: `plantstore/${packageVersion()}`,
    observer: metrics?.deliveryObserver,
  }, logger);
}

/**
 * Stops the process on SIGTERM/SIGINT/SIGHUP in every state: `app.close()` drains (http/plugins/shutdown.ts, bounded
 * by DRAIN_TIMEOUT), then the store closes and the process exits 0. A second signal, or a store that will
 * not close, ends the process at once with exit code 1; nothing acknowledged is lost either way, since an
 * answer is only sent after its commit. An uncaught error drains the same way and exits 1.
 *
 * Installed before the store opens, when there may be no app yet (SQLite opens first): `target.app` is
 * read when the signal comes. The process exits explicitly: a PostgreSQL start-up still waiting for the
 * database, for one, cannot be cancelled and would otherwise keep it alive.
 */
function stopOnSignals(
  log: Logger,
  target: Target,
  config: Config,
): { readonly stopping: boolean; uninstall(): void } {
  let stopping = false;
  const close = async (): Promise<void> => {
    // The app's close stops webhook delivery too (see serve).
    if (target.app) await target.app.close();
    else await target.store?.close();
  };
  const stop = (exitCode: number): void => {
    stopping = true;
    const giveUp = setTimeout(() => {
      log.error({ afterMs: config.drainTimeoutMs + CLOSE_STORE_GRACE_MS }, 'the store did not close in time; exiting');
      process.exit(1);
    }, config.drainTimeoutMs + CLOSE_STORE_GRACE_MS);
    // A signal is handled during the event loop's poll for I/O, maybe before a pending connection that
    // the same poll reported; setImmediate runs once the poll is done and that connection accepted.
    // Closing the listener first would reset it, with the request its client may already have sent.
    // (A connection the kernel completes later than that is reset like a refused one: see shutdown.ts.)
    setImmediate(() => {
      close().then(
        () => {
          clearTimeout(giveUp);
          process.exit(exitCode);
        },
        (err: unknown) => {
          log.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
    });
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      log.error({ signal }, 'second signal: exiting at once');
      process.exit(1);
    }
    log.info({ signal }, 'shutting down');
    stop(0);
  };
  const onFatal = (err: unknown): void => {
    log.fatal({ err }, stopping ? 'fatal error while shutting down; exiting at once' : 'fatal error, shutting down');
    if (stopping) process.exit(1);
    stop(1);
  };
  const uninstall = (): void => {
    for (const signal of STOP_SIGNALS) process.removeListener(signal, onSignal);
    process.removeListener('uncaughtException', onFatal);
    process.removeListener('unhandledRejection', onFatal);
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  process.on('uncaughtException', onFatal);
  process.on('unhandledRejection', onFatal);
  return {
    get stopping() {
      return stopping;
    },
    uninstall,
  };
}

/**
 * Opens the store and listens, then serves until a signal (see stopOnSignals). Nothing says "listening"
 * before the server can serve, and a start-up that fails on something to fix fails before it listens:
 *
 * - The addresses are checked first when the SQLite store is still to be created (checkAddress): a
 *   port in use creates no store.
 * - The store opens next. SQLite opens in milliseconds; a locked, corrupt or impossible store ends
 *   start-up. PostgreSQL's first connection says at once whether the configuration is wrong (a login,
 *   a database, TLS refused: start-up ends) or the database merely not there yet: it may take a while to
 *   accept connections (a database starting next to this server), so the server then listens while it
 *   waits: /healthz answers 200 and everything else 503 50301 until the store is open, and an
 *   orchestrator sees a live process that is not ready yet.
 *
 * A failure to listen or to open the store rejects with a StartupError naming the port or the store;
 * everything opened so far is closed, so that the process can exit 1. `logger` is the process's
 * (src/logger.ts), made by the CLI, which also logs a failed start-up with it.
 */
export async function serve(config: Config, logger: Logger): Promise<FastifyInstance | undefined> {
  const target: Target = { app: undefined, store: undefined };
  // METRICS_PORT unset: no registry, no hooks, no wrappers, no observers (docs/logs-and-metrics.md).
  const metrics = config.metricsPort === null ? undefined : new Metrics({ backend: config.database.kind, version: packageVersion() });
  let metricsListener: MetricsListener | undefined;
  /** What the app and its webhook worker use: the store, its operations timed when metrics are on. */
  const measured = (opened: Store): Store => (metrics ? metrics.measure(opened) : opened);
  const signals = stopOnSignals(logger, target, config);
  /** Stops a PostgreSQL start-up still waiting for the database when start-up fails elsewhere. */
  const abandon = new AbortController();
  let opening: Promise<Store | undefined> | undefined;
  try {
    // Only where opening would create the store: otherwise a locked store's message (another server
    // is serving it) says more than the port in use that such a server also holds.
    if (config.database.kind === 'sqlite' && !existsSync(config.database.path)) {
      await checkAddress(config.host, config.port);
      if (config.metricsPort !== null) await checkAddress(config.metricsHost, config.metricsPort, ' for metrics');
    }
    let waiting = (): void => undefined;
    const waits = new Promise<'waiting'>((resolve) => (waiting = () => resolve('waiting')));
    /** Undefined when a signal came while the store opened: the shutdown it started ends the process. */
    opening = (async () => {
      let opened: Store;
      try {
        opened = await open(config, logger, metrics?.storeObserver, { onWaiting: waiting, signal: abandon.signal });
      } catch (error) {
        throw storeError(config.database, error);
      }
      if (signals.stopping) {
        await opened.close();
        return undefined;
      }
      return opened;
    })();
    const first = await Promise.race([opening, waits]);
    if (first === undefined) return undefined;
    // Open already: the app is built on the store, so its requests pass no readiness gate.
    let store: Store | LateStore;
    if (first === 'waiting') {
      store = new LateStore();
    } else {
      target.store = first;
      metrics?.storeOpened(first);
      store = measured(first);
    }
    const backing = store instanceof LateStore ? store.handle : store;
    const webhooks = webhooksFor(config, backing, logger, metrics);
    /** Settles when webhook delivery has stopped; the store closes after it. */
    let webhooksStopped = Promise.resolve();
    // buildApp's two steps, with a hook between them.
    const options: AppOptions = { ...config, store, logger, onWebhookDeleted: webhooks.endpointDeleted, feedObserver: metrics?.feedObserver };
    const app = createApp(options);
    // Webhook delivery stops claiming as the drain begins and winds down during it, not after it: both end
    // by the drain deadline. preClose hooks run one after the other, each once the one before is done, so
    // this one is added before the plugin's drain; it only starts the stop. Whoever closes the app (a
    // signal, a failed start-up, an embedder), delivery stops once, here.
    app.addHook('preClose', (done) => {
      webhooksStopped = webhooks.stop(Date.now() + config.drainTimeoutMs);
      done();
    });
    await app.register(plantstore, options);
    if (metrics) await app.register(httpMetrics, { metrics });
    // Added first, so it runs last: after the drain and the store's close, the listener goes too.
    if (metrics) {
      app.addHook('onClose', async () => {
        await metricsListener?.close();
      });
    }
    app.addHook('onClose', () => backing.close());
    // onClose hooks run last-added first: this one, before the store closes.
    app.addHook('onClose', () => webhooksStopped);
    target.app = app;
    try {
      await app.listen({ port: config.port, host: config.host });
    } catch (error) {
      throw listenError(config.host, config.port, error);
    }
    if (metrics && config.metricsPort !== null) {
      try {
        metricsListener = await listenMetrics(metrics, config.metricsHost, config.metricsPort);
      } catch (error) {
        throw listenError(config.metricsHost, config.metricsPort, error, ' for metrics');
      }
      app.log.info({ metrics: metricsListener.url }, 'serving metrics');
    }
    if (store instanceof LateStore) {
      app.log.info({ store: describeStore(config.database, 'place') }, 'opening the store; requests are answered 503 until it is open');
      const late = await opening;
      if (!late) return app;
      metrics?.storeOpened(late);
      store.open(measured(late));
    }
    // Once the store is open and the server listens, so that a start-up that fails has nothing to stop.
    webhooks.start();
    // Which of the two better-sqlite3 majors runs (store/sqlite/driver.ts says why there are two).
    const driver = config.database.kind === 'sqlite' ? { driver: `better-sqlite3 ${sqliteDriver.version}` } : {};
    if (config.database.kind === 'sqlite' && sqliteDriver.warning) app.log.warn(sqliteDriver.warning);
    app.log.info({ store: backing.backend, ...driver, at: describeStore(config.database, 'place') }, 'plantstore ready');
    return app;
  } catch (error) {
    if (signals.stopping) return target.app;
    signals.uninstall();
    // A store still opening (PostgreSQL waiting for the database) stops waiting; one that opened anyway is closed.
    abandon.abort();
    const late = await opening?.catch(() => undefined);
    if (target.app) await target.app.close();
    else await target.store?.close();
    if (late !== undefined && late !== target.store) await late.close();
    throw error;
  }
}
