import type { DialectName } from './dialect.js';
import { loadMigrations, migrationName } from './migrations.js';

// What `plantstore doctor` reads of a store (store/inspect.ts): the answer's types and the statements,
// shared by the backends.

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
  readonly backend: DialectName;
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


export const INSPECT = {
  migrations: 'SELECT version FROM schema_migrations ORDER BY version',
  // Counted whole, once: doctor runs by hand, not at every scrape as the metrics' capped count does.
  webhookCounts: `SELECT
    (SELECT count(*) FROM webhook_deliveries WHERE state = 'pending') AS pending,
    (SELECT min(created_at) FROM webhook_deliveries WHERE state = 'pending') AS oldest,
    (SELECT count(*) FROM webhook_deliveries WHERE state = 'failed') AS failed`,
  disabledEndpoints: 'SELECT id, disabled_at, disabled_reason FROM webhook_endpoints WHERE disabled_at IS NOT NULL ORDER BY created_at, id',
} as const;

/** The migrations pending and unknown, from the versions a store has applied. */
export function migrationState(backend: DialectName, applied: readonly number[]): {
  schemaVersion: number | null; pendingMigrations: string[]; unknownMigrations: number[];
} {
  const known = loadMigrations(backend);
  const versions = new Set(applied);
  return {
    schemaVersion: applied.length === 0 ? null : Math.max(...applied),
    pendingMigrations: known.filter((m) => !versions.has(m.version)).map(migrationName),
    unknownMigrations: applied.filter((v) => !known.some((m) => m.version === v)),
  };
}

/** The migration that made the webhook tables: before it, there is nothing to count. */
export const WEBHOOKS_MIGRATION = 4;
