import { userInfo } from 'node:os';
import { dirname } from 'node:path';
import { StoreUnavailableError } from '../store.js';

/** better-sqlite3 reports SQLite's extended result codes (SQLITE_IOERR_FSYNC, SQLITE_READONLY_DBMOVED, …). */
function sqliteCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

/** A Node file-system error's code (ENOENT, EEXIST, …), if it has one. */
export function errno(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}

/** Another connection holds the lock this one needs; waiting may help. */
export function isBusy(error: unknown): boolean {
  return /^SQLITE_(BUSY|LOCKED)/.test(sqliteCode(error));
}

/**
 * The store cannot be written here and now: a file or directory the server may not write, a read-only
 * or failing disk, a full one. Not the request's fault and not a bug, so 503 rather than 500, and the
 * same request succeeds once an operator has fixed the disk.
 */
export function isUnwritable(error: unknown): boolean {
  return /^SQLITE_(READONLY|CANTOPEN|IOERR|FULL|PERM|NOLFS|PROTOCOL)/.test(sqliteCode(error));
}

function isCorrupt(error: unknown): boolean {
  return /^SQLITE_(CORRUPT|NOTADB)/.test(sqliteCode(error));
}

/** What a request sees: the transient failures become StoreUnavailableError (503 50300), the rest stay as they are (500). */
export function storeError(error: unknown): unknown {
  return isBusy(error) || isUnwritable(error) ? new StoreUnavailableError(error) : error;
}

function reasonOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Who the server runs as, for messages about permissions. */
export function currentUser(): string {
  try {
    return `user ${userInfo().username}`;
  } catch {
    // No passwd entry for this uid (common in containers).
    return `uid ${process.getuid?.() ?? '?'}`;
  }
}

/** The store's path as configured, and where it really is when that differs (a symlink). */
export function named(path: string, realPath: string): string {
  return path === realPath ? path : `${path} (${realPath})`;
}

export function corruptStore(path: string, realPath: string, problems: string): Error {
  return new Error(
    `the SQLite store ${named(path, realPath)} is not a valid database or is corrupt (${problems}); ` +
      'restore it from a backup, or point DATABASE_URL at another file',
  );
}

/**
 * Why a store could not be opened, in words that name the file and what to do. Start-up prints this
 * and exits 1, so it must make sense without a stack trace.
 */
export function openFailure(path: string, realPath: string, error: unknown): Error {
  // Our own errors (StoreLockedError, a corrupt store, …) already say what is wrong.
  if (sqliteCode(error) === '') return error instanceof Error ? error : new Error(String(error));
  const where = named(path, realPath);
  if (isCorrupt(error)) return corruptStore(path, realPath, reasonOf(error));
  if (isBusy(error)) {
    return new StoreUnavailableError(new Error(`another process kept the SQLite store ${where} locked while it was opening (${reasonOf(error)}); try again`));
  }
  if (isUnwritable(error)) {
    return new Error(
      `cannot open the SQLite store ${where} for writing (${reasonOf(error)}): ${currentUser()} must be able to read and ` +
        `write it and to create files in ${dirname(realPath)}, on a disk that is writable and not full`,
      { cause: error },
    );
  }
  return new Error(`cannot open the SQLite store ${where}: ${reasonOf(error)}`, { cause: error });
}
