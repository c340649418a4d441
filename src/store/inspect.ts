import type { StoreLocation } from '../domain/database-url.js';
import { inspectPostgres } from './postgres/inspect.js';
import { inspectSqlite } from './sqlite/inspect.js';

// What `plantstore doctor` asks of a store, read without changing anything: not through openStore,
// which creates a missing store and applies pending migrations.

/** A webhook endpoint its receiver turned off (410 Gone). */
export interface DisabledEndpoint {
  readonly id: string;
  readonly disabledAt: Date;
  readonly reason: string | null;
}

export interface WebhookHealth {
  /** Events waiting for delivery, and when the oldest was queued (null: none). */
  readonly pending: number;
  readonly oldestPending: Date | null;
  /** Events given up after their last retry, still kept (WEBHOOK_RETENTION). */
  readonly failed: number;
  readonly disabledEndpoints: readonly DisabledEndpoint[];
}

export interface StoreInspection {
  readonly backend: 'sqlite' | 'postgres';
  /** Whether a store is there: the SQLite file, or a PostgreSQL database a migration was applied to. */
  readonly exists: boolean;
  /** PostgreSQL's server_version; null on SQLite. */
  readonly serverVersion: string | null;
  /** The highest migration applied; null when none was. */
  readonly schemaVersion: number | null;
  /** The migrations this plantstore has that the store lacks, by name ("008_webhook_event_owner"). */
  readonly pendingMigrations: readonly string[];
  /** Migrations the store has that this plantstore does not know: a newer plantstore migrated it. */
  readonly unknownMigrations: readonly number[];
  /** Null when the store has no webhook tables yet (or no store is there). */
  readonly webhooks: WebhookHealth | null;
}

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
