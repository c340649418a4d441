import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { plantOf, plantOfColumns, samePlant, type NewPlant } from '../../domain/plant.js';
import {
  backlogOf, claimedOf, JsonPage, listCall, migrationValues, pendingMigrations, statements, tokenOf, tokenValues,
  type BacklogRow, type ClaimRow, type Dialect, type ListShape, type PlantRow, type TokenRow,
} from '../sql/statements.js';
import type {
  AttemptResult, ClaimedDelivery, ClaimRequest, DeliveryAttempt, DeliveryState, NewWebhookEndpoint, WebhookEndpoint,
} from '../../domain/webhook.js';
import {
  StoreUnavailableError,
  type CreateOutcome, type ListQuery, type NewTokenRecord, type PlantPage, type RateCount, type Store, type StoreObserver,
  type TokenRecord, type WebhookBacklog,
} from '../store.js';
import { migrationName, type MigrationsApplied } from '../sql/migrations.js';
import { storeError } from './errors.js';
import { EventsNotice, notifyEventsSql } from './notify.js';
import { connectionString, waitForDatabase, type StartupOptions } from './startup.js';
import { PostgresTransfer } from './transfer.js';
import { listedAllUsers, receives, withdrawEvents } from '../sql/all-users.js';
import { POSTGRES_CLAIM } from '../sql/claim.js';
import type { StoreTransfer, TransferableStore } from '../transfer.js';
import { NoStoreError } from '../store.js';

export interface PostgresOptions extends StartupOptions {
  readonly poolSize: number;
  /** Bound on every query, enforced by the server (statement_timeout) and, a second later, by the client. */
  readonly queryTimeoutMs?: number;
  /** Bound on getting a connection, waiting for a free one in the pool included. */
  readonly connectTimeoutMs?: number;
  /** Metrics: told of every group commit, and reads the pool at scrape time (see StoreObserver). */
  readonly observer?: StoreObserver | undefined;
  readonly onMigrated?: MigrationsApplied | undefined;
  readonly mustExist?: boolean | undefined;
}

/** No request may hang on the database: a query gets 5 s, getting a connection 3 s, then 503. */
const QUERY_TIMEOUT_MS = 5000;
/**
 * The client gives a query this much longer than the server's statement_timeout, so that PostgreSQL
 * cancels a statement that waits (on a lock) before the client gives up on it. The other way round, the
 * client answers 503 and drops the connection while the statement still waits in the server, and an
 * INSERT (one statement, its own transaction) commits once the lock is released: a 503 for a plant that
 * was stored. The client's own timeout is left for a server or network that does not answer at all.
 */
const CLIENT_TIMEOUT_MARGIN_MS = 1000;
const CONNECT_TIMEOUT_MS = 3000;
const MIGRATION_TIMEOUT_MS = 10 * 60_000;
/** Serializes migrations of instances starting together (an arbitrary, fixed advisory lock key). */
const MIGRATION_LOCK_KEY = '7061626174726565';

/** PostgreSQL's spelling: `$i` placeholders; the driver maps times, arrays and booleans itself. */
export const POSTGRES: Dialect = {
  backend: 'postgres',
  param: (i) => `$${i}`,
  timeType: 'timestamptz',
  time: (date) => date,
  dateOf: (stored) => stored as Date,
  scopes: (scopes) => scopes,
  scopesOf: (stored) => stored as string[],
  flag: (value) => value,
  flagOf: (stored) => stored as boolean,
  explicitIdentity: 'OVERRIDING SYSTEM VALUE',
};
const SQL = statements(POSTGRES);

export async function openPostgresStore(options: PostgresOptions): Promise<TransferableStore> {
  const queryTimeout = options.queryTimeoutMs ?? QUERY_TIMEOUT_MS;
  const pool = new pg.Pool({
    connectionString: connectionString(options.url),
    max: options.poolSize,
    connectionTimeoutMillis: options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
    query_timeout: queryTimeout + CLIENT_TIMEOUT_MARGIN_MS,
    statement_timeout: queryTimeout,
    keepAlive: true,
    // Connections stay open once made (pg closes them after 10 s idle by default). A pool that has
    // shrunk meets the next burst with new connections to make, each a new PostgreSQL backend with
    // its statements to prepare again, while the burst's requests wait: after pauses of 12 s, a
    // list's p99 was 50-70 ms against 7-8 ms with the connections kept. A pool that holds its connections is also
    // what DATABASE_POOL_SIZE times the instances must fit in max_connections for anyway.
    idleTimeoutMillis: 0,
    application_name: 'plantstore',
  });
  // A pooled idle connection that dies (server restart, failover) must not crash the process; the pool
  // replaces it on the next query.
  pool.on('error', (err) => options.logger.warn({ err }, 'idle PostgreSQL connection lost'));
  try {
    await waitForDatabase(pool, options);
    if (options.mustExist && !(await holdsStore(pool))) throw new NoStoreError();
    const applied = await migrate(pool);
    options.onMigrated?.(applied);
  } catch (error) {
    await pool.end();
    throw error;
  }
  options.observer?.pool(() => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: options.poolSize }));
  const notice = new EventsNotice({ connectionString: connectionString(options.url), logger: options.logger });
  return new PostgresStore(pool, options.observer, notice);
}

