import type Database from './driver.js';
import { isBusy, isUnwritable, storeError } from './errors.js';
import { StoreUnavailableError } from '../store.js';
import type { WalSync } from './wal.js';

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

/** A batch committed, its callers not yet answered: waiting for the WAL sync that makes it durable. */
interface CommittedBatch {
  readonly writes: QueuedWrite[];
  readonly outcomes: Outcome[];
  /** Needs a sync of its own (a durable write among its writes); otherwise only the syncs of those before it. */
  readonly durable: boolean;
  /** A write of the batch called `wakeAfterCommit`: `afterCommit` is called once it is answered. */
  readonly wake: boolean;
  /** The last feed event the batch wrote (`feedWritten`), told to `feedDurable` once it is answered. */
  readonly feed: bigint | undefined;
}

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
  /** Writes committed and synced, none failed for that reason. */
  committed(): void;
  /** A batch of `writes` writes ended: committed (true) or rolled back (false), after its callers were answered. */
  settled?(committed: boolean, writes: number): void;
  /**
   * After a committed batch in which a write called `wakeAfterCommit` (it queued webhook events), once its
   * callers were answered and `settled` was told: the dispatcher looks now, not at its next poll.
   */
  afterCommit?(): void;
  /**
   * After a committed batch that wrote feed events, once its callers were answered: `pos` is the last
   * of them, and every event up to it is now as durable as the creates it reports.
   */
  feedDurable?(pos: bigint): void;
}

