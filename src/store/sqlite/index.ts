import { statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from './driver.js';
import type { Logger } from 'pino';
import { migrationName, type MigrationsApplied } from '../sql/migrations.js';
import { SQLITE } from '../sql/dialect.js';
import { migrationValues, pendingMigrations, statements } from '../sql/statements.js';
import { SqlTokens } from '../sql/tokens.js';
import { CHECKPOINT_FRAMES, startCheckpointer, type WalCheckpointer } from './checkpoint.js';
import { MemoryRateCounter } from './counters.js';
import { isBusy, isUnwritable, named, openFailure } from './errors.js';
import { identityOf, prepareStorePath, quickCheck, takeServerLock, watchIdentity } from './file.js';
import { EventsListener, releaseOrphanedClaims, SqliteOutbox } from './outbox.js';
import { SqliteFeed, SqliteFeedLog } from './feed.js';
import { SqlitePlants } from './plants.js';
import { FIRST_RETRY_MS, MAX_RETRY_MS, WriteQueue } from './queue.js';
import { FileState, type StoreFile } from './state.js';
import { walFileSync } from './wal.js';
import { sqliteSecrets, sqliteTokenDriver } from './tokens.js';
import { SqliteTransfer } from './transfer.js';
import { SqliteWebhookOperations } from './webhook-operations.js';
import { SqliteWebhookStatements } from './webhook-statements.js';
import { SqliteWebhookStore } from './webhooks.js';
import type {
  CacheableStore, CounterStore, HealthStore, OutboxStore, SecretStore, StoreObserver, TokenStore, WebhookStore,
} from '../store.js';
import type { StoreTransfer, TransferableStore } from '../transfer.js';

export { StoreLockedError } from './file.js';

const SQL = statements(SQLITE);

/** How long a write waits for another process (the CLI) holding the write lock, then 503. */
const BUSY_TIMEOUT_MS = 5000;
/** How often the server checks that its store file is still the file at its path. */
const WATCH_INTERVAL_MS = 1000;

export interface SqliteOptions {
  readonly busyTimeoutMs?: number;
  /** Take the server lock: one server per store (the CLI may still open it). */
  readonly server?: boolean;
  /** Where the store reports what an operator must know: a new store created, the file lost, the disk failing. */
  readonly logger?: Logger;
  /** Metrics: told of every group commit (see StoreObserver). */
  readonly observer?: StoreObserver | undefined;
  readonly onMigrated?: MigrationsApplied | undefined;
  /** Log that a store was created (the CLI says so itself, in its own words, before it opens one). */
  readonly logCreation?: boolean;
  /** How often a server checks its file, WATCH_INTERVAL_MS unless given; tests shorten it. Not a setting. */
  readonly watchIntervalMs?: number | undefined;
}

/**
 * Calls `what` until it stops failing with SQLITE_BUSY, waiting on timers in between so that the event
 * loop keeps serving; past `deadline`, the last error is thrown.
 */
async function whenNotBusy<T>(what: () => T, deadline: number): Promise<T> {
  for (let wait = FIRST_RETRY_MS; ; wait = Math.min(wait * 2, MAX_RETRY_MS)) {
    try {
      return what();
    } catch (error) {
      const left = deadline - performance.now();
      if (!isBusy(error) || left <= 0) throw error;
      await sleep(Math.min(wait, left));
    }
  }
}

/**
 * Every connection runs with busy_timeout 0: SQLite's busy handler sleeps inside the call, which in
 * Node blocks the event loop (health checks, cached lists, every other request) for as long as another
 * process holds the lock. Waiting for a lock is done here instead, on timers: at open by `whenNotBusy`,
 * afterwards by the write queue. Reads never wait: in WAL mode they need no lock that a writer holds.
 */
export async function openSqliteStore(
  path: string,
  { busyTimeoutMs = BUSY_TIMEOUT_MS, server = false, logger, observer, onMigrated, logCreation = true, watchIntervalMs = WATCH_INTERVAL_MS }: SqliteOptions = {},
): Promise<CacheableStore & TransferableStore> {
  const realPath = prepareStorePath(path);
  const lock = server ? takeServerLock(path, realPath) : undefined;
  let db: Database.Database | undefined;
  try {
    const existing = statSync(realPath, { throwIfNoEntry: false });
    const created = existing === undefined || existing.size === 0;
    db = new Database(realPath, { timeout: 0 });
    // Before anything writes to it. Server only: the CLI's short commands would pay for a full read.
    if (server && !created) await quickCheck(path, realPath);
    const deadline = performance.now() + busyTimeoutMs;
    const connection = db;
    const mode = await whenNotBusy(() => connection.pragma('journal_mode = WAL', { simple: true }), deadline);
    if (mode !== 'wal') throw new Error(`SQLite refused WAL mode (got ${String(mode)}) for ${named(path, realPath)}`);
    // FULL: every commit fsyncs the WAL, so what is acknowledged survives power loss, not only a crash. The
    // write queue's batches commit with NORMAL and sync the WAL themselves, off the event loop (WriteQueue).
    db.pragma('synchronous = FULL');
    const applied = await whenNotBusy(() => migrate(connection), deadline);
    onMigrated?.(applied);
    // Said out loud: after the file was deleted or DATABASE_URL mistyped, this is how an operator learns
    // that the store is empty because it is new.
    if (created && logCreation) logger?.info({ path: realPath }, `no store at ${named(path, realPath)}: created a new, empty one`);
    const store = new SqliteStore(db, lock, { path, realPath, busyTimeoutMs, logger, observer });
    if (server) {
      await store.watch(deadline, watchIntervalMs);
      store.checkpointInBackground();
      await store.releaseOrphanedClaims();
    }
    return store;
  } catch (error) {
    db?.close();
    lock?.close();
    throw openFailure(path, realPath, error);
  }
}

/** Applies the pending migrations; returns their names. */
function migrate(db: Database.Database): string[] {
  db.exec(SQL.createMigrations);
  const apply = db.transaction(() => {
    const record = db.prepare(SQL.recordMigration);
    const pending = pendingMigrations(SQLITE, db.prepare(SQL.appliedMigrations).pluck().all() as number[]);
    for (const m of pending) {
      db.exec(m.sql);
      record.run(migrationValues(SQLITE, m, new Date()));
    }
    return pending.map(migrationName);
  });
  // IMMEDIATE takes the write lock before reading what is applied, so a server and a CLI starting
  // together apply each migration once.
  return apply.immediate();
}

/** A SQLite store: its facets over one connection and its write queue, each in its own file. */
class SqliteStore implements CacheableStore, TransferableStore {
  readonly backend = 'sqlite';
  readonly plants: SqlitePlants;
  readonly tokens: TokenStore;
  readonly counters: CounterStore;
  readonly secrets: SecretStore;
  readonly webhooks: WebhookStore;
  readonly outbox: OutboxStore;
  readonly feed: SqliteFeed;
  readonly health: HealthStore;
  readonly #db: Database.Database;
  readonly #lock: Database.Database | undefined;
  readonly #state: FileState;
  readonly #writes: WriteQueue;
  readonly #webhooks: SqliteWebhookStatements;
  #stopWatch: (() => void) | undefined;
  /** Server only: checkpoints the WAL off the event loop (see startCheckpointer). */
  #checkpointer: WalCheckpointer | undefined;
  #closed: Promise<void> | undefined;

  constructor(db: Database.Database, lock: Database.Database | undefined, file: StoreFile) {
    this.#db = db;
    this.#lock = lock;
    const state = new FileState(db, file);
    this.#state = state;
    // Told after a batch whose writes queued webhook events is committed (WriteQueue.wakeAfterCommit).
    const events = new EventsListener(file.logger);
    // Made once the write queue it writes through is: the queue tells it of durable batches.
    let feedLog: SqliteFeedLog | undefined;
    this.#writes = new WriteQueue(db, file.busyTimeoutMs, {
      unavailable: () => state.unavailable,
      cannotWrite: (error) => state.cannotWrite(error),
      committed: () => state.committed(),
      settled: (committed, writes) => {
        if (committed) file.observer?.committed(this.backend, writes);
      },
      afterCommit: events.tell,
      feedDurable: (pos) => feedLog?.durable(pos),
    }, walFileSync(`${file.realPath}-wal`));
    this.#webhooks = new SqliteWebhookStatements(db, SQLITE);
    feedLog = new SqliteFeedLog(db, this.#writes);
    this.feed = new SqliteFeed(db, state, this.#writes, feedLog);
    this.plants = new SqlitePlants(db, state, this.#writes, this.#webhooks, feedLog, SQL.deletePlant);
    this.tokens = new SqlTokens(SQLITE, sqliteTokenDriver(db, SQL, state, this.#writes, this.#webhooks));
    // In memory: one server per store, so its counts are all the counts.
    const rates = new MemoryRateCounter();
    this.counters = {
      hit: async (key, windowMs) => rates.hit(key, windowMs),
    };
    this.secrets = sqliteSecrets(db, this.#writes);
    this.webhooks = new SqliteWebhookStore(state, this.#writes, this.#webhooks, new SqliteWebhookOperations(db, SQLITE));
    this.outbox = new SqliteOutbox(db, SQLITE, state, this.#writes, this.#webhooks, events, SQL.webhookBacklog);
    this.health = { ping: () => state.ping() };
  }

  /** Server only: learn now whether the file can be written, and from now on whether it is still the file at its path. */
  async watch(deadline: number, intervalMs: number): Promise<void> {
    try {
      await whenNotBusy(this.#state.probe, deadline);
    } catch (error) {
      if (!isUnwritable(error)) throw error;
      this.#state.cannotWrite(error);
    }
    const { realPath } = this.#state.file;
    this.#stopWatch = watchIdentity(realPath, identityOf(realPath), intervalMs, (problem) => this.#state.fileChanged(problem));
  }

  /**
   * Server only: from now on the WAL is checkpointed by a thread of its own, never by this connection's
   * COMMIT on the event loop. If that thread cannot start or dies, this connection checkpoints again as
   * SQLite does by default, and the log says so.
   */
  checkpointInBackground(): void {
    const { logger, realPath } = this.#state.file;
    this.#db.pragma('wal_autocheckpoint = 0');
    this.#checkpointer = startCheckpointer(realPath, {
      failed: (error) => logger?.error({ err: error, path: realPath }, 'a WAL checkpoint failed; the WAL grows until one succeeds (tried again every 100 ms)'),
      recovered: () => logger?.info({ path: realPath }, 'WAL checkpoints succeed again'),
      stopped: (error) => {
        this.#checkpointer = undefined;
        if (!this.#db.open) return;
        logger?.error({ err: error, path: realPath }, 'the WAL checkpoint thread stopped; checkpoints run on the serving connection again, as SQLite does by default');
        try {
          this.#db.pragma(`wal_autocheckpoint = ${CHECKPOINT_FRAMES}`);
        } catch (failure) {
          // On a worker's exit event: thrown, it would end the process.
          logger?.error({ err: failure, path: realPath }, 'could not turn checkpoints back on for the serving connection; the WAL grows until the server restarts');
        }
      },
    });
  }

  /** Server start only: a crash's claims are due again at once. */
  releaseOrphanedClaims(): Promise<void> {
    return releaseOrphanedClaims(this.#writes, this.#webhooks, this.#state);
  }

  /** For `plantstore export` and `import`, on a handle used for nothing else meanwhile. */
  transfer(): StoreTransfer {
    return new SqliteTransfer(this.#db, SQLITE, (run) => this.#writes.add(run));
  }

  close(): Promise<void> {
    this.#closed ??= this.#close();
    return this.#closed;
  }

  async #close(): Promise<void> {
    if (!this.#db.open) return;
    this.#stopWatch?.();
    this.#writes.close();
    this.#state.closed();
    // Waited for: nothing of this store runs after close, which releases the server lock next.
    await this.#checkpointer?.close();
    this.#db.close();
    this.#lock?.close();
  }
}
