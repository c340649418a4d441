import { isScope } from '../../domain/principal.js';
import { join, param, raw, render, sql, type Dialect, type Sql } from './dialect.js';
import { loadMigrations, type Migration } from './migrations.js';
import type { NewTokenRecord, TokenRecord, WebhookBacklog } from '../store.js';

/**
 * What the SQL backends share, written once (as platformatic sql-mapper's shared.js is, with each
 * dialect overriding only what differs): the statements, row mapping and the migration bookkeeping
 * (the list query is in lists.ts, the webhook rows in webhooks.ts, the wire objects' SQL in wire.ts). A
 * backend keeps its driver, batching, transactions and error codes; what differs in the SQL is its
 * Dialect's (dialect.ts).
 */

/** The statements both backends run. */
export interface Statements {
  readonly deletePlant: string;
  readonly insertToken: string;
  readonly tokenByHash: string;
  readonly tokens: string;
  readonly userTokens: string;
  readonly revokeToken: string;
  readonly revokeUserToken: string;
  readonly createMigrations: string;
  readonly appliedMigrations: string;
  readonly recordMigration: string;
  readonly webhookBacklog: string;
}

/** The placeholders of `names`, in order, comma-separated. */
const values = (...names: string[]): Sql => join(names.map((name) => param(name)), ', ');

/**
 * Built once per store, so each backend prepares each statement once. Each takes its values in the order
 * it names them (no name is used twice), which is the order its callers give them in.
 */
export function statements(d: Dialect): Statements {
  const text = (statement: Sql): string => render(d, statement).text;
  const owner = param('owner');
  const id = param('id');
  const user = param('user');
  const hash = param('hash');
  const revokedAt = param('revokedAt');
  const cap = param('cap');
  return {
    deletePlant: text(sql`DELETE FROM plants WHERE owner = ${owner} AND id = ${id}`),
    insertToken: text(sql`INSERT INTO tokens (hash, username, scopes, admin, name, created_at, expires_at)
      VALUES (${values('hash', 'user', 'scopes', 'admin', 'name', 'createdAt', 'expiresAt')}) RETURNING *`),
    tokenByHash: text(sql`SELECT * FROM tokens WHERE hash = ${hash}`),
    tokens: 'SELECT * FROM tokens ORDER BY id',
    userTokens: text(sql`SELECT * FROM tokens WHERE username = ${user} ORDER BY id`),
    revokeToken: text(sql`UPDATE tokens SET revoked_at = ${revokedAt} WHERE id = ${id} AND revoked_at IS NULL`),
    // One statement: the owner check and the revocation cannot be split by another writer.
    revokeUserToken: text(sql`UPDATE tokens SET revoked_at = ${revokedAt} WHERE id = ${id} AND username = ${user} AND revoked_at IS NULL`),
    createMigrations: text(sql`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at ${raw(d.timeType)} NOT NULL)`),
    appliedMigrations: 'SELECT version FROM schema_migrations',
    recordMigration: text(sql`INSERT INTO schema_migrations (version, name, applied_at) VALUES (${values('version', 'name', 'appliedAt')})`),
    // For metrics, at scrape time (docs/logs-and-metrics.md). The pending events are read from the covering
    // partial index webhook_deliveries_due, at most `cap` of them, so a scrape stays quick whatever the
    // backlog; no index of its own, which every queued event would pay for. seq follows queueing order,
    // so the smallest seq is the oldest.
    webhookBacklog: text(sql`SELECT s.n AS pending, (SELECT created_at FROM webhook_deliveries WHERE seq = s.m) AS oldest
      FROM (SELECT count(*) AS n, min(seq) AS m FROM (
        SELECT seq FROM webhook_deliveries WHERE state = 'pending' LIMIT ${cap}) AS p) AS s`),
  };
}

/** The values of `statements().insertToken`, in order. */
export function tokenValues(d: Dialect, t: NewTokenRecord, now: Date): unknown[] {
  return [t.hash, t.user, d.scopes(t.scopes), d.flag(t.admin), t.name, d.time(t.createdAt ?? now), t.expiresAt === null ? null : d.time(t.expiresAt)];
}

export interface TokenRow {
  readonly id: number | string;
  readonly username: string;
  readonly scopes: unknown;
  readonly admin: unknown;
  readonly name: string | null;
  readonly created_at: unknown;
  readonly expires_at: unknown;
  readonly revoked_at: unknown;
}

export function tokenOf(d: Dialect, row: TokenRow): TokenRecord {
  return {
    id: Number(row.id),
    user: row.username,
    scopes: d.scopesOf(row.scopes).filter(isScope),
    admin: d.flagOf(row.admin),
    name: row.name,
    createdAt: d.dateOf(row.created_at),
    expiresAt: row.expires_at === null ? null : d.dateOf(row.expires_at),
    revokedAt: row.revoked_at === null ? null : d.dateOf(row.revoked_at),
  };
}

/**
 * The migrations of this backend not yet applied, in order. The caller runs them in one transaction
 * that also holds whatever lock makes concurrent starts apply each once, after `createMigrations`, and
 * records each with `recordMigration` and `migrationValues`.
 */
export function pendingMigrations(d: Dialect, applied: Iterable<number | string>): Migration[] {
  const done = new Set([...applied].map(Number));
  return loadMigrations(d.backend).filter((m) => !done.has(m.version));
}

export function migrationValues(d: Dialect, m: Migration, now: Date): unknown[] {
  return [m.version, m.name, d.time(now)];
}

/** The row of `webhookBacklog`: count(*) is a bigint on PostgreSQL, which the driver gives as text. */
export interface BacklogRow {
  readonly pending: number | string;
  readonly oldest: unknown;
}

export function backlogOf(dialect: Dialect, row: BacklogRow | undefined, cap: number): WebhookBacklog {
  const pending = Number(row?.pending ?? 0);
  const oldest = row?.oldest === null || row?.oldest === undefined ? null : dialect.dateOf(row.oldest);
  return { pending, capped: pending >= cap, oldest };
}
