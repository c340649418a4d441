import type Database from './sqlite-driver.js';
import { isBusy, isUnwritable, storeError } from './sqlite-errors.js';
import { StoreUnavailableError } from './store.js';

interface QueuedWrite {
  run(): unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
  /** Set when the write first finds the lock taken: past this, it fails with 503 instead of waiting on. */
  deadline: number | undefined;
  /** Must survive power loss once resolved (see `add`). */
  readonly durable: boolean;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/**
 * While another process holds the write lock, the queue tries again after 1 ms, doubling up to 50 ms:
 * a CLI command holds the lock for a few milliseconds, so most waits end within the first tries, and a
 * long one costs at most 20 attempts a second.
 */
export const FIRST_RETRY_MS = 1;
export const MAX_RETRY_MS = 50;

export interface WriteQueueEvents {
  /** Why nothing may be written now (the file is lost, the store closed), or undefined. */
  unavailable(): Error | undefined;
  /** A write failed because the store cannot be written (read-only, disk full, I/O error). */
  cannotWrite(error: unknown): void;
  /** Writes committed, none failed for that reason. */
  committed(): void;
  /**
   * A batch of `writes` writes ended: committed (true) or rolled back (false). Called after the callers
   * of a committed batch were answered, so that what the writes noted for after the commit happens then.
   */
  settled?(committed: boolean, writes: number): void;
}

/**
 * Group commit. Writes that arrive during one turn of the event loop (typically every request parsed
 * from the sockets that were readable together) run in one transaction: one fsync for all of them, and
 * each caller is answered only after that commit returned.
 *
 * The connection runs with busy_timeout 0, since SQLite's busy handler would sleep inside the call and
 * block the event loop. A batch that finds the write lock taken stays queued and is tried again on a
 * timer; later writes queue behind it in order, and each write that has waited `busyTimeoutMs` since
 * its first try fails with StoreUnavailableError (503).
 */
export class WriteQueue {
  readonly #db: Database.Database;
  readonly #busyTimeoutMs: number;
  readonly #events: WriteQueueEvents;
  readonly #begin: Database.Statement<[]>;
  readonly #commit: Database.Statement<[]>;
  readonly #rollback: Database.Statement<[]>;
  #queue: QueuedWrite[] = [];
  /** An arrow function in a field, so that it can be handed to setImmediate/setTimeout as it is. */
  readonly #flush = () => this.#commitBatch();
  /** Waiting for another process's write lock: the timer of the next try. */
  #retry: NodeJS.Timeout | undefined;
  #retryMs = FIRST_RETRY_MS;
  #closing = false;
  readonly #syncFull: Database.Statement<[]>;
  readonly #syncNormal: Database.Statement<[]>;

  constructor(db: Database.Database, busyTimeoutMs: number, events: WriteQueueEvents) {
    this.#db = db;
    this.#busyTimeoutMs = busyTimeoutMs;
    this.#events = events;
    this.#begin = db.prepare('BEGIN IMMEDIATE');
    this.#commit = db.prepare('COMMIT');
    this.#rollback = db.prepare('ROLLBACK');
    this.#syncFull = db.prepare('PRAGMA synchronous = FULL');
    this.#syncNormal = db.prepare('PRAGMA synchronous = NORMAL');
  }

