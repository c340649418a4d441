import { copyFileSync, existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from './driver.js';
import { errno, named } from './errors.js';
import { INSPECT, migrationState, WEBHOOKS_MIGRATION, type StoreInspection, type WebhookHealth } from '../sql/inspect.js';

/** Bytes 18 and 19 of a SQLite file: its read and write versions, 2 in WAL mode, 1 in rollback-journal mode. */
const FORMAT_VERSIONS = 18;

/**
 * Opens the store for reading without creating anything beside it. A read-only connection to a store in
 * WAL mode creates its -wal and -shm files when they are not there, and leaves them behind; made by
 * root (a doctor run with sudo), they would stop the server from opening its own store. So:
 * - with both a -wal and a -shm there (a server has the store open, or did not close it cleanly), the
 *   connection uses them as any reader does, and sees what the server has committed;
 * - otherwise nobody has the store open (a server's connection keeps its -shm while it runs): the store
 *   is read into memory, marked as a rollback-journal database in that copy, and opened from there. A
 *   -wal without its -shm (a -shm removed after a crash, files copied one by one) holds commits the main
 *   file lacks, so it is first applied in a private temporary directory (closedImage).
 */
function openReadOnly(realPath: string): Database.Database {
  const wal = existsSync(`${realPath}-wal`);
  if (wal && existsSync(`${realPath}-shm`)) return new Database(realPath, { readonly: true, fileMustExist: true, timeout: 0 });
  const image = wal ? closedImage(realPath) : readFileSync(realPath);
  if (image.length > FORMAT_VERSIONS + 1) image.fill(1, FORMAT_VERSIONS, FORMAT_VERSIONS + 2);
  return new Database(image, { readonly: true });
}

/**
 * The store with its -wal applied, as one file's bytes. SQLite cannot open a -wal from memory, nor read
 * one without a -shm beside it without creating it (an exclusive locking mode would spare the -shm, but
 * needs a write lock a read-only file cannot take): so the two files are copied into a directory of this
 * process's own, checkpointed there, and that directory removed.
 */
function closedImage(realPath: string): Buffer {
  const dir = mkdtempSync(join(tmpdir(), 'plantstore-doctor-'));
  try {
    const copy = join(dir, 'store.db');
    copyFileSync(realPath, copy);
    copyFileSync(`${realPath}-wal`, `${copy}-wal`);
    const db = new Database(copy, { fileMustExist: true, timeout: 0 });
    try {
      db.pragma('wal_checkpoint(TRUNCATE)');
      db.pragma('journal_mode = DELETE');
    } finally {
      db.close();
    }
    return readFileSync(copy);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function webhookHealth(db: Database.Database): WebhookHealth {
  const counts = db.prepare(INSPECT.webhookCounts).get() as { pending: number; oldest: number | null; failed: number };
  const disabled = db.prepare(INSPECT.disabledEndpoints).all() as Array<{ id: string; disabled_at: number; disabled_reason: string | null }>;
  return {
    pending: counts.pending,
    oldestPending: counts.oldest === null ? null : new Date(counts.oldest),
    failed: counts.failed,
    disabledEndpoints: disabled.map((row) => ({ id: row.id, disabledAt: new Date(row.disabled_at), reason: row.disabled_reason })),
  };
}

export async function inspectSqlite(path: string): Promise<StoreInspection> {
  const absent: StoreInspection = { backend: 'sqlite', exists: false, serverVersion: null, ...migrationState('sqlite', []), webhooks: null };
  let realPath: string;
  try {
    realPath = realpathSync(path);
  } catch (error) {
    if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') return absent;
    throw error;
  }
  if (!statSync(realPath).isFile()) throw new Error(`the SQLite store ${named(path, realPath)} is not a file`);
  if (statSync(realPath).size === 0) return { ...absent, exists: true };
  let db: Database.Database;
  try {
    db = openReadOnly(realPath);
  } catch (error) {
    throw new Error(`cannot open the SQLite store ${named(path, realPath)}: ${(error as Error).message}`, { cause: error });
  }
  try {
    const tables = new Set(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[]);
    const applied = tables.has('schema_migrations') ? (db.prepare(INSPECT.migrations).pluck().all() as number[]) : [];
    const state = migrationState('sqlite', applied);
    return {
      backend: 'sqlite',
      exists: true,
      serverVersion: null,
      ...state,
      webhooks: applied.includes(WEBHOOKS_MIGRATION) ? webhookHealth(db) : null,
    };
  } catch (error) {
    throw new Error(`cannot read the SQLite store ${named(path, realPath)}: ${(error as Error).message}`, { cause: error });
  } finally {
    db.close();
  }
}
