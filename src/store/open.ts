import type { StoreLocation } from '../domain/database-url.js';
import type { Logger } from 'pino';
import { cacheLists } from './wrappers/list-cache.js';
import type { MigrationsApplied } from './sql/migrations.js';
import type { Store, StoreObserver } from './store.js';
import type { TransferableStore } from './transfer.js';

export interface OpenOptions {
  readonly logger: Logger;
  readonly poolSize: number;
  readonly startupTimeoutMs: number;
  /** How long one operation may wait on the store (a lock, a slow query) before it fails with 503. */
  readonly queryTimeoutMs?: number;
  /**
   * Plants kept in the list cache (store/wrappers/list-cache.ts); 0 turns it off. Applied only where this handle
   * is the only writer of plants, which the cache's invalidation needs: a server on SQLite.
   */
  readonly listCachePlants?: number;
  /** Opened by a server: on SQLite it then takes the one-server-per-store lock, so its lists may be cached. */
  readonly server?: boolean;
  /** SQLite, a server: how often it checks that its file is still the one at its path; tests shorten it. */
  readonly watchIntervalMs?: number | undefined;
  /** Metrics (src/metrics/): group commits, the list cache, the pool. None: the store does no work for them. */
  readonly observer?: StoreObserver | undefined;
  /** Told which migrations the open applied. */
  readonly onMigrated?: MigrationsApplied | undefined;
  /** PostgreSQL: called when the first connection failed in a way that waiting may mend (see postgres/startup.ts). */
  readonly onWaiting?: (() => void) | undefined;
  /** PostgreSQL: gives up waiting for the database; the open rejects. */
  readonly signal?: AbortSignal | undefined;
  /** SQLite: log that the store was created (default); the CLI says so itself. */
  readonly logCreation?: boolean;
  /**
   * PostgreSQL: a database holding no store yet (no migration was ever applied to it) is not made one: the
   * open rejects with a NoStoreError. A SQLite file's absence its caller sees for itself.
   */
  readonly mustExist?: boolean;
}

/**
 * The one place a backend is chosen (used by server.ts, the CLI (cli/store.ts, cli/data.ts) and the test helper), and the one place
 * that decides whether its lists are cached. PostgreSQL's are not: other instances write to it too, and
 * this one would not see their writes (docs/design.md, "The page cache"). The backend's module is loaded
 * here, once chosen: a process loads the driver of the store it uses, not both.
 */
export async function openStore(location: StoreLocation, options: OpenOptions): Promise<Store> {
  switch (location.kind) {
    case 'sqlite': {
      const server = options.server ?? false;
      const { openSqliteStore } = await import('./sqlite/index.js');
      const store = await openSqliteStore(location.path, {
        ...(options.queryTimeoutMs === undefined ? {} : { busyTimeoutMs: options.queryTimeoutMs }),
        server,
        logger: options.logger,
        observer: options.observer,
        onMigrated: options.onMigrated,
        ...(options.logCreation === undefined ? {} : { logCreation: options.logCreation }),
        watchIntervalMs: options.watchIntervalMs,
      });
      return server ? cacheLists(store, options.listCachePlants ?? 0, options.observer) : store;
    }
    case 'postgres': {
      const { openPostgresStore } = await import('./postgres/index.js');
      return openPostgresStore({ url: location.url, ...options });
    }
  }
}

/**
 * A store for `plantstore export` and `import` (src/transfer/), never behind the list cache. An import
 * into SQLite holds the server lock, as a server does: the plants it writes would go stale in a running
 * server's list cache, which relies on being their only writer (docs/design.md, "The page cache").
 */
export async function openTransferStore(location: StoreLocation, options: OpenOptions & { readonly importing: boolean }): Promise<TransferableStore> {
  switch (location.kind) {
    case 'sqlite': {
      const { openSqliteStore } = await import('./sqlite/index.js');
      return openSqliteStore(location.path, {
        ...(options.queryTimeoutMs === undefined ? {} : { busyTimeoutMs: options.queryTimeoutMs }),
        server: options.importing,
        logger: options.logger,
        onMigrated: options.onMigrated,
        ...(options.logCreation === undefined ? {} : { logCreation: options.logCreation }),
      });
    }
    case 'postgres': {
      const { openPostgresStore } = await import('./postgres/index.js');
      return openPostgresStore({ url: location.url, ...options });
    }
  }
}
