import type { Logger } from 'pino';
import type Database from './driver.js';
import { currentUser, isUnwritable, named, storeError } from './errors.js';
import { StoreUnavailableError, type StoreObserver } from '../store.js';

/** While the store cannot be written, /readyz tries a write at most this often. */
const PROBE_INTERVAL_MS = 1000;

export interface StoreFile {
  /** As configured, for messages. */
  readonly path: string;
  readonly realPath: string;
  readonly busyTimeoutMs: number;
  readonly logger: Logger | undefined;
  readonly observer: StoreObserver | undefined;
}

/**
 * Whether a SQLite store may be read and written now, shared by its facets: the file may be lost (deleted
 * or moved while the server runs) or closed, when nothing may be read or written; and the last write may
 * have failed because the file cannot be written (read-only, disk full, I/O error), which /readyz reports
 * until a write succeeds.
 */
export class FileState {
  readonly file: StoreFile;
  readonly #db: Database.Database;
  /** Why nothing may be read or written (the file was deleted, or the store closed); ping, reads and writes fail with 503. */
  #unavailable: Error | undefined;
  /** The last write failed because the store cannot be written; /readyz says so. */
  #unwritable: { error: unknown; probedAt: number } | undefined;
  /** Rewrites one row as it is, in a transaction of its own. */
  readonly probe: () => void;

  constructor(db: Database.Database, file: StoreFile) {
    this.#db = db;
    this.file = file;
    // A real write and fsync, the only way to learn whether the file can be written (a file SQLite
    // opened read-only still begins transactions).
    const touch = db.prepare('UPDATE schema_migrations SET applied_at = applied_at WHERE version = (SELECT max(version) FROM schema_migrations)');
    const probe = db.transaction(() => touch.run());
    this.probe = () => probe.immediate();
  }

  /** Why nothing may be written now, or undefined (the write queue asks before each batch). */
  get unavailable(): Error | undefined {
    return this.#unavailable;
  }

  /** Throws StoreUnavailableError when reads are refused now (the file is lost, the store closed). */
  assertReadable(): void {
    if (this.#unavailable) throw new StoreUnavailableError(this.#unavailable);
  }

  /** A read outside the write queue: refused while the store is unavailable, SQLite's failures as store errors. */
  read<T>(read: () => T): T {
    this.assertReadable();
    try {
      return read();
    } catch (error) {
      throw storeError(error);
    }
  }

  closed(): void {
    this.#unavailable = new Error('the store is closed');
  }

  fileChanged(problem: string | undefined): void {
    const where = named(this.file.path, this.file.realPath);
    if (problem === undefined) {
      this.#unavailable = undefined;
      this.file.logger?.info({ path: this.file.realPath }, `the SQLite store ${where} is back at its path; serving again`);
      return;
    }
    this.#unavailable = new Error(`the SQLite store ${where} ${problem} while the server was running`);
    const proc = process.platform === 'linux'
      ? ` (until this process ends, a deleted file stays readable through /proc/${process.pid}/fd: see ls -l /proc/${process.pid}/fd)`
      : '';
    this.file.logger?.error(
      { path: this.file.realPath },
      `${this.#unavailable.message}. This server now answers 503 to every request that needs the store, reports unready, ` +
        'and writes nothing more. If the file was moved, moving it back lets the server recover by itself; otherwise stop ' +
        `the server, restore the store from a backup${proc}, and start it again: started as it is, it would begin on a new, empty store.`,
    );
  }

  cannotWrite(error: unknown): void {
    const first = this.#unwritable === undefined;
    this.#unwritable = { error, probedAt: performance.now() };
    if (!first) return;
    this.file.logger?.error(
      { path: this.file.realPath, err: error },
      `cannot write the SQLite store ${named(this.file.path, this.file.realPath)} (${(error as Error).message}): writes answer 503 ` +
        `and /readyz reports unready until a write succeeds. Check that ${currentUser()} may write the file and its directory ` +
        '(a file opened read-only needs a restart of the server), and that the disk is writable and has room.',
    );
  }

  /** A write committed: the store can be written again, if it could not. */
  committed(): void {
    if (this.#unwritable) this.#canWrite();
  }

  #canWrite(): void {
    this.#unwritable = undefined;
    this.file.logger?.info({ path: this.file.realPath }, `the SQLite store ${named(this.file.path, this.file.realPath)} can be written again`);
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
        this.probe();
      } catch (error) {
        if (isUnwritable(error)) this.cannotWrite(error);
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
}
