import closeWithGrace from 'close-with-grace';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { createLogger } from './logger.js';
import { openStore } from './store/open.js';

/** How long in-flight requests may take to finish after SIGTERM/SIGINT before the process gives up. */
export const SHUTDOWN_GRACE_MS = 10_000;

/**
 * Opens the store, serves until SIGTERM/SIGINT, then stops accepting, lets in-flight requests finish,
 * closes the store and exits 0 (1 if the grace period runs out or a second signal arrives).
 */
export async function serve(config: Config): Promise<FastifyInstance> {
  const logger = createLogger(config.logLevel);
  const store = await openStore(config.database, {
    logger,
    poolSize: config.databasePoolSize,
    startupTimeoutMs: config.databaseStartupTimeoutMs,
    listCachePlants: config.listCachePlants,
    server: true,
  });
  const app = await buildApp({ store, logger, accessLog: config.accessLog });
  // app.close() runs onClose hooks after in-flight requests are answered; the store closes last.
  app.addHook('onClose', () => store.close());

  closeWithGrace({ delay: SHUTDOWN_GRACE_MS, logger: app.log }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'fatal error, shutting down');
    else app.log.info({ signal }, 'shutting down');
    await app.close();
  });

  await app.listen({ port: config.port, host: config.host });
  app.log.info({ store: store.backend }, 'plantstore ready');
  return app;
}
