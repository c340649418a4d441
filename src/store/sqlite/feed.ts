import { type FeedEvent, type FeedPosition } from '../../domain/feed.js';
import { webhookBody, WEBHOOK_BODY } from '../../domain/webhook.js';
import type { NewPlant } from '../../domain/plant.js';
import { SQLITE } from '../sql/dialect.js';
import { wireJsonSql } from '../sql/wire.js';
import type { FeedBounds, FeedRead, FeedStore } from '../store.js';
import type Database from './driver.js';
import { storeError } from './errors.js';
import type { WriteQueue } from './queue.js';
import type { FileState } from './state.js';

/** Sweeping is bookkeeping: a sweep lost to a power cut is done again by the next. */
const NOT_DURABLE = { durable: false } as const;

interface EventRow {
  pos: number;
  owner: string;
  deleted: number;
  body: string;
}

/** SQLite has no transaction ids in the log: every event is final once durable. */
const SETTLED = 1n;

/**
 * The feed's log on SQLite (migration 011), as the plants facet writes it inside its writes. Only events
 * up to the last one whose batch is durable are read (the write queue says which, WriteQueue.feedWritten
 * and feedDurable): a subscriber never hears of a create before its creator does.
 */
export class SqliteFeedLog {
  readonly #db: Database.Database;
  readonly #writes: WriteQueue;
  readonly #insert: Database.Statement<[string, number, string]>;
  readonly #insertDeleted: Database.Statement<[string, bigint]>;
  readonly #removeEvent: Database.Statement<[number | bigint]>;
  /** The last event durable now: what readers may see. */
  #durable: bigint;
  #listener: ((tx: bigint) => void) | undefined;

  constructor(db: Database.Database, writes: WriteQueue) {
    this.#db = db;
    this.#writes = writes;
    this.#insert = db.prepare('INSERT INTO plant_events (owner, deleted, body) VALUES (?, ?, ?)');
    // The deleted plant's body is made from its row before the delete removes it.
    this.#insertDeleted = db.prepare(`INSERT INTO plant_events (owner, deleted, body)
      SELECT owner, 1, ${wireJsonSql(SQLITE, WEBHOOK_BODY, (column) => column)} FROM plants WHERE owner = ? AND id = ?`);
    this.#removeEvent = db.prepare('DELETE FROM plant_events WHERE pos = ?');
    // What the file holds at open survived whatever came before: all of it is durable.
    const last = db.prepare<[], { pos: number | null }>('SELECT max(pos) AS pos FROM plant_events').get();
    this.#durable = BigInt(last?.pos ?? 0);
  }

  get durablePos(): bigint {
    return this.#durable;
  }

  /** Inside a create's write, after its plant is inserted: the event, or the error that fails the create. */
  created(owner: string, plant: NewPlant): number | bigint {
    return this.#insert.run(owner, 0, webhookBody(plant)).lastInsertRowid;
  }

  /** Inside a delete's write, before its plant is deleted: the event's position, or undefined when there is no such plant. */
  deleting(owner: string, id: bigint): number | bigint | undefined {
    const { changes, lastInsertRowid } = this.#insertDeleted.run(owner, id);
    return changes === 1 ? lastInsertRowid : undefined;
  }

  /** Takes back an event whose write then failed (the write's other statements stay: see WriteQueue). */
  withdraw(pos: number | bigint): void {
    if (this.#db.inTransaction) this.#removeEvent.run(pos);
  }

  /** The write's last step: its batch's durability decides when the event may be read. */
  written(pos: number | bigint): void {
    this.#writes.feedWritten(BigInt(pos));
  }

  /** The write queue's feedDurable. */
  readonly durable = (pos: bigint): void => {
    if (pos > this.#durable) this.#durable = pos;
    try {
      this.#listener?.(0n);
    } catch {
      // The feed polls too; a listener's failure is not the batch's.
    }
  };

  listen(listener: (tx: bigint) => void): void {
    this.#listener = listener;
  }
}

/** The feed facet on SQLite: reads of the log, its sweep. */
export class SqliteFeed implements FeedStore {
  readonly #db: Database.Database;
  readonly #state: FileState;
  readonly #writes: WriteQueue;
  readonly #log: SqliteFeedLog;
  readonly #readAll: Database.Statement<[number, number, number], EventRow>;
  readonly #readOwner: Database.Statement<[string, number, number, number], EventRow>;
  readonly #pruned: Database.Statement<[], { pos: number }>;

  constructor(db: Database.Database, state: FileState, writes: WriteQueue, log: SqliteFeedLog) {
    this.#db = db;
    this.#state = state;
    this.#writes = writes;
    this.#log = log;
    this.#readAll = db.prepare('SELECT pos, owner, deleted, body FROM plant_events WHERE pos > ? AND pos <= ? ORDER BY pos LIMIT ?');
    this.#readOwner = db.prepare('SELECT pos, owner, deleted, body FROM plant_events WHERE owner = ? AND pos > ? AND pos <= ? ORDER BY pos LIMIT ?');
    this.#pruned = db.prepare('SELECT pos FROM feed_pruned');
  }

  onFeedChanged(listener: (tx: bigint) => void): void {
    this.#log.listen(listener);
  }

  async feedBounds(): Promise<FeedBounds> {
    const pruned = this.#read(() => BigInt(this.#pruned.get()?.pos ?? 0));
    const durable = this.#log.durablePos;
    return { pruned: { tx: 0n, pos: pruned }, head: { tx: 0n, pos: durable > pruned ? durable : pruned } };
  }

  async readFeed(after: FeedPosition, limit: number, owner: string | null, until?: FeedPosition): Promise<FeedRead> {
    const durable = this.#log.durablePos;
    const last = until === undefined || until.pos > durable ? durable : until.pos;
    if (after.pos >= last) return { events: [], settledBefore: SETTLED };
    const rows = this.#read(() => (owner === null
      ? this.#readAll.all(Number(after.pos), Number(last), limit)
      : this.#readOwner.all(owner, Number(after.pos), Number(last), limit)));
    const events = rows.map((r): FeedEvent => ({ at: { tx: 0n, pos: BigInt(r.pos) }, owner: r.owner, deleted: r.deleted === 1, body: r.body }));
    return { events, settledBefore: SETTLED };
  }

  sweepFeed(before: Date): Promise<number> {
    const durable = this.#log.durablePos;
    return this.#writes.add(() => {
      // The cut is chosen among the marks made before this one, as on PostgreSQL (whose statement does not see its own mark).
      const cut = this.#db.prepare<[number], { pos: number | null }>('SELECT max(pos) AS pos FROM feed_marks WHERE at < ?').get(before.getTime())?.pos;
      this.#db.prepare('INSERT INTO feed_marks (at, pos) VALUES (?, ?)').run(Date.now(), durable);
      if (cut === null || cut === undefined) return 0;
      const removed = this.#db.prepare('DELETE FROM plant_events WHERE pos <= ?').run(cut).changes;
      this.#db.prepare('UPDATE feed_pruned SET pos = ? WHERE pos < ?').run(cut, cut);
      this.#db.prepare('DELETE FROM feed_marks WHERE pos < ?').run(cut);
      return removed;
    }, NOT_DURABLE);
  }

  #read<T>(read: () => T): T {
    this.#state.assertReadable();
    try {
      return read();
    } catch (error) {
      throw storeError(error);
    }
  }
}
