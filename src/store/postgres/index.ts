import pg from 'pg';
import { migrationName, type MigrationsApplied } from '../sql/migrations.js';
import { migrationValues, pendingMigrations, statements } from '../sql/statements.js';
import { POSTGRES } from '../sql/dialect.js';
import { SqlTokens } from '../sql/tokens.js';
import { NoStoreError, type StoreObserver } from '../store.js';
import type { TransferableStore } from '../transfer.js';
import { PostgresCounters } from './counters.js';
import { ListReads } from './lists.js';
import { EventsListener, PostgresOutbox } from './outbox.js';
import { EventsNotice } from './notify.js';
import { FeedListener, PostgresFeed } from './feed.js';
import { GroupCommit, PostgresPlants } from './plants.js';
import { Connections } from './pool.js';
import { connectionString, waitForDatabase, type StartupOptions } from './startup.js';
import { postgresSecrets, postgresTokenDriver } from './tokens.js';
import { PostgresTransfer } from './transfer.js';
import { PostgresWebhooks } from './webhooks.js';

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
    // its statements to prepare again, while the burst's requests wait: a pause longer than the idle
    // timeout made the lists after it several times slower. A pool that holds its connections is also
    // what the instances' pools (and each one's listening connection) must fit in max_connections for anyway.
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
  return postgresStore(pool, options.observer, notice);
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

/** A PostgreSQL store: its facets over one pool, each in its own file. */
function postgresStore(pool: pg.Pool, observer: StoreObserver | undefined, notice: EventsNotice): TransferableStore {
  const connections = new Connections(pool);
  const events = new EventsListener(notice);
  const feed = new FeedListener(notice);
  // Group commits and group reads under way: closing waits for them.
  const inFlight = new Set<Promise<void>>();
  const commits = new GroupCommit(connections, inFlight, observer, events.tell, feed.tell, notice.token);
  const lists = new ListReads(connections, inFlight);
  return {
    backend: 'postgres',
    plants: new PostgresPlants(commits, lists, connections, feed.tell, notice.token),
    tokens: new SqlTokens(POSTGRES, postgresTokenDriver(SQL, connections)),
    counters: new PostgresCounters(connections),
    secrets: postgresSecrets(connections),
    webhooks: new PostgresWebhooks(POSTGRES, connections, events.tell, notice.token),
    outbox: new PostgresOutbox(POSTGRES, connections, events, SQL.webhookBacklog),
    feed: new PostgresFeed(connections, feed),
    health: {
      ping: async () => {
        await connections.query('ping', 'SELECT 1', []);
      },
    },
    /** For `plantstore export` and `import`. */
    transfer: () => new PostgresTransfer(pool, POSTGRES),
    close: async () => {
      lists.flush();
      await commits.close();
      await notice.close();
      if (!pool.ended) await pool.end();
    },
  };
}