  /**
   * Queues a write for the next group commit. A `durable: false` write (webhook bookkeeping: claims,
   * attempt results) needs to survive a crash of this process but not a power loss, since losing it
   * only repeats a delivery: a batch of such writes alone commits with synchronous=NORMAL, which in WAL
   * mode skips the fsync (the OS still has the pages; the next durable commit syncs them too, the WAL
   * being written in order). Any durable write in the batch makes it a FULL commit, as always.
   */
  add<T>(run: () => T, { durable = true }: { durable?: boolean } = {}): Promise<T> {
    const unavailable = this.#events.unavailable();
    if (unavailable) return Promise.reject(new StoreUnavailableError(unavailable));
    return new Promise<T>((resolve, reject) => {
      if (this.#queue.push({ run, resolve: resolve as (v: unknown) => void, reject, deadline: undefined, durable }) === 1) {
        setImmediate(this.#flush);
      }
    });
  }

  /** One last try for the writes still queued; those that find the lock taken fail at once. */
  close(): void {
    clearTimeout(this.#retry);
    this.#closing = true;
    this.#commitBatch();
  }

  #commitBatch(): void {
    this.#retry = undefined;
    const writes = this.#queue;
    this.#queue = [];
    if (writes.length === 0) return;
    const unavailable = this.#events.unavailable();
    if (unavailable) return this.#fail(writes, new StoreUnavailableError(unavailable));
    // Only for this batch: every other commit on the connection (the probe, the cursor key) stays FULL.
    const relaxed = !writes.some((w) => w.durable);
    if (relaxed) this.#syncNormal.run();
    try {
      this.#commitWrites(writes);
    } finally {
      if (relaxed && !this.#db.inTransaction) this.#syncFull.run();
    }
  }

  #commitWrites(writes: QueuedWrite[]): void {
    try {
      this.#begin.run();
    } catch (error) {
      // Nothing was written, so no cached page is dropped.
      return isBusy(error) ? this.#waitForLock(writes, error) : this.#fail(writes, error);
    }
    this.#retryMs = FIRST_RETRY_MS;
    const outcomes: Outcome[] = [];
    let aborted: unknown;
    for (const w of writes) {
      if (aborted !== undefined) {
        outcomes.push({ ok: false, error: aborted });
        continue;
      }
      try {
        outcomes.push({ ok: true, value: w.run() });
      } catch (error) {
        // A failed statement rolls back only itself and the others still commit, unless SQLite rolled
        // back the whole transaction (disk full, I/O error): the rest would then commit one by one.
        outcomes.push({ ok: false, error });
        if (!this.#db.inTransaction) aborted = error;
      }
    }
    try {
      if (aborted === undefined) this.#commit.run();
    } catch (error) {
      aborted = error;
      if (this.#db.inTransaction) this.#rollback.run();
    }
    if (aborted !== undefined) {
      this.#fail(writes, aborted);
      return this.#events.settled?.(false, writes.length);
    }
    let cannotWrite: unknown;
    let committed = false;
    outcomes.forEach((o, i) => {
      if (o.ok) {
        committed = true;
        return writes[i]?.resolve(o.value);
      }
      if (isUnwritable(o.error)) cannotWrite = o.error;
      writes[i]?.reject(storeError(o.error));
    });
    if (cannotWrite !== undefined) this.#events.cannotWrite(cannotWrite);
    else if (committed) this.#events.committed();
    this.#events.settled?.(true, writes.length);
  }

  #fail(writes: QueuedWrite[], error: unknown): void {
    if (isUnwritable(error)) this.#events.cannotWrite(error);
    const failure = storeError(error);
    for (const w of writes) w.reject(failure);
  }

  /** Another process holds the write lock: fail the writes that waited long enough, try the rest again soon. */
  #waitForLock(writes: QueuedWrite[], busy: unknown): void {
    const now = performance.now();
    const waiting: QueuedWrite[] = [];
    for (const w of writes) {
      w.deadline ??= now + this.#busyTimeoutMs;
      if (w.deadline <= now || this.#closing) w.reject(new StoreUnavailableError(busy));
      else waiting.push(w);
    }
    // Deadlines grow along the queue, so the first is the nearest.
    const first = waiting[0];
    if (first?.deadline === undefined) return;
    // Nothing was queued meanwhile (all of this is synchronous), so the order is kept.
    this.#queue = waiting;
    this.#retry = setTimeout(this.#flush, Math.min(this.#retryMs, first.deadline - now));
    this.#retryMs = Math.min(this.#retryMs * 2, MAX_RETRY_MS);
  }
}
