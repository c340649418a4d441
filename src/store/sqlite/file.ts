import { lstatSync, mkdirSync, readlinkSync, realpathSync, stat, statSync, type BigIntStats } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import Database from './driver.js';
import { corruptStore, currentUser, errno, isBusy, named, openFailure } from './errors.js';
import type { QuickCheckAnswer } from './workers/quick-check.js';
import { startThread } from './workers/start.js';
import { revived } from './workers/thread.js';

/**
 * Creates the store's directory and its missing parents. Not `mkdirSync(dir, { recursive: true })`:
 * Node 20's recursive mkdir loops forever, at 100% CPU and deaf to SIGTERM, when mkdir answers ENOENT
 * under a directory that exists (`sqlite:/proc/nope/x.db`). One mkdir per missing level fails at once.
 */
function makeDirectory(path: string, dir: string): void {
  const missing: string[] = [];
  for (let d = dir; ; d = dirname(d)) {
    try {
      if (!statSync(d).isDirectory()) throw new Error(`${d} is not a directory`);
      break;
    } catch (error) {
      if (errno(error) !== 'ENOENT' || dirname(d) === d) {
        throw new Error(`cannot use the directory of the SQLite store ${path}: ${(error as Error).message}`, { cause: error });
      }
      missing.push(d);
    }
  }
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d);
    } catch (error) {
      if (errno(error) === 'EEXIST' && statSync(d).isDirectory()) continue; // made by someone else meanwhile
      throw new Error(`cannot create the directory ${d} for the SQLite store ${path}: ${(error as Error).message}`, { cause: error });
    }
  }
}

/** Symbolic links followed at most, as the kernel does (MAXSYMLINKS). */
const MAX_LINKS = 40;

/**
 * The file the path names once every symlink and `..` is resolved, creating its directory if needed.
 * Everything else (the server lock above all) goes by this name, so that two spellings of one file,
 * a symlink included, are one store. A path with nothing there yet resolves through its directory;
 * a dangling symlink through its target, which is where SQLite would create the file.
 * Hard links are not caught: SQLite itself does not support them (its journal is named after the path).
 */
export function prepareStorePath(path: string): string {
  let current = path;
  for (let links = 0; links <= MAX_LINKS; links++) {
    makeDirectory(path, dirname(current));
    let real: string | undefined;
    try {
      real = realpathSync(current);
    } catch (error) {
      if (errno(error) !== 'ENOENT') throw openFailure(path, current, error);
    }
    if (real !== undefined) {
      if (statSync(real).isDirectory()) {
        throw new Error(`the SQLite store ${path} is a directory; DATABASE_URL must name a file, e.g. sqlite:${join(path, 'plantstore.db')}`);
      }
      return real;
    }
    // Nothing there, or a symlink to nothing: SQLite would create the file where the link points.
    const link = lstatSync(current, { throwIfNoEntry: false })?.isSymbolicLink() ? readlinkSync(current) : undefined;
    if (link === undefined) return join(realpathSync(dirname(current)), basename(current));
    current = resolve(dirname(current), link);
  }
  throw new Error(`the SQLite store ${path} is a chain of more than ${MAX_LINKS} symbolic links`);
}

export class StoreLockedError extends Error {}

/**
 * One server per SQLite store. Its writes are then the only writes to plants (the CLI writes tokens
 * only), which is what lets the list cache (list-cache.ts) invalidate exactly without asking SQLite on every read;
 * several instances belong on PostgreSQL. The lock is SQLite's own exclusive lock on a sibling file of
 * the real path, held as long as the connection is open: the operating system releases it however the
 * process ends, kill -9 included, so a crash never leaves a stale lock behind.
 *
 * The lock is taken by a write: in exclusive locking mode the first write takes the exclusive lock and
 * keeps it. A plain BEGIN EXCLUSIVE would not do: SQLite silently opens a file it may not write
 * read-only, and a read-only connection "locks" nothing, so a second server would start.
 */
