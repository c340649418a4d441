import { closeSync, existsSync, fsyncSync, linkSync, openSync, realpathSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import Database from './driver.js';
import { errno, named, openFailure } from './errors.js';
import { storeFileProblem } from './own-files.js';
import { removeStaleTemporaries, temporaryPath } from '../temporary-files.js';
import type { BackupCopyMessage } from './workers/backup-copy.js';
import { startThread } from './workers/start.js';
import { revived } from './workers/thread.js';

export interface BackupOptions {
  /** Replace `out` if it exists (never the store itself or one of its companion files). */
  readonly force?: boolean;
  /** Told the pages to copy, the pages copied, and what is being done when that cannot be counted. */
  readonly progress?: BackupProgress | undefined;
}

export interface BackupProgress {
  total(pages: number): void;
  add(pages: number): void;
  phase(text: string): void;
}

export interface BackupResult {
  /** The copy's absolute path. */
  readonly path: string;
  readonly bytes: number;
  readonly plants: number;
  /** Temporary files that backups or exports killed before they could remove them had left beside `path`, now removed. */
  readonly removedTemporaries: readonly string[];
}

/** The real path of the store at `path`, which must exist: a backup never creates a store. */
function existingStore(path: string): string {
  try {
    const real = realpathSync(path);
    if (!statSync(real).isFile()) throw new Error(`the SQLite store ${named(path, real)} is not a file`);
    return real;
  } catch (error) {
    if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') throw new Error(`no SQLite store at ${path}: nothing to back up (check DATABASE_URL or --database-url)`);
    throw error;
  }
}

/**
 * Where the copy goes, checked before anything is copied: its directory must exist (a mistyped path
 * creates nothing), and it is neither the store nor a file SQLite or the server keeps beside it.
 */
function destination(out: string, store: string, force: boolean): string {
  const path = resolve(out);
  const dir = dirname(path);
  let realDir: string;
  try {
    realDir = realpathSync(dir);
    if (!statSync(realDir).isDirectory()) throw Object.assign(new Error(`${dir} is not a directory`), { code: 'ENOTDIR' });
  } catch (error) {
    throw new Error(`cannot write the backup to ${path}: its directory ${dir} ${errno(error) === 'ENOENT' ? 'does not exist' : `cannot be used (${(error as Error).message})`}`);
  }
  const real = join(realDir, basename(path));
  let target = real;
  try {
    target = realpathSync(real);
  } catch (error) {
    if (errno(error) !== 'ENOENT') throw new Error(`cannot write the backup to ${path}: ${(error as Error).message}`);
  }
  const own = storeFileProblem(out, store);
  if (own !== undefined) throw new Error(`cannot write the backup to ${path}: ${own}`);
  const existing = statSync(target, { throwIfNoEntry: false });
  if (existing?.isDirectory()) throw new Error(`cannot write the backup to ${path}: it is a directory; name a file in it`);
  // Renaming the copy over a device or a pipe would replace it with a plain file (/dev/null, for root).
  if (existing && !existing.isFile()) throw new Error(`cannot write the backup to ${path}: it is not a regular file (a device, a pipe or a socket)`);
  if (existing && !force) throw new Error(`${path} exists already; choose another file, or add --force to replace it`);
  return real;
}

function fsyncPath(path: string, flags = 'r'): void {
  const fd = openSync(path, flags);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * A consistent copy of the SQLite store at `path` in the file `out`, while a server may be writing to
 * it, through SQLite's online backup API. The copy is one read transaction's view of the store (WAL
 * content included), so it holds everything committed before the copy began, and is a database of its
 * own: rollback-journal mode, one file, checked with `PRAGMA integrity_check`, synced, then renamed into
 * place. Until then it is a hidden temporary file next to `out` (readable by its owner only, since it
 * holds token hashes and webhook secrets), removed if anything fails: `out` is never half written.
 * Those a killed backup or export left in that directory are removed first (temporary-files.ts).
 *
 * The store is opened as the CLI's other commands open it, without the server's lock; in WAL mode a
 * reader neither waits for the server's writes nor holds them up.
 */
/**
 * How long a backup waits for a store another connection holds locked (a store in rollback-journal mode
 * being written, or one held by a tool): as long as a write waits for the lock. A server's store (WAL)
 * never makes a reader wait.
 */
const LOCKED_WAIT_MS = 5000;

/**
 * `out` is absolute: the CLI resolves --out against its own working directory (io.cwd), which is not
 * this process's.
 */
export async function backupSqlite(path: string, out: string, { force = false, progress }: BackupOptions = {}): Promise<BackupResult> {
  const store = existingStore(path);
  const final = destination(out, store, force);
  // Opened here for what refuses it (not a database, not readable), said as the other commands say it;
  // the copy is made on a connection of its worker thread's (copyPages).
  let source: Database.Database | undefined;
  try {
    source = new Database(store, { fileMustExist: true, timeout: LOCKED_WAIT_MS });
  } catch (error) {
    throw openFailure(path, store, error);
  }
  const removedTemporaries = removeStaleTemporaries(dirname(final));
  const temporary = temporaryPath(final);
  let plants: number;
  try {
    // Created empty here, so that its mode is ours; SQLite takes an empty file as a new database.
    closeSync(openSync(temporary, 'wx', 0o600));
    const copied = await copyPages(store, temporary, progress);
    progress?.phase('checking the copy (integrity_check)');
    // A store another connection kept locked past LOCKED_WAIT_MS: SQLite's first step answered BUSY
    // before it counted a page, which better-sqlite3 takes for a finished copy of nothing.
    if (copied.totalPages === 0) throw new Error(`the store stayed locked by another connection for ${LOCKED_WAIT_MS / 1000} s (SQLITE_BUSY); try again`);
    source.close();
    source = undefined;
    plants = checkCopy(temporary);
    fsyncPath(temporary);
    if (force) renameSync(temporary, final);
    else placeWithoutReplacing(temporary, final);
  } catch (error) {
    source?.close();
    for (const leftover of [temporary, `${temporary}-journal`, `${temporary}-wal`, `${temporary}-shm`]) {
      try {
        unlinkSync(leftover);
      } catch {
        // Not there: nothing to remove.
      }
    }
    if (errno(error) === 'EEXIST') throw new Error(`${final} appeared while the backup was made; it was left as it is`);
    const code = (error as { code?: unknown }).code;
    const detail = typeof code === 'string' && code.startsWith('SQLITE_') ? `${(error as Error).message} (${code})` : (error as Error).message;
    throw new Error(
      `the backup to ${final} failed, and nothing was left there: ${detail}. Check that the directory can be written, ` +
        'that the disk has room for a copy as large as the store, and that the store is sound',
      { cause: error },
    );
  }
  // The copy is in place; the rename is durable once its directory is.
  fsyncPath(dirname(final));
  return { path: final, bytes: statSync(final).size, plants, removedTemporaries };
}

/** How often the pages written into the copy are counted while it is made. */
const COUNT_EVERY_MS = 250;

/**
 * Copies the store at `store` into `temporary` in a worker thread (workers/backup-copy.ts, which says
 * why); resolves with the pages copied.
 */
async function copyPages(store: string, temporary: string, progress: BackupProgress | undefined): Promise<{ totalPages: number }> {
  const worker = startThread('backup-copy', { store, temporary, timeoutMs: LOCKED_WAIT_MS });
  let pageSize = 0;
  let counted = 0;
  const count = (pages: number) => {
    if (pages > counted) progress?.add(pages - counted);
    counted = Math.max(counted, pages);
  };
  // The copy's size grows as SQLite writes its pages out: what has been copied so far.
  const timer = setInterval(() => {
    if (pageSize > 0) count(Math.floor((statSync(temporary, { throwIfNoEntry: false })?.size ?? 0) / pageSize));
  }, COUNT_EVERY_MS);
  try {
    const answer = await new Promise<Exclude<BackupCopyMessage, { started: unknown }>>((resolve, reject) => {
      worker.on('message', (message: BackupCopyMessage) => {
        if (!('started' in message)) return resolve(message);
        pageSize = message.started.pageSize;
        progress?.total(message.started.totalPages);
      });
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the backup's worker thread exited with code ${code}`)));
    });
    if ('error' in answer) throw revived(answer.error);
    count(answer.copied.totalPages);
    return answer.copied;
  } finally {
    clearInterval(timer);
    await worker.terminate();
  }
}

/** Gives `temporary` the name `final` unless a file took that name meanwhile (then EEXIST). */
function placeWithoutReplacing(temporary: string, final: string): void {
  try {
    // link, unlike rename, refuses a file that is there instead of replacing it.
    linkSync(temporary, final);
  } catch (error) {
    // A file system without hard links (FAT, some network mounts): check, then rename.
    if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS'].includes(errno(error) ?? '')) throw error;
    if (existsSync(final)) throw Object.assign(new Error(`${final} exists`), { code: 'EEXIST' });
    renameSync(temporary, final);
    return;
  }
  unlinkSync(temporary);
}

/**
 * Makes the copy a standalone rollback-journal database (the store is in WAL mode, and its header says
 * so), checks it whole, and counts its plants.
 */
function checkCopy(path: string): number {
  const copy = new Database(path, { fileMustExist: true });
  try {
    const mode = copy.pragma('journal_mode = DELETE', { simple: true });
    if (mode !== 'delete') throw new Error(`the copy refused rollback-journal mode (got ${String(mode)})`);
    const problems = copy.pragma('integrity_check(5)', { simple: false }) as Array<{ integrity_check: string }>;
    const found = problems.map((row) => row.integrity_check);
    if (found.join() !== 'ok') throw new Error(`the copy failed PRAGMA integrity_check: ${found.join('; ')}`);
    return copy.prepare('SELECT count(*) FROM plants').pluck().get() as number;
  } finally {
    copy.close();
  }
}
