import type { Logger } from 'pino';
import type { DatabaseConfig } from '../config.js';
import { openPostgresStore } from './postgres.js';
import { openSqliteStore } from './sqlite.js';
import type { Store } from './store.js';

export interface OpenOptions {
  readonly logger: Logger;
  readonly poolSize: number;
  readonly startupTimeoutMs: number;
  /** How long one operation may wait on the store (a lock, a slow query) before it fails with 503. */
  readonly queryTimeoutMs?: number;
  /** SQLite: plants kept in the page cache; 0 turns it off. PostgreSQL has none (see README). */
  readonly listCachePlants?: number;
  /** Opened by a server: SQLite then takes the one-server-per-store lock (and may cache pages). */
  readonly server?: boolean;
}

/** The one place a backend is chosen (used by server.ts, cli.ts and the test helper). */
export async function openStore(database: DatabaseConfig, options: OpenOptions): Promise<Store> {
  switch (database.kind) {
    case 'sqlite':
      return openSqliteStore(database.path, {
        ...(options.queryTimeoutMs === undefined ? {} : { busyTimeoutMs: options.queryTimeoutMs }),
        cachePlants: options.listCachePlants ?? 0,
        server: options.server ?? false,
        logger: options.logger,
      });
    case 'postgres':
      return openPostgresStore({ url: database.url, ...options });
  }
}