export function takeServerLock(path: string, realPath: string): Database.Database {
  const lockPath = `${realPath}.lock`;
  let lock: Database.Database | undefined;
  try {
    // timeout 0: another server holds it for as long as it runs, so waiting would only delay the refusal.
    lock = new Database(lockPath, { timeout: 0 });
    lock.pragma('locking_mode = EXCLUSIVE');
    // Nothing in this file is worth a rollback journal on disk, which exclusive mode would leave lying
    // next to it (OFF is refused: better-sqlite3 runs SQLite in defensive mode).
    lock.pragma('journal_mode = MEMORY');
    lock.pragma('user_version = 1');
    return lock;
  } catch (error) {
    lock?.close();
    if (isBusy(error)) {
      throw new StoreLockedError(
        `another plantstore server is serving ${path} (it holds ${lockPath}); stop it first, or use PostgreSQL to run several instances`,
      );
    }
    throw new Error(
      `cannot take the server lock ${lockPath} for the SQLite store ${named(path, realPath)} (${(error as Error).message}): ` +
        `${currentUser()} must be able to create and write that file`,
      { cause: error },
    );
  }
}

/**
 * Refuses a store that fails `PRAGMA quick_check` (b-tree structure, page and record format; not the
 * slower cross-checks of integrity_check), so that a damaged file stops start-up with a message
 * instead of answering 500 on the pages that happen to be broken. In a worker thread
 * (workers/quick-check.ts), so that the server keeps answering /healthz meanwhile: about 0.5 s per
 * million plants from the page cache.
 */
export async function quickCheck(path: string, realPath: string): Promise<void> {
  const worker = startThread('quick-check', { path: realPath });
  const answer = await new Promise<QuickCheckAnswer>((resolvePromise, reject) => {
    worker.once('message', resolvePromise);
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the quick_check worker exited with code ${code}`)));
  });
  if ('error' in answer) throw openFailure(path, realPath, revived(answer.error));
  if (answer.problems.join() === 'ok') return;
  // One line for the start-up message: rows may hold several lines, the first naming the schema.
  const lines = answer.problems.flatMap((p) => p.split('\n')).filter((l) => l !== '' && !l.startsWith('*** in database'));
  throw corruptStore(path, realPath, `PRAGMA quick_check: ${lines.slice(0, 3).join('; ')}${lines.length > 3 ? '; …' : ''}`);
}

export interface FileIdentity {
  readonly dev: bigint;
  readonly ino: bigint;
}

/** Device and inode of the file at `path` now; bigint, since inode numbers may exceed 2^53. */
export function identityOf(path: string): FileIdentity {
  const { dev, ino } = statSync(path, { bigint: true });
  return { dev, ino };
}

/**
 * Calls `changed` with a description whenever the file at `path` stops being (or becomes again) the
 * file `identity` names: deleted, moved away, or replaced by a rename. SQLite keeps writing to the file
 * it opened, so without this a server would go on acknowledging writes into a file nobody can open
 * any more. One asynchronous stat a second, on a timer that does not keep the process alive.
 */
export function watchIdentity(path: string, identity: FileIdentity, intervalMs: number, changed: (problem: string | undefined) => void): () => void {
  let last: string | undefined;
  let stopped = false;
  const check = () =>
    stat(path, { bigint: true }, (error: NodeJS.ErrnoException | null, now: BigIntStats) => {
      if (stopped) return;
      let problem: string | undefined;
      if (error) {
        // Anything but "not there" (EACCES on a directory, EIO) says nothing about which file is there.
        if (errno(error) !== 'ENOENT' && errno(error) !== 'ENOTDIR') return;
        problem = 'was deleted or moved away';
      } else if (now.dev !== identity.dev || now.ino !== identity.ino) {
        problem = 'was replaced by another file';
      }
      if (problem !== last) changed(problem);
      last = problem;
    });
  const timer = setInterval(check, intervalMs);
  timer.unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
