import { isScope } from '../../domain/principal.js';
import { describeEvent, differingFields, EVENT_FIELDS, type BatchTally } from '../transfer.js';
import { join, param, raw, render, sql, type Dialect, type Sql } from './dialect.js';
import type { TokenRow } from './statements.js';
import type {
  EndpointTransferRecord, EventTransferRecord, PlantRecord, Snapshot, TokenTransferRecord,
} from '../transfer.js';

/**
 * What both backends share of export and import (store/transfer.ts), as sql/statements.ts is for requests: the
 * statements, keyset paging over one snapshot, and row mapping. Each backend keeps its transactions
 * and how it writes plants in bulk (one statement of many rows on PostgreSQL, prepared rows on SQLite).
 */

/** Rows per page read from the snapshot, and so per batch handed to the writer. */
export const EXPORT_PAGE_ROWS = 1000;

export interface TransferStatements {
  readonly counts: string;
  readonly plantsPage: string;
  readonly tokensPage: string;
  readonly endpointsPage: string;
  readonly eventsPage: string;
  readonly insertTokenWithId: string;
  readonly insertTokenNewId: string;
  readonly tokenByHash: string;
  readonly endpointById: string;
  readonly insertEndpoint: string;
  readonly insertEvent: string;
}

const ENDPOINT_COLUMNS = 'id, username, all_users, url, description, secret, created_at, disabled_at, disabled_reason';
const TOKEN_COLUMNS = 'hash, username, scopes, admin, name, created_at, expires_at, revoked_at';

/**
 * `endpointOrder` is the backend's creation order of endpoints, as its listWebhooks sorts them (SQLite
 * rowid; PostgreSQL created_at, id): endpoints have no position column, so they are paged by offset
 * (a user has at most WEBHOOK_MAX_PER_USER of them, so there are few).
 */
export function transferStatements(d: Dialect, endpointOrder: string): TransferStatements {
  const text = (statement: Sql): string => render(d, statement).text;
  /** The placeholders of `names`, in order; each statement takes its values in the order it names them. */
  const values = (...names: string[]): Sql => join(names.map((name) => param(name)), ', ');
  const after = param('after');
  const limit = param('limit');
  const offset = param('offset');
  const hash = param('hash');
  const id = param('id');
  const tokenColumns = ['hash', 'username', 'scopes', 'admin', 'name', 'createdAt', 'expiresAt', 'revokedAt'];
  // A test event announces no plant and goes to one receiver that is being tried now: it is not data to
  // move, and the export format has no way to mark it, so an imported one would arrive as a plant's event.
  return {
    counts: `SELECT (SELECT count(*) FROM plants) AS plants, (SELECT count(*) FROM tokens) AS tokens,
      (SELECT count(*) FROM webhook_endpoints) AS webhooks,
      (SELECT count(*) FROM webhook_deliveries WHERE state = 'pending' AND NOT test) AS events`,
    // Ids as text: an int64 past 2^53 would lose digits as a JS number.
    plantsPage: text(sql`SELECT seq, owner, CAST(id AS TEXT) AS id, name, tag FROM plants
      WHERE seq > ${after} ORDER BY seq LIMIT ${limit}`),
    tokensPage: text(sql`SELECT id, ${raw(TOKEN_COLUMNS)} FROM tokens WHERE id > ${after} ORDER BY id LIMIT ${limit}`),
    endpointsPage: text(sql`SELECT ${raw(ENDPOINT_COLUMNS)} FROM webhook_endpoints ORDER BY ${raw(endpointOrder)}
      LIMIT ${limit} OFFSET ${offset}`),
    eventsPage: text(sql`SELECT seq, event_id, endpoint_id, CAST(plant_id AS TEXT) AS plant_id, body, attempts, next_attempt_at,
      leased_by, created_at FROM webhook_deliveries WHERE state = 'pending' AND NOT test AND seq > ${after} ORDER BY seq LIMIT ${limit}`),
    // No conflict target: a taken id and a stored hash both insert nothing (the caller looked the hash up first).
    insertTokenWithId: text(sql`INSERT INTO tokens (id, ${raw(TOKEN_COLUMNS)}) ${raw(d.explicitIdentity)} VALUES (${values('id', ...tokenColumns)})
      ON CONFLICT DO NOTHING RETURNING id`),
    insertTokenNewId: text(sql`INSERT INTO tokens (${raw(TOKEN_COLUMNS)}) VALUES (${values(...tokenColumns)}) RETURNING id`),
    tokenByHash: text(sql`SELECT id, ${raw(TOKEN_COLUMNS)} FROM tokens WHERE hash = ${hash}`),
    endpointById: text(sql`SELECT ${raw(ENDPOINT_COLUMNS)} FROM webhook_endpoints WHERE id = ${id}`),
    insertEndpoint: text(sql`INSERT INTO webhook_endpoints (${raw(ENDPOINT_COLUMNS)})
      VALUES (${values('id', 'username', 'allUsers', 'url', 'description', 'secret', 'createdAt', 'disabledAt', 'disabledReason')})
      ON CONFLICT (id) DO NOTHING`),
    insertEvent: text(sql`INSERT INTO webhook_deliveries (event_id, endpoint_id, plant_id, body, state, attempts, next_attempt_at, created_at)
      VALUES (${values('eventId', 'endpointId', 'plantId', 'body')}, 'pending', ${values('attempts', 'nextAttemptAt', 'createdAt')})`),
  };
}

