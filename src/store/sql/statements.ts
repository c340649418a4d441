import type { Plant } from '../../domain/plant.js';
import type { ClaimedDelivery } from '../../domain/webhook.js';
import { isScope, type Scope } from '../../domain/principal.js';
import { loadMigrations, type Migration } from './migrations.js';
import type { ListQuery, NewTokenRecord, PlantPage, TokenRecord, WebhookBacklog } from '../store.js';

/**
 * What the SQL backends share, written once (as platformatic sql-mapper's shared.js is, with each
 * dialect overriding only what differs): the statements, the list query's choice, limit+1 paging, row
 * mapping and the migration bookkeeping. A backend keeps its driver, its placeholders and value codecs
 * (this `Dialect`), batching, transactions and error codes.
 */
export interface Dialect {
  readonly backend: 'sqlite' | 'postgres';
  /** The placeholder of the `i`-th value, from 1: `?` or `$i`. */
  param(i: number): string;
  /** The column type of a point in time (schema_migrations.applied_at). */
  readonly timeType: string;
  /** A point in time, a token's scopes and a flag as the backend stores them, and back. */
  time(date: Date): unknown;
  dateOf(stored: unknown): Date;
  scopes(scopes: readonly Scope[]): unknown;
  scopesOf(stored: unknown): readonly string[];
  flag(value: boolean): unknown;
  flagOf(stored: unknown): boolean;
  /**
   * What an INSERT says, before VALUES or SELECT, to give an identity column a value of its own (an
   * import keeping a token's id): PostgreSQL's OVERRIDING SYSTEM VALUE; nothing in SQLite.
   */
  readonly explicitIdentity: string;
}

/** The four shapes of a list query, each with its own index (see the migrations). */
export type ListShape = 'all' | 'allTag' | 'owner' | 'ownerTag';

/** The statements both backends run; `name` is PostgreSQL's prepared-statement name. */
export interface Statements {
  readonly list: Readonly<Record<ListShape, { readonly name: string; readonly text: string }>>;
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

function listText(p: (i: number) => string, owner: boolean, tag: boolean): string {
  const where: string[] = [];
  if (owner) where.push(`owner = ${p(where.length + 1)}`);
  if (tag) where.push(`tag = ${p(where.length + 1)}`);
  where.push(`seq > ${p(where.length + 1)}`);
  return `SELECT seq, name, tag FROM plants WHERE ${where.join(' AND ')} ORDER BY seq LIMIT ${p(where.length + 1)}`;
}

/** Built once per store, so each backend prepares each statement once. */
export function statements({ param: p, timeType }: Dialect): Statements {
  return {
    list: {
      all: { name: 'list_all', text: listText(p, false, false) },
      allTag: { name: 'list_all_tag', text: listText(p, false, true) },
      owner: { name: 'list_owner', text: listText(p, true, false) },
      ownerTag: { name: 'list_owner_tag', text: listText(p, true, true) },
    },
    deletePlant: `DELETE FROM plants WHERE owner = ${p(1)} AND id = ${p(2)}`,
    insertToken: `INSERT INTO tokens (hash, username, scopes, admin, name, created_at, expires_at)
      VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)}) RETURNING *`,
    tokenByHash: `SELECT * FROM tokens WHERE hash = ${p(1)}`,
    tokens: 'SELECT * FROM tokens ORDER BY id',
    userTokens: `SELECT * FROM tokens WHERE username = ${p(1)} ORDER BY id`,
    revokeToken: `UPDATE tokens SET revoked_at = ${p(1)} WHERE id = ${p(2)} AND revoked_at IS NULL`,
    // One statement: the owner check and the revocation cannot be split by another writer.
    revokeUserToken: `UPDATE tokens SET revoked_at = ${p(1)} WHERE id = ${p(2)} AND username = ${p(3)} AND revoked_at IS NULL`,
    createMigrations: `CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at ${timeType} NOT NULL)`,
    appliedMigrations: 'SELECT version FROM schema_migrations',
    recordMigration: `INSERT INTO schema_migrations (version, name, applied_at) VALUES (${p(1)}, ${p(2)}, ${p(3)})`,
    // For metrics, at scrape time (README: Metrics). The pending events are read from the covering
    // partial index webhook_deliveries_due, at most `cap` of them (measured with 100,000 pending: about
    // 1-6 ms on SQLite, 20-50 ms on PostgreSQL, on a loaded 2-core machine); no index of its own, which
    // every queued event would pay for. seq follows queueing order, so the smallest seq is the oldest.
    webhookBacklog: `SELECT s.n AS pending, (SELECT created_at FROM webhook_deliveries WHERE seq = s.m) AS oldest
      FROM (SELECT count(*) AS n, min(seq) AS m FROM (
        SELECT seq FROM webhook_deliveries WHERE state = 'pending' LIMIT ${p(1)}) AS p) AS s`,
  };
}

/**
 * Which statement lists `query`, and its values: the owner and tag when filtered, the position, and
 * one more plant than the page holds, which tells whether another page follows.
 */
export function listCall({ owner, tag, after = 0, limit }: ListQuery): [ListShape, unknown[]] {
  return owner === null
    ? tag === undefined ? ['all', [after, limit + 1]] : ['allTag', [tag, after, limit + 1]]
    : tag === undefined ? ['owner', [owner, after, limit + 1]] : ['ownerTag', [owner, tag, after, limit + 1]];
}

export interface PlantRow {
  /** A number from SQLite, a string from PostgreSQL (bigint). */
  readonly seq: number | string;
  readonly name: string;
  readonly tag: string | null;
}

/**
 * A page as a store reads it: its plants as JSON text, made by the database (SQLite's json_quote,
 * PostgreSQL's to_json: each escapes as JSON.stringify does), which the list route sends as it is.
 * `plants` (for callers of the store itself: tests, tools; nothing on the request path) is parsed from
 * the text whenever asked and not kept, so a cached page holds its text only, which is what the page
 * cache counts.
 */
export class JsonPage implements PlantPage {
  constructor(
    readonly json: string,
    readonly size: number,
    readonly next: number | null,
  ) {}

  get plants(): readonly Plant[] {
    return JSON.parse(this.json) as Plant[];
  }
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

/** A claimed event as both backends read it: seq a number, plant_id as text (exact past 2^53). */
export interface ClaimRow {
  readonly seq: number | string;
  readonly event_id: string;
  readonly endpoint_id: string;
  readonly username: string;
  readonly url: string;
  readonly secret: string;
  readonly plant_id: string;
  readonly body: string;
}

export function claimedOf(row: ClaimRow, attempt: number): ClaimedDelivery {
  return {
    seq: Number(row.seq),
    eventId: row.event_id,
    endpointId: row.endpoint_id,
    user: row.username,
    url: row.url,
    secret: row.secret,
    plantId: BigInt(row.plant_id),
    body: row.body,
    attempt,
  };
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