/**
 * Group commit. Writes that arrive during one turn of the event loop (typically every request parsed
 * from the sockets that were readable together) run in one transaction, and each caller is answered only
 * once that transaction is durable.
 *
 * Durable without blocking the event loop: a batch commits with synchronous=NORMAL (in WAL mode the
 * frames are written, not synced), then the WAL is synced with fdatasync in a thread of its own (WalSync)
 * while the event loop goes on serving, and the batch's callers are answered when that sync returns. One
 * sync is in flight at a time; the batches committed meanwhile share the next one. Each write queued
 * and each commit first asks the sync whether it has returned (WalSync.poll), so that under load a
 * batch is answered, and the next sync started, within the turn the sync returned in. With
 * synchronous=FULL, SQLite's COMMIT would make the same fdatasync inside the call, the event loop
 * waiting on the disk. What a power loss can take is the same: only writes not yet answered. What
 * differs: between its commit and its sync, a batch's writes are visible to reads (a list can show a
 * plant whose create is not answered yet, as with any concurrent request), and if the sync fails the
 * callers get 503 for writes that are committed (a retried create answers 200, replayed).
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
  readonly #wal: WalSync;
  /** Committed batches whose callers wait for a sync, in commit order; the first is always durable. */
  #unsynced: CommittedBatch[] = [];
  #syncing = false;
  /** Bumped by close, which syncs and answers everything itself: a sync still in flight then changes nothing. */
  #generation = 0;
  /** A write of the running batch called `wakeAfterCommit`. */
  #wake = false;
  /** The last feed event a write of the running batch wrote. */
  #feed: bigint | undefined;

  constructor(db: Database.Database, busyTimeoutMs: number, events: WriteQueueEvents, wal: WalSync) {
    this.#db = db;
    this.#busyTimeoutMs = busyTimeoutMs;
    this.#events = events;
    this.#wal = wal;
    this.#begin = db.prepare('BEGIN IMMEDIATE');
    this.#commit = db.prepare('COMMIT');
    this.#rollback = db.prepare('ROLLBACK');
  }

  /**
   * Queues a write for the next group commit. A `durable: false` write (webhook bookkeeping: claims,
   * attempt results) needs to survive a crash of this process but not a power loss, since losing it
   * only repeats a delivery: a batch of such writes alone needs no sync of its own (the OS has the pages;
   * the next sync covers them too, the WAL being written in order), but it is answered only after every
   * durable batch committed before it is synced, so that nothing acts on a write a power loss could
   * still take (a claim on the events of a create not yet durable).
   */
  add<T>(run: () => T, { durable = true }: { durable?: boolean } = {}): Promise<T> {
    // A sync in flight may have finished: its batches are answered now rather than at the loop's next turn.
    if (this.#syncing) this.#wal.poll();
    const unavailable = this.#events.unavailable();
    if (unavailable) return Promise.reject(new StoreUnavailableError(unavailable));
    return new Promise<T>((resolve, reject) => {
      if (this.#queue.push({ run, resolve: resolve as (v: unknown) => void, reject, deadline: undefined, durable }) === 1) {
        setImmediate(this.#flush);
      }
    });
  }

  /**
   * Called by a write while it runs (it queued webhook events): once its batch is committed and answered,
   * `afterCommit` is called, once per batch however many of its writes called this.
   */
  wakeAfterCommit(): void {
    this.#wake = true;
  }

  /**
   * Called by a write that wrote a feed event (store/sqlite/feed.ts), as its last step: the feed reads no
   * further than the last event of a batch told to `feedDurable`, so no event reaches a subscriber
   * before the write that made it is durable.
   */
  feedWritten(pos: bigint): void {
    this.#feed = pos;
  }

  /**
   * One last try for the writes still queued (those that find the lock taken fail at once), then one
   * blocking sync for every committed batch still waiting, so that nobody is left waiting.
   */
  close(): void {
    clearTimeout(this.#retry);
    this.#closing = true;
    this.#commitBatch();
    this.#generation++;
    this.#syncing = false;
    this.#wal.close();
    if (this.#unsynced.length === 0) return;
    const batches = this.#unsynced;
    this.#unsynced = [];
    try {
      this.#wal.syncNow();
    } catch (error) {
      return this.#syncFailed(batches, error);
    }
    for (const batch of batches) this.#answer(batch);
  }

  #commitBatch(): void {
    this.#retry = undefined;
    const writes = this.#queue;
    this.#queue = [];
    if (writes.length === 0) return;
    const unavailable = this.#events.unavailable();
    if (unavailable) return this.#fail(writes, new StoreUnavailableError(unavailable));
    // NORMAL for the batch only (the sync follows, off the event loop); every other commit on the
    // connection (the probe, the cursor key, migrations) stays FULL. Not prepared statements: SQLite
    // applies `PRAGMA synchronous = …` when it prepares the statement, so running a prepared one again
    // does not reliably set it.
    try {
      this.#db.exec('PRAGMA synchronous = NORMAL');
    } catch (error) {
      return this.#fail(writes, error);
    }
    try {
      this.#commitWrites(writes);
    } finally {
      if (!this.#db.inTransaction) this.#db.exec('PRAGMA synchronous = FULL');
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
    const wake = this.#wake;
    this.#wake = false;
    const feed = this.#feed;
    this.#feed = undefined;
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
    const batch: CommittedBatch = { writes, outcomes, durable: writes.some((w) => w.durable), wake, feed };
    // A batch that needs no sync and follows none waiting for one is answered at once.
    if (!batch.durable && this.#unsynced.length === 0) return this.#answer(batch);
    this.#unsynced.push(batch);
    this.#sync();
  }

  /** Starts a sync of the WAL for the batches waiting, unless one is in flight (it is started again when that returns). */
  #sync(): void {
    // The sync in flight may have finished by now (see WalSync.poll): its callback then starts the next,
    // which covers the batch just committed too.
    if (this.#syncing) return this.#wal.poll();
    if (this.#unsynced.length === 0) return;
    this.#syncing = true;
    const covered = this.#unsynced.length;
    const generation = this.#generation;
    this.#wal.sync((error) => {
      if (generation !== this.#generation) return;
      this.#syncing = false;
      if (error) {
        // What follows the batches covered was written after them and is no safer: all fail.
        const batches = this.#unsynced;
        this.#unsynced = [];
        return this.#syncFailed(batches, error);
      }
      for (const batch of this.#unsynced.splice(0, covered)) this.#answer(batch);
      // Batches of non-durable writes that now follow no unsynced batch need no sync of their own.
      while (this.#unsynced[0]?.durable === false) this.#answer(this.#unsynced.shift() as CommittedBatch);
      this.#sync();
    });
  }

  /** Answers the callers of a committed (and, where needed, synced) batch. */
  #answer({ writes, outcomes, wake, feed }: CommittedBatch): void {
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
    this.#settled(wake, writes.length, feed);
  }

  /** A committed batch was answered (its writes may still have failed, see #syncFailed). */
  #settled(wake: boolean, writes: number, feed: bigint | undefined): void {
    this.#events.settled?.(true, writes);
    if (wake) this.#events.afterCommit?.();
    if (feed !== undefined) this.#events.feedDurable?.(feed);
  }

  /**
   * The WAL could not be synced: whether these committed batches would survive a power loss is unknown,
   * so their writes fail with 503 (a retried create then finds its plant and answers 200). Their
   * writes are committed and visible all the same: `settled` says committed.
   */
  #syncFailed(batches: CommittedBatch[], error: unknown): void {
    this.#events.cannotWrite(error);
    const failure = new StoreUnavailableError(error);
    // Their events are committed too, and the next sync covers them: the feed may go on past them.
    for (const { writes, outcomes, wake, feed } of batches) {
      outcomes.forEach((o, i) => writes[i]?.reject(o.ok ? failure : storeError(o.error)));
      this.#settled(wake, writes.length, feed);
    }
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
