import type { StoreLocation } from '../domain/database-url.js';
import type { StoreInspection } from './sql/inspect.js';

export type { DisabledEndpoint, StoreInspection, WebhookHealth } from './sql/inspect.js';

// What `plantstore doctor` asks of a store, read without changing anything: not through openStore,
// which creates a missing store and applies pending migrations. Like openStore, it loads only the
// backend it reads.

export interface InspectOptions {
  /** PostgreSQL: how long to wait for a connection before the database counts as unreachable. */
  readonly connectTimeoutMs: number;
}

/**
 * Reads the store's state. A SQLite file that is not there is reported (`exists: false`), not created;
 * nothing is written, and no file is created beside the store (sqlite/inspect.ts). Rejects when the
 * store cannot be read: PostgreSQL unreachable, a file that is not a store.
 */
export async function inspectStore(location: StoreLocation, options: InspectOptions): Promise<StoreInspection> {
  switch (location.kind) {
    case 'sqlite':
      return (await import('./sqlite/inspect.js')).inspectSqlite(location.path);
    case 'postgres':
      return (await import('./postgres/inspect.js')).inspectPostgres(location.url, options.connectTimeoutMs);
  }
}
