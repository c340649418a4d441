import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { plantOf, plantOfColumns, samePlant, type NewPlant } from '../domain/plant.js';
import { isScope, type Scope } from '../domain/principal.js';
import { loadMigrations } from './migrations.js';
import { PageCache } from './page-cache.js';
import {
  StoreUnavailableError,
  type CreateOutcome, type ListQuery, type NewTokenRecord, type PlantPage, type RateCount, type Store, type TokenRecord,
} from './store.js';
import { MemoryRateCounter } from './rate-counter.js';

interface PlantRow {
  seq: number;
  name: string;
  tag: string | null;
}

interface TokenRow {
  id: number;
  user: string;
  scopes: string;
  admin: number;
  name: string | null;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
}

interface QueuedWrite {
  /** Whose plants the write changes, so cached pages of theirs are dropped after it. */
  readonly owner: string;
  run(): unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

const LIST_SQL = {
  owner: 'SELECT seq, name, tag FROM plants WHERE owner = ? AND seq > ? ORDER BY seq LIMIT ?',
  ownerTag: 'SELECT seq, name, tag FROM plants WHERE owner = ? AND tag = ? AND seq > ? ORDER BY seq LIMIT ?',
  all: 'SELECT seq, name, tag FROM plants WHERE seq > ? ORDER BY seq LIMIT ?',
  allTag: 'SELECT seq, name, tag FROM plants WHERE tag = ? AND seq > ? ORDER BY seq LIMIT ?',
};

/**
 * Errors that mean "try again later" rather than "this request or our code is wrong": another process
 * held the lock past the busy timeout, or the disk is full.
 */
function storeError(error: unknown): unknown {
  const code = (error as { code?: unknown }).code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || code === 'SQLITE_FULL' ? new StoreUnavailableError(error) : error;
}

/** How long a writer waits for another process (the CLI) holding the write lock, then 503. */
const BUSY_TIMEOUT_MS = 5000;

export interface SqliteOptions {
  readonly busyTimeoutMs?: number;
  /** Plants kept in the page cache (see page-cache.ts); 0 turns it off. */
  readonly cachePlants?: number;
  /** Take the server lock: one server per store (the CLI may still open it). */
  readonly server?: boolean;
}

export class StoreLockedError extends Error {}

/**
 * One server per SQLite store. Its writes are then the only writes to plants (the CLI writes tokens
 * only), which is what lets the page cache invalidate exactly without asking SQLite on every read;
 * several instances belong on PostgreSQL. The lock is SQLite's own exclusive lock on a sibling file,
 * held as long as the connection is open: the operating system releases it however the process ends,
 * kill -9 included, so a crash never leaves a stale lock behind.
 */
function takeServerLock(path: string): Database.Database {
  const lockPath = `${path}.lock`;
  const lock = new Database(lockPath);
  try {
    lock.pragma('locking_mode = EXCLUSIVE');
    lock.exec('BEGIN EXCLUSIVE');
    return lock;
  } catch (error) {
    lock.close();
    if ((error as { code?: unknown }).code !== 'SQLITE_BUSY') throw error;
    throw new StoreLockedError(
      `another plantstore server is serving ${path} (it holds ${lockPath}); stop it first, or use PostgreSQL to run several instances`,
    );
  }
}

export function openSqliteStore(path: string, { busyTimeoutMs = BUSY_TIMEOUT_MS, cachePlants = 0, server = false }: SqliteOptions = {}): Store {
  mkdirSync(dirname(path), { recursive: true });
  const lock = server ? takeServerLock(path) : undefined;
  // Without the server lock, another process may write plants, so this handle keeps no page cache.
  const cache = new PageCache(server ? cachePlants : 0);
  const db = new Database(path);
  try {
    // First, so that even switching to WAL waits for a CLI that holds a lock at this moment.
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    const mode = db.pragma('journal_mode = WAL', { simple: true });
    if (mode !== 'wal') throw new Error(`SQLite refused WAL mode (got ${String(mode)}) for ${path}`);
    // FULL: every commit fsyncs the WAL, so an acknowledged create survives power loss, not only a crash.
    db.pragma('synchronous = FULL');
    migrate(db);
    return new SqliteStore(db, cache, lock);
  } catch (error) {
    db.close();
    lock?.close();
    throw error;
  }
}

function migrate(db: Database.Database): void {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
  const apply = db.transaction(() => {
    const applied = new Set(db.prepare('SELECT version FROM schema_migrations').pluck().all() as number[]);
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const m of loadMigrations('sqlite')) {
      if (applied.has(m.version)) continue;
      db.exec(m.sql);
      record.run(m.version, m.name, Date.now());
    }
  });
  // IMMEDIATE takes the write lock before reading what is applied, so a server and a CLI starting
  // together apply each migration once.
  apply.immediate();
}

