import closeWithGrace from 'close-with-grace';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { createLogger } from './logger.js';
import { DeferredStore } from './store/deferred.js';
import { openStore } from './store/open.js';

/** After the drain deadline the store still has to close; past this too, the process exits 1. */
const CLOSE_STORE_GRACE_MS = 5000;

/**
 * Listens at once (while the store opens, /healthz is 200 and everything else 503 50301), opens the
 * store, and serves until SIGTERM/SIGINT. Then: stop accepting connections, let in-flight requests
 * finish for up to DRAIN_TIMEOUT, close the connections still open, close the store, exit 0. A second
 * signal, or a store that will not close, ends the process at once with exit code 1; nothing
 * acknowledged is lost either way, since an answer is only sent after its commit.
 */
export async function serve(config: Config): Promise<FastifyInstance> {
  const logger = createLogger(config.logLevel);
  const store = new DeferredStore();
  const app = await buildApp({ ...config, store, logger });
  app.addHook('onClose', () => store.close());

  const grace = closeWithGrace({ delay: config.drainTimeoutMs + CLOSE_STORE_GRACE_MS, logger: app.log }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'fatal error, shutting down');
    else app.log.info({ signal }, 'shutting down');
    const deadline = setTimeout(() => {
      app.log.warn({ drainTimeoutMs: config.drainTimeoutMs }, 'requests still in flight at the drain deadline; closing their connections');
      app.server.closeAllConnections();
    }, config.drainTimeoutMs);
    await app.close();
    clearTimeout(deadline);
  });

  await app.listen({ port: config.port, host: config.host });
  try {
    store.open(
      await openStore(config.database, {
        logger,
        poolSize: config.databasePoolSize,
        startupTimeoutMs: config.databaseStartupTimeoutMs,
        listCachePlants: config.listCachePlants,
        server: true,
      }),
    );
  } catch (error) {
    // Not started: the caller reports the error and exits 1 (close-with-grace would exit 0 on its own).
    grace.uninstall();
    await app.close();
    throw error;
  }
  app.log.info({ store: store.backend }, 'plantstore ready');
  return app;
}