export interface PlantExportRow {
  readonly seq: number | string;
  readonly owner: string;
  readonly id: string;
  readonly name: string;
  readonly tag: string | null;
}

export interface TokenExportRow extends TokenRow {
  readonly hash: string;
}

export interface EndpointExportRow {
  readonly id: string;
  readonly username: string;
  readonly all_users: unknown;
  readonly url: string;
  readonly description: string | null;
  readonly secret: string;
  readonly created_at: unknown;
  readonly disabled_at: unknown;
  readonly disabled_reason: string | null;
}

export interface EventExportRow {
  readonly seq: number | string;
  readonly event_id: string;
  readonly endpoint_id: string;
  readonly plant_id: string;
  readonly body: string;
  readonly attempts: number;
  readonly next_attempt_at: unknown;
  readonly leased_by: string | null;
  readonly created_at: unknown;
}

export const plantOfRow = (r: { owner: string; id: string; name: string; tag: string | null }): PlantRecord =>
  ({ owner: r.owner, id: BigInt(r.id), name: r.name, tag: r.tag });

const dateOrNull = (d: Dialect, stored: unknown) => (stored === null ? null : d.dateOf(stored));

export function tokenOfRow(d: Dialect, r: TokenExportRow): TokenTransferRecord {
  return {
    id: Number(r.id),
    hash: r.hash,
    user: r.username,
    scopes: d.scopesOf(r.scopes).filter(isScope),
    admin: d.flagOf(r.admin),
    name: r.name,
    createdAt: d.dateOf(r.created_at),
    expiresAt: dateOrNull(d, r.expires_at),
    revokedAt: dateOrNull(d, r.revoked_at),
  };
}

export function endpointOfRow(d: Dialect, r: EndpointExportRow): EndpointTransferRecord {
  return {
    id: r.id,
    user: r.username,
    allUsers: d.flagOf(r.all_users),
    url: r.url,
    description: r.description,
    secret: r.secret,
    createdAt: d.dateOf(r.created_at),
    disabledAt: dateOrNull(d, r.disabled_at),
    disabledReason: r.disabled_reason,
  };
}

/**
 * An event claimed when the snapshot was taken is exported as due at that moment, its attempt counted:
 * the attempt may have been made (as when a server releases a crashed instance's claims), and the
 * claim itself means nothing in another store.
 */
export function eventOfRow(d: Dialect, r: EventExportRow, takenAt: Date): EventTransferRecord {
  return {
    eventId: r.event_id,
    endpointId: r.endpoint_id,
    plantId: BigInt(r.plant_id),
    body: r.body,
    attempts: r.attempts,
    nextAttemptAt: r.leased_by !== null || r.next_attempt_at === null ? takenAt : d.dateOf(r.next_attempt_at),
    createdAt: d.dateOf(r.created_at),
  };
}

/** The values of insertTokenWithId, or (without the id) insertTokenNewId. */
export function tokenInsertValues(d: Dialect, t: TokenTransferRecord, withId: boolean): unknown[] {
  const time = (date: Date | null) => (date === null ? null : d.time(date));
  const values = [t.hash, t.user, d.scopes(t.scopes), d.flag(t.admin), t.name, d.time(t.createdAt), time(t.expiresAt), time(t.revokedAt)];
  return withId ? [t.id, ...values] : values;
}

export function endpointInsertValues(d: Dialect, e: EndpointTransferRecord): unknown[] {
  return [
    e.id, e.user, d.flag(e.allUsers), e.url, e.description, e.secret, d.time(e.createdAt),
    e.disabledAt === null ? null : d.time(e.disabledAt), e.disabledReason,
  ];
}