class SqliteStore implements Store {
  readonly backend = 'sqlite';
  readonly #db: Database.Database;
  readonly #cache: PageCache;
  readonly #lock: Database.Database | undefined;
  /** In memory: one server per store, so its counts are all the counts. */
  readonly #rates = new MemoryRateCounter();
  #queue: QueuedWrite[] = [];
  readonly #commitQueue: () => void;

  readonly #insertPlant: Database.Statement<[string, bigint, string, string | null]>;
  readonly #findPlant: Database.Statement<[string, bigint], { name: string; tag: string | null }>;
  readonly #deletePlant: Database.Statement<[string, bigint]>;
  readonly #list: { [K in keyof typeof LIST_SQL]: Database.Statement<unknown[], PlantRow> };
  readonly #insertToken: Database.Statement<unknown[], TokenRow>;
  readonly #tokenByHash: Database.Statement<[string], TokenRow>;
  readonly #tokens: Database.Statement<[], TokenRow>;
  readonly #revokeToken: Database.Statement<[number, number]>;

  constructor(db: Database.Database, cache: PageCache, lock: Database.Database | undefined) {
    this.#db = db;
    this.#cache = cache;
    this.#lock = lock;
    this.#insertPlant = db.prepare(
      'INSERT INTO plants (owner, id, name, tag) VALUES (?, ?, ?, ?) ON CONFLICT (owner, id) DO NOTHING',
    );
    this.#findPlant = db.prepare('SELECT name, tag FROM plants WHERE owner = ? AND id = ?');
    this.#deletePlant = db.prepare('DELETE FROM plants WHERE owner = ? AND id = ?');
    this.#list = {
      owner: db.prepare(LIST_SQL.owner),
      ownerTag: db.prepare(LIST_SQL.ownerTag),
      all: db.prepare(LIST_SQL.all),
      allTag: db.prepare(LIST_SQL.allTag),
    };
    this.#insertToken = db.prepare(
      `INSERT INTO tokens (hash, user, scopes, admin, name, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING *`,
    );
    this.#tokenByHash = db.prepare('SELECT * FROM tokens WHERE hash = ?');
    this.#tokens = db.prepare('SELECT * FROM tokens ORDER BY id');
    this.#revokeToken = db.prepare('UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL');

    const commit = db.transaction((writes: QueuedWrite[]) =>
      writes.map((w) => {
        try {
          return { ok: true as const, value: w.run() };
        } catch (error) {
          // A failed statement rolls back only itself; the others in the batch still commit.
          return { ok: false as const, error };
        }
      }),
    );
    this.#commitQueue = () => {
      const writes = this.#queue;
      this.#queue = [];
      let results;
      try {
        results = commit.immediate(writes);
      } catch (error) {
        for (const w of writes) w.reject(storeError(error));
        return;
      } finally {
        for (const w of writes) this.#cache.wrote(w.owner);
      }
      results.forEach((r, i) => (r.ok ? writes[i]?.resolve(r.value) : writes[i]?.reject(storeError(r.error))));
    };
  }

  /**
   * Group commit. Writes that arrive during one turn of the event loop (typically every request parsed
   * from the sockets that were readable together) run in one transaction: one fsync for all of them,
   * and each caller is answered only after that commit returned.
   */
  #write<T>(owner: string, run: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.#queue.push({ owner, run, resolve: resolve as (v: unknown) => void, reject }) === 1) {
        setImmediate(this.#commitQueue);
      }
    });
  }

  createPlant(owner: string, plant: NewPlant): Promise<CreateOutcome> {
    return this.#write(owner, () => {
      if (this.#insertPlant.run(owner, plant.id, plant.name, plant.tag ?? null).changes === 1) return 'created';
      // Same transaction as the insert, so the row that conflicted is still there.
      const stored = this.#findPlant.get(owner, plant.id);
      if (!stored) throw new Error('conflicting plant row not found');
      return samePlant(plantOfColumns(stored), plantOf(plant)) ? 'replayed' : 'conflict';
    });
  }

  async listPlants(query: ListQuery): Promise<PlantPage> {
    if (!this.#cache.enabled) return this.#readPage(query);
    const key = this.#cache.key(query);
    const cached = this.#cache.get(key);
    if (cached) return cached;
    const page = this.#readPage(query);
    this.#cache.set(query, key, page);
    return page;
  }

  #readPage({ owner, tag, after = 0, limit }: ListQuery): PlantPage {
    const rows =
      owner === null
        ? tag === undefined
          ? this.#list.all.all(after, limit + 1)
          : this.#list.allTag.all(tag, after, limit + 1)
        : tag === undefined
          ? this.#list.owner.all(owner, after, limit + 1)
          : this.#list.ownerTag.all(owner, tag, after, limit + 1);
    const more = rows.length > limit;
    if (more) rows.pop();
    const plants = rows.map(plantOfColumns);
    return { plants, next: more ? (rows[rows.length - 1]?.seq ?? null) : null };
  }

  deletePlant(owner: string, id: bigint): Promise<boolean> {
    return this.#write(owner, () => this.#deletePlant.run(owner, id).changes === 1);
  }

  async createToken(t: NewTokenRecord): Promise<TokenRecord> {
    const row = this.#insertToken.get(
      t.hash, t.user, t.scopes.join(' '), t.admin ? 1 : 0, t.name, Date.now(), t.expiresAt?.getTime() ?? null,
    );
    if (!row) throw new Error('token insert returned no row');
    return tokenOf(row);
  }

  async findTokenByHash(hash: string): Promise<TokenRecord | null> {
    const row = this.#tokenByHash.get(hash);
    return row ? tokenOf(row) : null;
  }

  async listTokens(): Promise<TokenRecord[]> {
    return this.#tokens.all().map(tokenOf);
  }

  async revokeToken(id: number): Promise<boolean> {
    return this.#revokeToken.run(Date.now(), id).changes === 1;
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
      try {
        this.#cursorKey = upsert.get('cursor', randomBytes(32), Date.now())?.value;
      } catch (error) {
        throw storeError(error);
      }
      if (this.#cursorKey === undefined) throw new Error('the cursor key upsert returned no row');
    }
    return this.#cursorKey;
  }

  async ping(): Promise<void> {
    this.#db.pragma('schema_version', { simple: true });
  }

  async close(): Promise<void> {
    if (!this.#db.open) return;
    if (this.#queue.length > 0) this.#commitQueue();
    this.#db.close();
    this.#lock?.close();
  }
}

function tokenOf(row: TokenRow): TokenRecord {
  return {
    id: row.id,
    user: row.user,
    scopes: row.scopes.split(' ').filter((s): s is Scope => isScope(s)),
    admin: row.admin === 1,
    name: row.name,
    createdAt: new Date(row.created_at),
    expiresAt: row.expires_at === null ? null : new Date(row.expires_at),
    revokedAt: row.revoked_at === null ? null : new Date(row.revoked_at),
  };
}
