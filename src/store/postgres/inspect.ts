import pg from 'pg';
import { postgresPlace } from '../../domain/database-url.js';
import { INSPECT, migrationState, WEBHOOKS_MIGRATION, type StoreInspection, type WebhookHealth } from '../sql/inspect.js';
import { connectionString } from './startup.js';

/** Why a connection failed, as the operator can act on it; never the URL (it may hold a password). */
function reason(error: unknown): string {
  const e = error as { code?: string; message?: string };
  return e.code !== undefined && !/^E[A-Z]+$/.test(e.code) ? `${e.message} (SQLSTATE ${e.code})` : (e.message ?? String(error));
}

/**
 * One connection, one READ ONLY transaction: PostgreSQL itself refuses any write in it. No pool, no
 * waiting for the database to come up (a doctor says what is, now), no LISTEN.
 */
export async function inspectPostgres(url: string, connectTimeoutMs: number): Promise<StoreInspection> {
  const client = new pg.Client({
    connectionString: connectionString(url),
    connectionTimeoutMillis: connectTimeoutMs,
    query_timeout: connectTimeoutMs * 2,
    application_name: 'plantstore doctor',
  });
  // A connection lost later reports here; without a listener it would be an uncaught exception.
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => undefined);
    throw new Error(`PostgreSQL at ${postgresPlace(url)} does not accept connections: ${reason(error)}`, { cause: error });
  }
  try {
    await client.query('BEGIN READ ONLY');
    const version = (await client.query<{ server_version: string }>('SHOW server_version')).rows[0]?.server_version ?? null;
    const found = await client.query<{ migrations: boolean }>("SELECT to_regclass('schema_migrations') IS NOT NULL AS migrations");
    const exists = found.rows[0]?.migrations === true;
    const applied = exists ? (await client.query<{ version: number }>(INSPECT.migrations)).rows.map((r) => r.version) : [];
    const webhooks = applied.includes(WEBHOOKS_MIGRATION) ? await webhookHealth(client) : null;
    await client.query('COMMIT');
    return { backend: 'postgres', exists, serverVersion: version, ...migrationState('postgres', applied), webhooks };
  } catch (error) {
    throw new Error(`cannot read the store in PostgreSQL at ${postgresPlace(url)}: ${reason(error)}`, { cause: error });
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function webhookHealth(client: pg.Client): Promise<WebhookHealth> {
  const counts = (await client.query<{ pending: string; oldest: Date | null; failed: string }>(INSPECT.webhookCounts)).rows[0];
  const disabled = await client.query<{ id: string; disabled_at: Date; disabled_reason: string | null }>(INSPECT.disabledEndpoints);
  return {
    pending: Number(counts?.pending ?? 0),
    oldestPending: counts?.oldest ?? null,
    failed: Number(counts?.failed ?? 0),
    disabledEndpoints: disabled.rows.map((row) => ({ id: row.id, disabledAt: row.disabled_at, reason: row.disabled_reason })),
  };
}
