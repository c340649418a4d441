import type { StoreLocation } from '../domain/database-url.js';
import { inspectPostgres } from './postgres/inspect.js';
import { inspectSqlite } from './sqlite/inspect.js';
import type { StoreInspection } from './sql/inspect.js';

export type { DisabledEndpoint, StoreInspection, WebhookHealth } from './sql/inspect.js';

// What `plantstore doctor` asks of a store, read without changing anything: not through openStore,
// which creates a missing store and applies pending migrations.

export interface InspectOptions {
  /** PostgreSQL: how long to wait for a connection before the database counts as unreachable. */
  readonly connectTimeoutMs: number;
}

/**
 * Reads the store's state. A SQLite file that is not there is reported (`exists: false`), not created;
 * nothing is written, and no file is created beside the store (sqlite/inspect.ts). Rejects when the
 * store cannot be read: PostgreSQL unreachable, a file that is not a store.
 */
export function inspectStore(location: StoreLocation, options: InspectOptions): Promise<StoreInspection> {
  switch (location.kind) {
    case 'sqlite':
      return inspectSqlite(location.path);
    case 'postgres':
      return inspectPostgres(location.url, options.connectTimeoutMs);
  }
}