/** Int64 ids bind as bigint on both drivers (node-postgres sends their text). */
export function eventInsertValues(d: Dialect, e: EventTransferRecord): unknown[] {
  return [e.eventId, e.endpointId, e.plantId, e.body, e.attempts, d.time(e.nextAttemptAt), d.time(e.createdAt)];
}

/** Runs one statement of the snapshot's transaction and returns its rows. */
export type RowQuery = <R>(name: string, text: string, values: unknown[]) => Promise<R[]>;

async function* pages<R, T>(
  query: RowQuery, name: string, text: string, values: (page: number, last: R | undefined) => unknown[], map: (row: R) => T,
): AsyncIterable<T[]> {
  let last: R | undefined;
  for (let page = 0; ; page++) {
    const rows = await query<R>(name, text, values(page, last));
    if (rows.length > 0) yield rows.map(map);
    if (rows.length < EXPORT_PAGE_ROWS) return;
    last = rows[rows.length - 1];
  }
}

interface CountsRow {
  readonly plants: number | string;
  readonly tokens: number | string;
  readonly webhooks: number | string;
  readonly events: number | string;
}

/**
 * The snapshot over `query`, which must run inside the backend's snapshot transaction: the counts
 * first, then each kind by keyset (position, token id) or, for endpoints, offset.
 */
export async function snapshotOver(d: Dialect, S: TransferStatements, query: RowQuery): Promise<Snapshot> {
  const takenAt = new Date();
  const [c] = await query<CountsRow>('transfer_counts', S.counts, []);
  if (!c) throw new Error('the counts query returned no row');
  const n = EXPORT_PAGE_ROWS;
  // A test event announces no plant and goes to one receiver that is being tried now: it is not data to
  // move, and the export format has no way to mark it, so an imported one would arrive as a plant's event.
  return {
    counts: { plants: Number(c.plants), tokens: Number(c.tokens), webhooks: Number(c.webhooks), events: Number(c.events) },
    takenAt,
    plants: () => pages<PlantExportRow, PlantRecord>(query, 'transfer_plants', S.plantsPage, (_, last) => [last?.seq ?? 0, n], plantOfRow),
    tokens: () => pages<TokenExportRow, TokenTransferRecord>(
      query, 'transfer_tokens', S.tokensPage, (_, last) => [last?.id ?? 0, n], (r) => tokenOfRow(d, r),
    ),
    webhooks: () => pages<EndpointExportRow, EndpointTransferRecord>(
      query, 'transfer_endpoints', S.endpointsPage, (page) => [n, page * n], (r) => endpointOfRow(d, r),
    ),
    events: () => pages<EventExportRow, EventTransferRecord>(
      query, 'transfer_events', S.eventsPage, (_, last) => [last?.seq ?? 0, n], (r) => eventOfRow(d, r, takenAt),
    ),
  };
}

/** An event already stored with one of the batch's event ids, as both backends read it (plant_id as text). */
export interface StoredEventRow {
  readonly endpoint_id: string;
  readonly event_id: string;
  readonly plant_id: string;
  readonly body: string;
}

/**
 * Of a batch of events, those to insert, in order: an event whose key (endpoint, event id) is stored, or
 * came earlier in the batch, is counted in `tally` (unchanged, or a conflict) instead; each to insert is
 * counted imported. Every event's endpoint must be among `endpoints` (those in the store).
 */
export function eventsToInsert(
  batch: readonly EventTransferRecord[], endpoints: ReadonlySet<string>, rows: readonly StoredEventRow[], tally: BatchTally,
): EventTransferRecord[] {
  const stored = new Map<string, { plantId: bigint; body: string }>(
    rows.map((r) => [`${r.endpoint_id}\u0000${r.event_id}`, { plantId: BigInt(r.plant_id), body: r.body }]),
  );
  const fresh: EventTransferRecord[] = [];
  for (const e of batch) {
    if (!endpoints.has(e.endpointId)) throw new Error(`${describeEvent(e)}: no such webhook endpoint in the file or the store`);
    const key = `${e.endpointId}\u0000${e.eventId}`;
    const found = stored.get(key);
    if (found) {
      tally.found(describeEvent(e), differingFields(e, { ...e, ...found }, EVENT_FIELDS));
      continue;
    }
    fresh.push(e);
    stored.set(key, e);
    tally.imported++;
  }
  return fresh;
}
