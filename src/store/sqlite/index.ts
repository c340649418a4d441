import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from './driver.js';
import type { Logger } from 'pino';
import { plantOf, plantOfColumns, samePlant, type NewPlant } from '../../domain/plant.js';
import type {
  AttemptResult, ClaimedDelivery, ClaimRequest, DeliveryAttempt, NewWebhookEndpoint, WebhookEndpoint,
} from '../../domain/webhook.js';
import { migrationName, type MigrationsApplied } from '../sql/migrations.js';
import { MemoryRateCounter } from './counters.js';
import {
  backlogOf, migrationValues, pendingMigrations, statements, tokenOf, tokenValues,
  type BacklogRow, type Dialect, type TokenRow,
} from '../sql/statements.js';
import { CHECKPOINT_FRAMES, startCheckpointer, type WalCheckpointer } from './checkpoint.js';
import { currentUser, isBusy, isUnwritable, named, openFailure, storeError } from './errors.js';
import { identityOf, prepareStorePath, quickCheck, takeServerLock, watchIdentity } from './file.js';
import { FIRST_RETRY_MS, MAX_RETRY_MS, walFileSync, WriteQueue } from './queue.js';
import { PageReader } from './lists.js';
import { SqliteTransfer } from './transfer.js';
import { SqliteWebhooks } from './webhooks.js';
import {
  StoreUnavailableError,
  type CreateOutcome, type ListQuery, type NewTokenRecord, type PlantPage, type RateCount, type TokenRecord, type CacheableStore,
  type StoreObserver, type WebhookBacklog,
} from '../store.js';
import type { StoreTransfer, TransferableStore } from '../transfer.js';

export { StoreLockedError } from './file.js';

/** SQLite's spelling: `?` placeholders, times as milliseconds since the epoch, scopes space-separated, flags 0/1. */
const SQLITE: Dialect = {
  backend: 'sqlite',
  param: () => '?',
  timeType: 'INTEGER',
  time: (date) => date.getTime(),
  dateOf: (stored) => new Date(stored as number),
  scopes: (scopes) => scopes.join(' '),
  scopesOf: (stored) => (stored as string).split(' '),
  flag: (value) => (value ? 1 : 0),
  flagOf: (stored) => stored === 1,
  explicitIdentity: '',
};
const SQL = statements(SQLITE);

/** Webhook bookkeeping: losing it to a power cut only repeats a delivery (see WriteQueue.add). */
const NOT_DURABLE = { durable: false } as const;

/** How long a write waits for another process (the CLI) holding the write lock, then 503. */
const BUSY_TIMEOUT_MS = 5000;
/** How often the server checks that its store file is still the file at its path. */
const WATCH_INTERVAL_MS = 1000;
/** While the store cannot be written, /readyz tries a write at most this often. */
const PROBE_INTERVAL_MS = 1000;

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
  { busyTimeoutMs = BUSY_TIMEOUT_MS, server = false, logger, observer, onMigrated, logCreation = true }: SqliteOptions = {},
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
      await store.watch(deadline);
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

interface StoreFile {
  /** As configured, for messages. */
  readonly path: string;
  readonly realPath: string;
  readonly busyTimeoutMs: number;
  readonly logger: Logger | undefined;
  readonly observer: StoreObserver | undefined;
}

class SqliteStore implements CacheableStore, TransferableStore {
  readonly backend = 'sqlite';
  readonly #db: Database.Database;
  readonly #lock: Database.Database | undefined;
  readonly #file: StoreFile;
  /** In memory: one server per store, so its counts are all the counts. */
  readonly #rates = new MemoryRateCounter();
  readonly #writes: WriteQueue;
  /** Why nothing may be read or written (the file was deleted, or the store closed); ping, reads and writes fail with 503. */
  #unavailable: Error | undefined;
  /** The last write failed because the store cannot be written (read-only, disk full, I/O error); /readyz says so. */
  #unwritable: { error: unknown; probedAt: number } | undefined;
  #stopWatch: (() => void) | undefined;
  /** Server only: checkpoints the WAL off the event loop (see startCheckpointer). */
  #checkpointer: WalCheckpointer | undefined;
  #closed: Promise<void> | undefined;
  readonly #webhooks: SqliteWebhooks;
  #eventsListener: (() => void) | undefined;
  /** A write of the running batch queued webhook events: the listener is told once the batch is committed and synced. */
  #eventsQueued = false;

