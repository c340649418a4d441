import { loadMigrations, migrationName } from './migrations.js';

// The statements `plantstore doctor` reads a store with (store/inspect.ts), shared by the backends.

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
export function migrationState(backend: 'sqlite' | 'postgres', applied: readonly number[]): {
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