/** Whether a migration was ever applied here: the migrations table exists on the search path. */
async function holdsStore(pool: pg.Pool): Promise<boolean> {
  const { rows } = await pool.query<{ found: boolean }>("SELECT to_regclass('schema_migrations') IS NOT NULL AS found");
  return rows[0]?.found === true;
}

async function migrate(pool: pg.Pool): Promise<string[]> {
  const client = await pool.connect();
  // pg honours a per-query query_timeout (lib/client.js); @types/pg does not declare it, hence the cast.
  const run = (text: string, values: unknown[] = []) =>
    client.query({ text, values, query_timeout: MIGRATION_TIMEOUT_MS } as pg.QueryConfig);
  try {
    await run('BEGIN');
    await run('SET LOCAL statement_timeout = 0');
    // Instances starting together queue here; each finds the migrations the first one applied.
    await run('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    await run(SQL.createMigrations);
    const pending = pendingMigrations(POSTGRES, (await run(SQL.appliedMigrations)).rows.map((r) => r.version as number));
    for (const m of pending) {
      await run(m.sql);
      await run(SQL.recordMigration, migrationValues(POSTGRES, m, new Date()));
    }
    await run('COMMIT');
    return pending.map(migrationName);
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

interface PendingCreate {
  readonly owner: string;
  readonly plant: NewPlant;
  resolve(outcome: CreateOutcome): void;
  reject(error: unknown): void;
}

/**
 * `webhookBody` of a stored row `ins`, in SQL: to_json escapes text exactly as JSON.stringify does for
 * every storable string (quotes, backslash, control characters as \b \f \n \r \t or \u00xx, the rest
 * as it is: U+2028, non-ASCII, emoji), and a bigint's text is its exact digits.
 */
const BODY_SQL = `'{"id":' || ins.id || ',"name":' || to_json(ins.name)::text || coalesce(',"tag":' || to_json(ins.tag)::text, '') || '}'`;

/** all_users as listed: while the endpoint receives every user's plants (see sql/all-users.ts). */
const ENDPOINT_COLUMNS = `id, username, ${listedAllUsers('postgres', 'webhook_endpoints', 'now()')}, url, description, created_at,
  disabled_at, disabled_reason`;

interface EndpointRow {
  id: string;
  username: string;
  all_users: boolean;
  url: string;
  description: string | null;
  created_at: Date;
  disabled_at: Date | null;
  disabled_reason: string | null;
}

function endpointOf(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    user: row.username,
    allUsers: row.all_users,
    url: row.url,
    description: row.description,
    createdAt: row.created_at,
    disabledAt: row.disabled_at,
    disabledReason: row.disabled_reason,
  };
}

/** What `disabled_reason` says of an endpoint whose receiver answered 410. */
const GONE_REASON = 'the receiver answered 410 Gone';

/** The event's state after an attempt with this outcome (as webhook_attempts.state records it). */
function stateAfter(outcome: AttemptResult['outcome']): DeliveryState {
  return outcome === 'delivered' ? 'delivered' : outcome === 'retry' ? 'pending' : 'failed';
}

/**
 * Group reads, as group commit does for creates: the lists asked for during one turn of the event loop
 * go to PostgreSQL as one statement per query shape, one round trip for all of them. On this 2-core
 * machine a round trip, not the rows, is what a list costs: waking a PostgreSQL backend and this
 * process again for each one (see README: Performance). Each distinct list is still its own index range
 * scan (see listBatchText; identical ones share one, see #flushLists), read by a statement that starts
 * after the request arrived: never staler than a statement of its own.
 *
 * Each plant comes as its JSON text, made by PostgreSQL, as the list route's schema serializes a Plant:
 * name, then tag only when present. to_json escapes text exactly as JSON.stringify (and
 * fast-json-stringify) do for every storable string (see BODY_SQL); json_build_object would not do (it
 * writes `"name" : …`, with spaces). The page is these texts joined: no
 * row objects and no serialization in this process. (Aggregating each page into one text in SQL,
 * string_agg … ORDER BY, was measured too: it cost PostgreSQL 1.6x the plain query in pgbench, 13-14k
 * instead of 19-25k per second on 10 clients; the text per plant costs it about 10% more, and
 * PostgreSQL is what instances share.)
 */
const PLANT_JSON_SQL = `'{"name":' || to_json(name)::text || coalesce(',"tag":' || to_json(tag)::text, '') || '}'`;

/**
 * Lists per statement at most (each has its own limit, 1-1000, + 1 rows). Each batch size is its own
 * prepared statement, so a connection prepares at most this many per query shape.
 */
const MAX_LIST_BATCH = 32;

/**
 * `n` lists of one shape in one statement: sql/statements.ts's list statement `n` times, each its own branch of a
 * UNION ALL with its own values, numbered from 1 in the first column. Not one LATERAL join over arrays
 * of values: PostgreSQL plans such a subquery once for all values, without the owner's frequency nor
 * the limit, and picked the primary key's order with a filter on the owner (a walk over every user's
 * plants for a small user); each branch here is planned with its values, as the single statement is.
 */
function listBatchText(shape: ListShape, n: number): string {
  const text = SQL.list[shape].text;
  const columns = 'SELECT seq, name, tag FROM ';
  if (!text.startsWith(columns)) throw new Error(`the ${shape} list statement no longer starts with "${columns}"`);
  const params = (text.match(/\$\d+/g) ?? []).length;
  const branch = `SELECT seq, ${PLANT_JSON_SQL} FROM ${text.slice(columns.length)}`;
  return Array.from({ length: n }, (_, i) =>
    `(SELECT ${i + 1}, seq, plant FROM (${branch.replace(/\$(\d+)/g, (_m, k: string) => `$${i * params + Number(k)}`)}) AS p${i + 1}(seq, plant))`,
  ).join(' UNION ALL ');
}

const listBatches = new Map<string, { readonly name: string; readonly text: string }>();

function listBatch(shape: ListShape, n: number): { readonly name: string; readonly text: string } {
  const name = `${SQL.list[shape].name}_x${n}`;
  let statement = listBatches.get(name);
  if (statement === undefined) listBatches.set(name, (statement = { name, text: listBatchText(shape, n) }));
  return statement;
}

/** A row of a batch (listBatchText), in array mode: which list (from 1), seq (bigint: text), the plant's JSON text. */
type ListBatchRow = [number, string, string];

interface PendingList {
  readonly query: ListQuery;
  resolve(page: PlantPage): void;
  reject(error: unknown): void;
}

/** One list to read in a batch, and every caller that asked for exactly it in the same turn (see #flushLists). */
interface BatchedList {
  readonly values: unknown[];
  readonly limit: number;
  readonly callers: PendingList[];
}

/** Whether seq `a` comes after seq `b`: both positive bigints as PostgreSQL writes them (no leading zeros). */
const after = (a: string, b: string): boolean => (a.length === b.length ? a > b : a.length > b.length);

/** The page of `limit` plants in `rows` (one list's rows, limit + 1 when more remain), in seq order. */
function pageOfRows(rows: ListBatchRow[], limit: number): PlantPage {
  // Each branch gives its rows in index order; a plan that did otherwise is put right here.
  for (let i = 1; i < rows.length; i++) {
    if (after((rows[i - 1] as ListBatchRow)[1], (rows[i] as ListBatchRow)[1])) {
      rows.sort((a, b) => (after(a[1], b[1]) ? 1 : -1));
      break;
    }
  }
  const count = Math.min(rows.length, limit);
  let json = '[';
  for (let i = 0; i < count; i++) json += i === 0 ? (rows[i] as ListBatchRow)[2] : `,${(rows[i] as ListBatchRow)[2]}`;
  return new JsonPage(`${json}]`, count, rows.length > limit ? Number((rows[limit - 1] as ListBatchRow)[1]) : null);
}

/** A statement on the connection of a transaction. */
type TxQuery = <R extends pg.QueryResultRow>(name: string, text: string, values: unknown[]) => Promise<pg.QueryResult<R>>;

/**
 * Statements on the webhook queue, sent unnamed: planned on each execution rather than prepared once per
 * connection. The queue can grow from nothing to tens of thousands of events in seconds (a burst of
 * creates), and a connection keeps the generic plan it prepared while the table was small until the
 * table is next analyzed: for recording attempts, "read every pending event, then match the batch", which
 * made recording 256 attempts take 0.5 to over 5 s against a backlog (past statement_timeout: the
 * events were sent again when their lease ended). Planned with the batch and the table as they are, they
 * look events up by key. Each runs once per batch or claim, so planning each time costs little.
 */
const PLANNED_EACH_TIME = new Set([
  'webhook_claim', 'webhook_record_lock', 'webhook_record_update', 'webhook_record_gone', 'webhook_record_attempts',
  'webhook_release', 'webhook_sweep', 'webhook_withdraw', 'webhook_withdraw_user', 'webhook_backlog',
]);
const statementName = (name: string) => (PLANNED_EACH_TIME.has(name) ? undefined : name);

/** Rows per INSERT: large enough to share one commit widely, small enough to keep a statement quick. */
const MAX_BATCH = 500;

class PostgresStore implements TransferableStore {
  readonly backend = 'postgres';
  readonly #pool: pg.Pool;
  #pending: PendingCreate[] = [];
  /** A create batch is in PostgreSQL now; a flush is due (setImmediate). */
  #committing = false;
  #flushDue = false;
  #lists: PendingList[] = [];
  #sweptAt = 0;
  #onEventsQueued: (() => void) | undefined;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #observer: StoreObserver | undefined;
  /** Other instances' new events (notify.ts). */
  readonly #notice: EventsNotice;

  constructor(pool: pg.Pool, observer: StoreObserver | undefined, notice: EventsNotice) {
    this.#pool = pool;
    this.#observer = observer;
    this.#notice = notice;
  }

  /**
   * One statement on a pooled connection, as `pool.query` runs it (same error handling and release),
   * except that getting the connection is told apart from running the statement: whatever stops the
   * pool from handing out a connection (refused, reset, timed out, or the server turning the start-up
   * down: 55000 connections not allowed, 3D000 no such database, 28xxx login refused, 53300 no slot,
   * 57P03 starting up) means the store is unavailable (503), never a fault of the request. Named
   * statements are parsed and planned once per connection, not once per request (but PLANNED_EACH_TIME).
   */
  #query<R extends pg.QueryResultRow>(name: string, text: string, values: unknown[], rowMode?: 'array'): Promise<pg.QueryResult<R>> {
    return new Promise((resolve, reject) => {
      this.#pool.connect((connectError, client, release) => {
        if (connectError || client === undefined) {
          reject(new StoreUnavailableError(connectError ?? new Error('the pool handed out no connection')));
          return;
        }
        let released = false;
        // Any error destroys the connection rather than returning it to the pool (pool.query does the
        // same): after a timeout or a lost socket its state is unknown.
        const fail = (error: Error) => {
          if (released) return;
          released = true;
          release(error);
          reject(storeError(error));
        };
        // A connection that breaks while we hold it reports on 'error'; without a listener that would
        // be an uncaught exception.
        client.once('error', fail);
        try {
          client.query<R>({ name: statementName(name), text, values, rowMode } as pg.QueryConfig, (error, result) => {
            client.removeListener('error', fail);
            if (error) fail(error);
            else if (!released) {
              released = true;
              release();
              resolve(result);
            }
          });
        } catch (error) {
          client.removeListener('error', fail);
          fail(error as Error);
        }
      });
    });
  }

  /**
   * Group commit, as in the SQLite store: creates go to PostgreSQL as one multi-row INSERT, one round
   * trip and one commit for all of them, and each caller is answered after that commit. One batch is in
   * flight at a time: the creates that arrive while it commits form the next, sent once it is answered
   * (the first create of an idle instance goes at the end of its event-loop turn). Sending each turn's
   * creates at once instead had several batches inserting into the same index pages and committing
   * side by side, which cost PostgreSQL much more CPU per create (measured with npm run bench).
   * A batch waiting on a lock (another transaction's uncommitted row with the same id) holds the next
   * back for that wait, at most the statement timeout.
   */
  createPlant(owner: string, plant: NewPlant): Promise<CreateOutcome> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ owner, plant, resolve, reject });
      this.#scheduleFlush();
    });
  }

  #scheduleFlush(): void {
    if (this.#flushDue || this.#committing || this.#pending.length === 0) return;
    this.#flushDue = true;
    setImmediate(this.#flush);
  }

  readonly #flush = (): void => {
    this.#flushDue = false;
    if (this.#committing || this.#pending.length === 0) return;
    const batch = this.#pending.splice(0, MAX_BATCH);
    this.#committing = true;
    const done = this.#insertBatch(batch).then(
      (outcomes) => {
        batch.forEach((c, j) => c.resolve(outcomes[j] as CreateOutcome));
        this.#observer?.committed(this.backend, batch.length);
      },
      (error) => batch.forEach((c) => c.reject(error)),
    ).finally(() => {
      this.#committing = false;
      this.#scheduleFlush();
    });
    this.#inFlight.add(done);
    void done.finally(() => this.#inFlight.delete(done));
  };

  async #insertBatch(batch: PendingCreate[]): Promise<CreateOutcome[]> {
    const key = (owner: string, id: string) => `${id}\u0000${owner}`;
    const owners = batch.map((c) => c.owner);
    const ids = batch.map((c) => c.plant.id.toString());
    // The outbox: the same statement queues one event per receiving endpoint for each row it stored (a
    // replay or a conflict stores none), with the stored row's body, so an event exists exactly when its
    // plant committed. Without endpoints the join finds nothing and the insert costs what it did before.
    const { rows: inserted } = await this.#query<{ owner: string; id: string; events: number }>(
      'plant_insert_batch',
      `WITH ins AS (
         INSERT INTO plants (owner, id, name, tag)
         SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[])
         ON CONFLICT (owner, id) DO NOTHING RETURNING owner, id, name, tag
       ), ev AS (
         INSERT INTO webhook_deliveries (event_id, endpoint_id, plant_id, owner, body, state, attempts, next_attempt_at)
         SELECT 'msg_' || lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0') || substr(replace(gen_random_uuid()::text, '-', ''), 1, 20), e.id, ins.id, ins.owner, ${BODY_SQL}, 'pending', 0, now()
         FROM ins JOIN webhook_endpoints e ON e.disabled_at IS NULL AND ${receives('postgres', 'ins.owner', 'now()')}
         RETURNING 1
       ), woke AS (${notifyEventsSql('ev', '$5')})
       SELECT owner, id, (SELECT count(*) FROM ev)::int AS events, (SELECT count(*) FROM woke) AS woke FROM ins`,
      [owners, ids, batch.map((c) => c.plant.name), batch.map((c) => c.plant.tag ?? null), this.#notice.token],
    );
    if ((inserted[0]?.events ?? 0) > 0) this.#eventsQueued();
    const created = new Set(inserted.map((r) => key(r.owner, r.id)));
    const keys = batch.map((c, i) => key(c.owner, ids[i] as string));
    const copies = new Map<string, number>();
    for (const k of keys) copies.set(k, (copies.get(k) ?? 0) + 1);
    // Created and alone in the batch: done. Otherwise the stored row decides replay or conflict. It is
    // read in a new statement, so READ COMMITTED sees a concurrent insert that ON CONFLICT waited for.
    const unsure = keys.flatMap((k, i) => (created.has(k) && copies.get(k) === 1 ? [] : [i]));
    const outcomes: CreateOutcome[] = batch.map(() => 'created');
    if (unsure.length === 0) return outcomes;
    const { rows } = await this.#query<PlantRow & { owner: string; id: string }>(
      'plant_find_batch',
      `SELECT owner, id, name, tag FROM plants
       WHERE (owner, id) IN (SELECT * FROM unnest($1::text[], $2::bigint[]))`,
      [unsure.map((i) => owners[i]), unsure.map((i) => ids[i])],
    );
    const stored = new Map(rows.map((r) => [key(r.owner, r.id), plantOfColumns(r)]));
    for (const i of unsure) {
      const item = batch[i] as PendingCreate;
      const found = stored.get(keys[i] as string);
      // Deleted between the insert and the read: try this one again, alone.
      outcomes[i] = found === undefined ? await this.#insertBatch([item]).then((o) => o[0] as CreateOutcome)
        : samePlant(found, plantOf(item.plant)) ? 'replayed' : 'conflict';
    }
    return outcomes;
  }

  /** Other instances write too: no page is kept (identical lists in one turn are read once, below). */
  cachedPage(): undefined {
    return undefined;
  }

  /** Joins the lists asked for in this turn of the event loop (see listBatchText). */
  listPlants(query: ListQuery): Promise<PlantPage> {
    return new Promise((resolve, reject) => {
      if (this.#lists.push({ query, resolve, reject }) === 1) setImmediate(this.#flushLists);
    });
  }

  /**
   * Identical lists asked for in the same turn (the same owner or admin, tag filter, position and limit)
   * are read once, by one branch, and every caller gets that page: it was read by a statement that
   * started after each of them arrived, so it is as fresh for all as a read of its own, and pages are
   * shared and read-only (see PlantPage). Many clients polling one page then cost one read per turn
   * rather than one each.
   */
  readonly #flushLists = (): void => {
    const lists = this.#lists;
    this.#lists = [];
    const byShape = new Map<ListShape, BatchedList[]>();
    const byKey = new Map<string, BatchedList>();
    for (const list of lists) {
      const [shape, values] = listCall(list.query);
      const key = shape + JSON.stringify(values);
      const same = byKey.get(key);
      if (same !== undefined) {
        same.callers.push(list);
        continue;
      }
      const batched: BatchedList = { values, limit: list.query.limit, callers: [list] };
      byKey.set(key, batched);
      const ofShape = byShape.get(shape);
      if (ofShape === undefined) byShape.set(shape, [batched]);
      else ofShape.push(batched);
    }
    for (const [shape, same] of byShape) {
      for (let i = 0; i < same.length; i += MAX_LIST_BATCH) this.#listBatch(shape, same.slice(i, i + MAX_LIST_BATCH));
    }
  };

  #listBatch(shape: ListShape, batch: BatchedList[]): void {
    const values: unknown[] = [];
    for (const l of batch) values.push(...l.values);
    const { name, text } = listBatch(shape, batch.length);
    const done = this.#query<ListBatchRow>(name, text, values, 'array').then(
      (result) => {
        const rows = result.rows as unknown as ListBatchRow[];
        const each: ListBatchRow[][] = batch.map(() => []);
        for (const row of rows) each[row[0] - 1]?.push(row);
        batch.forEach((l, i) => {
          const page = pageOfRows(each[i] as ListBatchRow[], l.limit);
          for (const caller of l.callers) caller.resolve(page);
        });
      },
    ).catch((error: unknown) => batch.forEach((l) => l.callers.forEach((caller) => caller.reject(error)))); // a settled one ignores this
    this.#inFlight.add(done);
    void done.finally(() => this.#inFlight.delete(done));
  }

  async deletePlant(owner: string, id: bigint): Promise<boolean> {
    const res = await this.#query('plant_delete', SQL.deletePlant, [owner, id.toString()]);
    return res.rowCount === 1;
  }

  async createToken(t: NewTokenRecord): Promise<TokenRecord> {
    const { rows } = await this.#query<TokenRow>('token_insert', SQL.insertToken, tokenValues(POSTGRES, t, new Date()));
    const row = rows[0];
    if (!row) throw new Error('token insert returned no row');
    return tokenOf(POSTGRES, row);
  }

  async findTokenByHash(hash: string): Promise<TokenRecord | null> {
    const { rows } = await this.#query<TokenRow>('token_by_hash', SQL.tokenByHash, [hash]);
    return rows[0] ? tokenOf(POSTGRES, rows[0]) : null;
  }

  async listTokens(user?: string): Promise<TokenRecord[]> {
    const { rows } = user === undefined
      ? await this.#query<TokenRow>('token_list', SQL.tokens, [])
      : await this.#query<TokenRow>('token_list_user', SQL.userTokens, [user]);
    return rows.map((row) => tokenOf(POSTGRES, row));
  }

  async revokeToken(id: number, user?: string): Promise<boolean> {
    const now = POSTGRES.time(new Date());
    const res = user === undefined
      ? await this.#query('token_revoke', SQL.revokeToken, [now, id])
      : await this.#query('token_revoke_user', SQL.revokeUserToken, [now, id, user]);
    // Its user's all-users endpoints may have lost their reach. The revocation stands even if this fails:
    // the dispatcher's next sweep withdraws the same events.
    const withdraw = withdrawEvents('postgres', 'now()', '(SELECT username FROM tokens WHERE id = $1)');
    if (res.rowCount === 1) await this.#query('webhook_withdraw_user', withdraw, [id]).catch(() => undefined);
    return res.rowCount === 1;
  }

  /** One statement; the window is computed from the database's clock, so instances agree on it. */
  async hit(key: string, windowMs: number): Promise<RateCount> {
    const { rows } = await this.#query<{ count: number; reset_in_ms: string }>(
      'rate_hit',
      `WITH now AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms)
       INSERT INTO rate_limit_windows AS w (key, window_start, window_ms, count)
       SELECT $1, ms - ms % $2::bigint, $2, 1 FROM now
       ON CONFLICT (key, window_start) DO UPDATE SET count = w.count + 1
       RETURNING count, window_start + window_ms - (SELECT ms FROM now) AS reset_in_ms`,
      [key, windowMs],
    );
    if (Date.now() - this.#sweptAt > 60_000) this.#sweepRateWindows();
    const row = rows[0];
    if (!row) throw new Error('rate counter returned no row');
    return { count: row.count, resetInMs: Number(row.reset_in_ms) };
  }

  /** Drops ended windows now and then; a failure only means they are dropped next time. */
  #sweepRateWindows(): void {
    this.#sweptAt = Date.now();
    this.#query(
      'rate_sweep',
      'DELETE FROM rate_limit_windows WHERE window_start + window_ms < (extract(epoch FROM clock_timestamp()) * 1000)::bigint',
      [],
    ).catch(() => undefined);
  }

  #cursorKey: Buffer | undefined;

  async cursorKey(): Promise<Buffer> {
    if (this.#cursorKey === undefined) {
      // Instances starting together race here: ON CONFLICT DO UPDATE waits for the first insert to
      // commit and returns its key to all (DO NOTHING would return no row to the others). The no-op
      // update writes a row version once per instance start.
      const { rows } = await this.#query<{ value: Buffer }>(
        'cursor_key',
        `INSERT INTO server_secrets (name, value) VALUES ('cursor', $1)
         ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING value`,
        [randomBytes(32)],
      );
      this.#cursorKey = rows[0]?.value;
      if (this.#cursorKey === undefined) throw new Error('the cursor key upsert returned no row');
    }
    return this.#cursorKey;
  }

  // Webhooks. Every due and lease time comes from the database's clock (now()), so instances agree.

  /** `listener` also hears of other instances' commits that queued events on this store (notify.ts). */
  onEventsQueued(listener: () => void): void {
    this.#onEventsQueued = listener;
    this.#notice.listen(() => this.#eventsQueued());
  }

  /** Tells the listener after a commit that queued events; its failure is not the create's. */
  #eventsQueued(): void {
    try {
      this.#onEventsQueued?.();
    } catch {
      // The dispatcher polls anyway.
    }
  }

  /**
   * `work` in one transaction on one pooled connection. Errors are handled as in `#query`: no connection
   * means unavailable; any error destroys the connection (its transaction with it: the server rolls
   * back) rather than returning it to the pool in an unknown state.
   */
  async #transaction<T>(work: (query: TxQuery) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (error) {
      throw new StoreUnavailableError(error);
    }
    let lost: Error | undefined;
    const onError = (error: Error) => {
      lost ??= error;
    };
    client.on('error', onError);
    const query: TxQuery = async (name, text, values) => {
      if (lost) throw lost;
      return client.query({ name: statementName(name), text, values });
    };
    try {
      await client.query('BEGIN');
      const result = await work(query);
      await client.query('COMMIT');
      if (lost) throw lost;
      client.removeListener('error', onError);
      client.release();
      return result;
    } catch (error) {
      client.removeListener('error', onError);
      client.release(error instanceof Error ? error : new Error(String(error)));
      throw storeError(error);
    }
  }

  async createWebhook(endpoint: NewWebhookEndpoint, maxPerUser: number): Promise<WebhookEndpoint | 'limit'> {
    return this.#transaction(async (query) => {
      // Creates of one user queue on this lock until commit, so each counts what the one before stored.
      await query('webhook_lock_user', "SELECT pg_advisory_xact_lock(hashtext('webhooks:' || $1))", [endpoint.user]);
      const { rows: counted } = await query<{ n: number }>(
        'webhook_count_user', 'SELECT count(*)::int AS n FROM webhook_endpoints WHERE username = $1', [endpoint.user],
      );
      if ((counted[0]?.n ?? 0) >= maxPerUser) return 'limit';
      const { rows } = await query<EndpointRow>(
        'webhook_insert',
        `INSERT INTO webhook_endpoints (id, username, all_users, url, description, secret)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${ENDPOINT_COLUMNS}`,
        [endpoint.id, endpoint.user, endpoint.allUsers, endpoint.url, endpoint.description, endpoint.secret],
      );
      const row = rows[0];
      if (!row) throw new Error('webhook insert returned no row');
      return endpointOf(row);
    });
  }

  async listWebhooks(user: string | null): Promise<WebhookEndpoint[]> {
    const { rows } = await this.#query<EndpointRow>(
      'webhook_list',
      `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints
       WHERE $1::text IS NULL OR username = $1 ORDER BY created_at, id`,
      [user],
    );
    return rows.map(endpointOf);
  }

  /**
   * One transaction, the endpoint first: its row lock makes a `recordAttempts` of its events that is
   * under way finish first, and the statements after it then see (and remove) what that one recorded.
   */
  async deleteWebhook(id: string, user: string | null): Promise<boolean> {
    return this.#transaction(async (query) => {
      const { rowCount } = await query(
        'webhook_delete', 'DELETE FROM webhook_endpoints WHERE id = $1 AND ($2::text IS NULL OR username = $2)', [id, user],
      );
      if (rowCount !== 1) return false;
      // Its queued events (through webhook_deliveries_due); finished ones go with the retention sweep.
      await query('webhook_delete_deliveries', "DELETE FROM webhook_deliveries WHERE endpoint_id = $1 AND state = 'pending'", [id]);
      await query('webhook_delete_attempts', 'DELETE FROM webhook_attempts WHERE endpoint_id = $1', [id]);
      return true;
    });
  }

  async listDeliveryAttempts(endpointId: string, user: string | null, limit: number): Promise<DeliveryAttempt[] | null> {
    const { rows } = await this.#query<{
      seq: string | null; event_id: string; plant_id: string; attempt: number; status: number | null;
      error: string | null; at: Date; state: DeliveryState; next_attempt_at: Date | null;
    }>(
      'webhook_attempts_list',
      `SELECT a.seq, a.event_id, a.plant_id, a.attempt, a.status, a.error, a.at, a.state, a.next_attempt_at
       FROM webhook_endpoints e
       LEFT JOIN LATERAL (
         SELECT * FROM webhook_attempts WHERE endpoint_id = e.id AND ($2::text IS NULL OR NOT e.all_users OR owner = $2) -- not admin: its own plants'
         ORDER BY seq DESC LIMIT $3
       ) a ON true
       WHERE e.id = $1 AND ($2::text IS NULL OR e.username = $2)
       ORDER BY a.seq DESC`,
      [endpointId, user, limit],
    );
    if (rows.length === 0) return null;
    return rows.flatMap((r) => (r.seq === null ? [] : [{
      eventId: r.event_id,
      plantId: BigInt(r.plant_id),
      attempt: r.attempt,
      status: r.status,
      error: r.error,
      at: r.at,
      state: r.state,
      nextAttemptAt: r.state === 'pending' ? r.next_attempt_at : null,
    }]));
  }

  /** One statement, in turns across users and endpoints (see sql/claim.ts, also for its locking). */
  async claimDeliveries(request: ClaimRequest): Promise<ClaimedDelivery[]> {
    if (request.limit <= 0 || request.perEndpoint <= 0) return [];
    // No endpoint gets more than the whole claim: a longer range per endpoint is read for nothing.
    const perEndpoint = Math.min(request.perEndpoint, request.limit);
    const { rows } = await this.#query<ClaimRow & { attempts: number }>('webhook_claim', POSTGRES_CLAIM,
      [request.instance, request.busy, perEndpoint, request.limit, request.leaseMs]);
    return rows.map((r) => claimedOf(r, r.attempts)).sort((a, b) => a.seq - b.seq);
  }

  /**
   * One transaction. An event changes only while this instance's claim of this attempt holds it
   * (leased_by, attempt count): a result that arrives after the lease ended and another instance claimed
   * the event again leaves that claim alone. Every attempt made is recorded while its endpoint exists,
   * stale ones too: the receiver did get the request.
   */
  async recordAttempts(instance: string, results: readonly AttemptResult[]): Promise<void> {
    if (results.length === 0) return;
    const sorted = [...results].sort((a, b) => a.at.getTime() - b.at.getTime());
    const col = <T>(f: (r: AttemptResult) => T) => sorted.map(f);
    const seqs = col((r) => r.delivery.seq);
    const attempts = col((r) => r.delivery.attempt);
    await this.#transaction(async (query) => {
      // Holds off a delete of these endpoints until this commits (see deleteWebhook), so no attempt is
      // recorded for an endpoint that is gone.
      await query(
        'webhook_record_lock',
        `SELECT 1 FROM webhook_endpoints
         WHERE id IN (SELECT endpoint_id FROM webhook_deliveries WHERE seq = ANY($1::bigint[])) FOR KEY SHARE`,
        [seqs],
      );
      const { rows: gone } = await query<{ endpoint_id: string }>(
        'webhook_record_update',
        `UPDATE webhook_deliveries d
         SET state = u.state,
             next_attempt_at = CASE WHEN u.state = 'pending' THEN now() + u.retry_ms * interval '1 millisecond' END,
             leased_by = NULL,
             finished_at = CASE WHEN u.state = 'pending' THEN NULL ELSE now() END
         FROM unnest($2::bigint[], $3::int[], $4::text[], $5::float8[], $6::text[])
              AS u(seq, attempt, state, retry_ms, outcome)
         WHERE d.seq = u.seq AND d.attempts = u.attempt AND d.leased_by = $1 AND d.state = 'pending'
         RETURNING CASE WHEN u.outcome = 'gone' THEN d.endpoint_id END AS endpoint_id`,
        [instance, seqs, attempts, col((r) => stateAfter(r.outcome)), col((r) => r.retryInMs ?? 0), col((r) => r.outcome)],
      );
      const goneEndpoints = [...new Set(gone.flatMap((r) => (r.endpoint_id === null ? [] : [r.endpoint_id])))];
      if (goneEndpoints.length > 0) {
        await query(
          'webhook_record_gone',
          `WITH ep AS (
             UPDATE webhook_endpoints SET disabled_at = now(), disabled_reason = $2
             WHERE id = ANY($1::text[]) AND disabled_at IS NULL RETURNING id
           )
           UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, leased_by = NULL, finished_at = now()
           WHERE endpoint_id = ANY($1::text[]) AND state = 'pending'`,
          [goneEndpoints, GONE_REASON],
        );
      }
      await query(
        'webhook_record_attempts',
        `INSERT INTO webhook_attempts (endpoint_id, event_id, plant_id, owner, attempt, status, error, at, state, next_attempt_at)
         SELECT d.endpoint_id, d.event_id, d.plant_id, d.owner, u.attempt, u.status, u.error, u.at, u.state,
                CASE WHEN u.state = 'pending' THEN now() + u.retry_ms * interval '1 millisecond' END
         FROM unnest($1::bigint[], $2::int[], $3::int[], $4::text[], $5::timestamptz[], $6::text[], $7::float8[])
              WITH ORDINALITY AS u(seq, attempt, status, error, at, state, retry_ms, ord)
         JOIN webhook_deliveries d ON d.seq = u.seq
         ORDER BY u.ord`,
        [seqs, attempts, col((r) => r.status), col((r) => r.error), col((r) => r.at), col((r) => stateAfter(r.outcome)),
          col((r) => r.retryInMs ?? 0)],
      );
    });
  }

  async releaseDeliveries(instance: string, deliveries: readonly ClaimedDelivery[]): Promise<void> {
    if (deliveries.length === 0) return;
    await this.#query(
      'webhook_release',
      `UPDATE webhook_deliveries d
       SET attempts = d.attempts - 1, next_attempt_at = now(), leased_by = NULL
       FROM unnest($2::bigint[], $3::int[]) AS u(seq, attempt)
       WHERE d.seq = u.seq AND d.attempts = u.attempt AND d.leased_by = $1 AND d.state = 'pending'`,
      [instance, deliveries.map((d) => d.seq), deliveries.map((d) => d.attempt)],
    );
  }

  async sweepWebhooks(before: Date): Promise<number> {
    const { rows } = await this.#query<{ n: number }>(
      'webhook_sweep',
      `WITH d AS (
         DELETE FROM webhook_deliveries WHERE state <> 'pending' AND finished_at < $1 RETURNING 1
       ), a AS (
         DELETE FROM webhook_attempts WHERE at < $1
       )
       SELECT count(*)::int AS n FROM d`,
      [before],
    );
    await this.#query('webhook_withdraw', withdrawEvents('postgres', 'now()', null), []);
    return rows[0]?.n ?? 0;
  }

  async webhookBacklog(cap: number): Promise<WebhookBacklog> {
    const { rows } = await this.#query<BacklogRow>('webhook_backlog', SQL.webhookBacklog, [cap]);
    return backlogOf(POSTGRES, rows[0], cap);
  }

  async ping(): Promise<void> {
    await this.#query('ping', 'SELECT 1', []);
  }

  /** For `plantstore export` and `import`. */
  transfer(): StoreTransfer {
    return new PostgresTransfer(this.#pool, POSTGRES);
  }

  async close(): Promise<void> {
    if (this.#lists.length > 0) this.#flushLists();
    // Every create already asked for is committed (or fails) before the pool ends, batch after batch.
    while (this.#pending.length > 0 || this.#inFlight.size > 0) {
      this.#flush();
      await Promise.all(this.#inFlight);
    }
    await this.#notice.close();
    if (!this.#pool.ended) await this.#pool.end();
  }
}