  readonly #probe: () => void;
  readonly #insertPlant: Database.Statement<[string, bigint, string, string | null]>;
  readonly #findPlant: Database.Statement<[string, bigint], { name: string; tag: string | null }>;
  readonly #deletePlant: Database.Statement<[string, bigint]>;
  readonly #pages: PageReader;
  readonly #insertToken: Database.Statement<unknown[], TokenRow>;
  readonly #tokenByHash: Database.Statement<[string], TokenRow>;
  readonly #tokens: Database.Statement<[], TokenRow>;
  readonly #userTokens: Database.Statement<[string], TokenRow>;
  readonly #revokeToken: Database.Statement<[number, number]>;
  readonly #revokeUserToken: Database.Statement<[number, number, string]>;

  constructor(db: Database.Database, lock: Database.Database | undefined, file: StoreFile) {
    this.#db = db;
    this.#lock = lock;
    this.#file = file;
    this.#writes = new WriteQueue(db, file.busyTimeoutMs, {
      unavailable: () => this.#unavailable,
      cannotWrite: (error) => this.#cannotWrite(error),
      committed: () => {
        if (this.#unwritable) this.#canWrite();
      },
      ran: () => {
        const queued = this.#eventsQueued;
        this.#eventsQueued = false;
        return queued;
      },
      settled: (committed, writes, eventsQueued) => this.#batchSettled(committed, writes, eventsQueued === true),
    }, walFileSync(`${file.realPath}-wal`));
    // Rewrites one row as it is: a real write and fsync, the only way to learn whether the file can
    // be written (a file SQLite opened read-only still begins transactions).
    const touch = db.prepare('UPDATE schema_migrations SET applied_at = applied_at WHERE version = (SELECT max(version) FROM schema_migrations)');
    const probe = db.transaction(() => touch.run());
    this.#probe = () => probe.immediate();
    this.#insertPlant = db.prepare(
      'INSERT INTO plants (owner, id, name, tag) VALUES (?, ?, ?, ?) ON CONFLICT (owner, id) DO NOTHING',
    );
    this.#findPlant = db.prepare('SELECT name, tag FROM plants WHERE owner = ? AND id = ?');
    this.#deletePlant = db.prepare(SQL.deletePlant);
    this.#pages = new PageReader(db);
    this.#insertToken = db.prepare(SQL.insertToken);
    this.#tokenByHash = db.prepare(SQL.tokenByHash);
    this.#tokens = db.prepare(SQL.tokens);
    this.#userTokens = db.prepare(SQL.userTokens);
    this.#revokeToken = db.prepare(SQL.revokeToken);
    this.#revokeUserToken = db.prepare(SQL.revokeUserToken);
    this.#webhooks = new SqliteWebhooks(db);
  }

  #batchSettled(committed: boolean, writes: number, eventsQueued: boolean): void {
    if (committed) this.#file.observer?.committed(this.backend, writes);
    if (!eventsQueued || !committed || !this.#eventsListener) return;
    try {
      this.#eventsListener();
    } catch (error) {
      // The listener only hurries the dispatcher, which polls anyway; it must not break the write queue.
      this.#file.logger?.error({ err: error }, 'the webhook events listener failed');
    }
  }

  /** Server only: learn now whether the file can be written, and from now on whether it is still the file at its path. */
  async watch(deadline: number): Promise<void> {
    try {
      await whenNotBusy(this.#probe, deadline);
    } catch (error) {
      if (!isUnwritable(error)) throw error;
      this.#cannotWrite(error);
    }
    this.#stopWatch = watchIdentity(this.#file.realPath, identityOf(this.#file.realPath), WATCH_INTERVAL_MS, (problem) => this.#fileChanged(problem));
  }

  /**
   * Server only: from now on the WAL is checkpointed by a thread of its own, never by this connection's
   * COMMIT on the event loop. If that thread cannot start or dies, this connection checkpoints again as
   * SQLite does by default, and the log says so.
   */
  checkpointInBackground(): void {
    const { logger, realPath } = this.#file;
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

  #fileChanged(problem: string | undefined): void {
    const where = named(this.#file.path, this.#file.realPath);
    if (problem === undefined) {
      this.#unavailable = undefined;
      this.#file.logger?.info({ path: this.#file.realPath }, `the SQLite store ${where} is back at its path; serving again`);
      return;
    }
    this.#unavailable = new Error(`the SQLite store ${where} ${problem} while the server was running`);
    const proc = process.platform === 'linux'
      ? ` (until this process ends, a deleted file stays readable through /proc/${process.pid}/fd: see ls -l /proc/${process.pid}/fd)`
      : '';
    this.#file.logger?.error(
      { path: this.#file.realPath },
      `${this.#unavailable.message}. This server now answers 503 to every request that needs the store, reports unready, ` +
        'and writes nothing more. If the file was moved, moving it back lets the server recover by itself; otherwise stop ' +
        `the server, restore the store from a backup${proc}, and start it again: started as it is, it would begin on a new, empty store.`,
    );
  }

  #cannotWrite(error: unknown): void {
    const first = this.#unwritable === undefined;
    this.#unwritable = { error, probedAt: performance.now() };
    if (!first) return;
    this.#file.logger?.error(
      { path: this.#file.realPath, err: error },
      `cannot write the SQLite store ${named(this.#file.path, this.#file.realPath)} (${(error as Error).message}): writes answer 503 ` +
        `and /readyz reports unready until a write succeeds. Check that ${currentUser()} may write the file and its directory ` +
        '(a file opened read-only needs a restart of the server), and that the disk is writable and has room.',
    );
  }

  #canWrite(): void {
    this.#unwritable = undefined;
    this.#file.logger?.info({ path: this.#file.realPath }, `the SQLite store ${named(this.#file.path, this.#file.realPath)} can be written again`);
  }

  assertReadable(): void {
    if (this.#unavailable) throw new StoreUnavailableError(this.#unavailable);
  }

  createPlant(owner: string, plant: NewPlant): Promise<CreateOutcome> {
    return this.#writes.add(() => {
      if (this.#insertPlant.run(owner, plant.id, plant.name, plant.tag ?? null).changes === 1) {
        this.#queueEvents(owner, plant);
        return 'created';
      }
      // Same transaction as the insert, so the row that conflicted is still there.
      const stored = this.#findPlant.get(owner, plant.id);
      if (!stored) throw new Error('conflicting plant row not found');
      return samePlant(plantOfColumns(stored), plantOf(plant)) ? 'replayed' : 'conflict';
    });
  }

  /**
   * The outbox, in the create's transaction: the events commit with the plant or not at all. A failed
   * statement rolls back only itself while the batch commits (see WriteQueue), so when queueing fails the
   * plant just inserted is removed again before the create fails.
   */
  #queueEvents(owner: string, plant: NewPlant): void {
    try {
      if (this.#webhooks.queueEvents(owner, plant)) this.#eventsQueued = true;
    } catch (error) {
      if (this.#db.inTransaction) this.#deletePlant.run(owner, plant.id);
      throw error;
    }
  }

  /** The list cache is list-cache.ts's, around this store. */
  cachedPage(): undefined {
    return undefined;
  }

  async listPlants(query: ListQuery): Promise<PlantPage> {
    this.assertReadable();
    try {
      return this.#pages.read(query);
    } catch (error) {
      throw storeError(error);
    }
  }

  deletePlant(owner: string, id: bigint): Promise<boolean> {
    return this.#writes.add(() => this.#deletePlant.run(owner, id).changes === 1);
  }

  async createToken(t: NewTokenRecord): Promise<TokenRecord> {
    const row = await this.#writes.add(() =>
      this.#insertToken.get(tokenValues(SQLITE, t, new Date())),
    );
    if (!row) throw new Error('token insert returned no row');
    return tokenOf(SQLITE, row);
  }

  async findTokenByHash(hash: string): Promise<TokenRecord | null> {
    this.assertReadable();
    let row;
    try {
      row = this.#tokenByHash.get(hash);
    } catch (error) {
      throw storeError(error);
    }
    return row ? tokenOf(SQLITE, row) : null;
  }

  async listTokens(user?: string): Promise<TokenRecord[]> {
    this.assertReadable();
    let rows;
    try {
      rows = user === undefined ? this.#tokens.all() : this.#userTokens.all(user);
    } catch (error) {
      throw storeError(error);
    }
    return rows.map((row) => tokenOf(SQLITE, row));
  }

  revokeToken(id: number, user?: string): Promise<boolean> {
    return this.#writes.add(() => {
      const now = Date.now();
      const revoked = (user === undefined ? this.#revokeToken.run(now, id) : this.#revokeUserToken.run(now, id, user)).changes === 1;
      if (revoked) this.#webhooks.withdrawForToken(id, now); // its user's all-users endpoints may have lost their reach
      return revoked;
    });
  }

  async hit(key: string, windowMs: number): Promise<RateCount> {
    return this.#rates.hit(key, windowMs);
  }

  #cursorKey: Buffer | undefined;

  /** Once per handle, so the statement is prepared here rather than with the others. */
  async cursorKey(): Promise<Buffer> {
    if (this.#cursorKey === undefined) {
      // One statement, whoever comes first: the no-op update makes RETURNING give the stored key.
      const upsert = this.#db.prepare<[string, Buffer, number], { value: Buffer }>(
        `INSERT INTO server_secrets (name, value, created_at) VALUES (?, ?, ?)
         ON CONFLICT (name) DO UPDATE SET name = excluded.name RETURNING value`,
      );
      const run = () => upsert.get('cursor', randomBytes(32), Date.now())?.value;
      let key: Buffer | undefined;
      try {
        key = run();
      } catch (error) {
        // The write lock, held for a moment by another connection (the checkpoint thread's FULL step, a
        // CLI command): waited for in the write queue, as every write, rather than failing with 503.
        if (!isBusy(error)) throw storeError(error);
        key = await this.#writes.add(run);
      }
      if (key === undefined) throw new Error('the cursor key upsert returned no row');
      this.#cursorKey = key;
    }
    return this.#cursorKey;
  }

  onEventsQueued(listener: () => void): void {
    this.#eventsListener = listener;
  }

  createWebhook(endpoint: NewWebhookEndpoint, maxPerUser: number): Promise<WebhookEndpoint | 'limit'> {
    return this.#writes.add(() => this.#webhooks.create(endpoint, maxPerUser, Date.now()));
  }

  async listWebhooks(user: string | null): Promise<WebhookEndpoint[]> {
    return this.#read(() => this.#webhooks.list(user, Date.now()));
  }

  deleteWebhook(id: string, user: string | null): Promise<boolean> {
    return this.#writes.add(() => this.#webhooks.delete(id, user));
  }

  async listDeliveryAttempts(endpointId: string, user: string | null, limit: number): Promise<DeliveryAttempt[] | null> {
    return this.#read(() => this.#webhooks.attempts(endpointId, user, limit));
  }

  /** Server start only (see SqliteWebhooks.releaseOrphans): a crash's claims are due again at once. */
  async releaseOrphanedClaims(): Promise<void> {
    // A store that cannot be written now (said already by the probe) keeps them until their lease ends.
    const released = await this.#writes.add(() => this.#webhooks.releaseOrphans(Date.now()), NOT_DURABLE).catch(() => 0);
    if (released > 0) this.#file.logger?.info({ events: released }, 'webhook events claimed before the last stop are due again');
  }

  claimDeliveries(request: ClaimRequest): Promise<ClaimedDelivery[]> {
    return this.#writes.add(() => this.#webhooks.claim(request, Date.now()), NOT_DURABLE);
  }

  async recordAttempts(instance: string, results: readonly AttemptResult[]): Promise<void> {
    if (results.length === 0) return;
    await this.#writes.add(() => this.#webhooks.record(instance, results, Date.now()), NOT_DURABLE);
  }

  async releaseDeliveries(instance: string, deliveries: readonly ClaimedDelivery[]): Promise<void> {
    if (deliveries.length === 0) return;
    await this.#writes.add(() => this.#webhooks.release(instance, deliveries, Date.now()), NOT_DURABLE);
  }

  sweepWebhooks(before: Date): Promise<number> {
    return this.#writes.add(() => this.#webhooks.sweep(before.getTime(), Date.now()), NOT_DURABLE);
  }

  /** Prepared on first use: only a server with metrics on asks. */
  #backlog: Database.Statement<[number], BacklogRow> | undefined;

  async webhookBacklog(cap: number): Promise<WebhookBacklog> {
    return this.#read(() => backlogOf(SQLITE, (this.#backlog ??= this.#db.prepare(SQL.webhookBacklog)).get(cap), cap));
  }

  /** A read outside the write queue: refused while the store is unavailable, SQLite's failures as store errors. */
  #read<T>(read: () => T): T {
    this.assertReadable();
    try {
      return read();
    } catch (error) {
      throw storeError(error);
    }
  }

  /** Ready: the file is still the store's, it can be read, and (after a failed write) written. */
  async ping(): Promise<void> {
    this.assertReadable();
    const unwritable = this.#unwritable;
    if (unwritable) {
      // Nothing else would find out that the disk was fixed: an unready server gets no writes to try.
      if (performance.now() - unwritable.probedAt < PROBE_INTERVAL_MS) throw new StoreUnavailableError(unwritable.error);
      unwritable.probedAt = performance.now();
      try {
        this.#probe();
      } catch (error) {
        if (isUnwritable(error)) this.#cannotWrite(error);
        throw storeError(error);
      }
      this.#canWrite();
    }
    try {
      this.#db.pragma('schema_version', { simple: true });
    } catch (error) {
      throw storeError(error);
    }
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
    this.#unavailable = new Error('the store is closed');
    // Waited for: nothing of this store runs after close, which releases the server lock next.
    await this.#checkpointer?.close();
    this.#db.close();
    this.#lock?.close();
  }
}
