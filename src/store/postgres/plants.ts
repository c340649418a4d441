import { plantOf, plantOfColumns, samePlant, type NewPlant } from '../../domain/plant.js';
import { WEBHOOK_BODY } from '../../domain/webhook.js';
import { receives } from '../sql/all-users.js';
import { POSTGRES, raw, valueless } from '../sql/dialect.js';
import { eventIdSql, wireJsonSql } from '../sql/wire.js';
import type { CreateOutcome, ListQuery, PlantPage, PlantStore, StoreObserver } from '../store.js';
import type { ListReads } from './lists.js';
import { notifyEventsSql, notifyFeedSql } from './notify.js';
import type { Connections } from './pool.js';

/** Rows per INSERT: large enough to share one commit widely, small enough to keep a statement quick. */
const MAX_BATCH = 500;

const PLANT_BODY = (row: string): string => wireJsonSql(POSTGRES, WEBHOOK_BODY, (column) => `${row}.${column}`);

/**
 * One multi-row INSERT of a batch of creates, and the outbox in the same statement: one event per
 * receiving endpoint for each row it stored (a replay or a conflict stores none), with the stored row's
 * body (WEBHOOK_BODY, made in SQL from `ins`), so an event exists exactly when its plant committed.
 * Without endpoints the join finds nothing. The live feed's log gets one event per row stored, and
 * one notification per commit tells the other instances' feeds (with the transaction's id, returned
 * too for this instance's own).
 */
const INSERT_BATCH = `WITH ins AS (
         INSERT INTO plants (owner, id, name, tag)
         SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[])
         ON CONFLICT (owner, id) DO NOTHING RETURNING owner, id, name, tag
       ), ev AS (
         INSERT INTO webhook_deliveries (event_id, endpoint_id, plant_id, owner, body, state, attempts, next_attempt_at)
         SELECT ${valueless(POSTGRES, eventIdSql(POSTGRES, POSTGRES.nowMs))}, e.id, ins.id, ins.owner, ${wireJsonSql(POSTGRES, WEBHOOK_BODY, (column) => `ins.${column}`)}, 'pending', 0, now()
         FROM ins JOIN webhook_endpoints e ON e.disabled_at IS NULL AND ${valueless(POSTGRES, receives(POSTGRES, raw('ins.owner')))}
         RETURNING 1
       ), fe AS (
         INSERT INTO plant_events (owner, deleted, body) SELECT owner, false, ${PLANT_BODY('ins')} FROM ins
       ), woke AS (${notifyEventsSql('ev', '$5')}), fed AS (${notifyFeedSql('ins', '$5')})
       SELECT owner, id, (SELECT count(*) FROM ev)::int AS events, (SELECT count(*) FROM woke) AS woke,
         (SELECT count(*) FROM fed) AS fed, pg_current_xact_id()::text AS tx FROM ins`;

/** A delete, its feed event (made from the row deleted) and the feed's notification, in one statement. */
const DELETE_PLANT = `WITH d AS (
         DELETE FROM plants WHERE owner = $1 AND id = $2 RETURNING owner, id, name, tag
       ), fe AS (
         INSERT INTO plant_events (owner, deleted, body) SELECT owner, true, ${PLANT_BODY('d')} FROM d
       ), fed AS (${notifyFeedSql('d', '$3')})
       SELECT (SELECT count(*) FROM fed) AS fed, pg_current_xact_id()::text AS tx FROM d`;

interface PendingCreate {
  readonly owner: string;
  readonly plant: NewPlant;
  resolve(outcome: CreateOutcome): void;
  reject(error: unknown): void;
}

/**
 * Group commit, as in the SQLite store: creates go to PostgreSQL as one multi-row INSERT, one round
 * trip and one commit for all of them, and each caller is answered after that commit. One batch is in
 * flight at a time: the creates that arrive while it commits form the next, sent once it is answered
 * (the first create of an idle instance goes at the end of its event-loop turn). Sending each turn's
 * creates at once instead had several batches inserting into the same index pages and committing
 * side by side, which cost PostgreSQL much more CPU per create (measured with npm run bench).
 * A batch waiting on a lock (another transaction's uncommitted row with the same id) holds the next
 * back for that wait, at most the statement timeout.
 */
export class GroupCommit {
  readonly #connections: Connections;
  readonly #inFlight: Set<Promise<void>>;
  readonly #observer: StoreObserver | undefined;
  /** Told after a commit that queued webhook events. */
  readonly #eventsQueued: () => void;
  /** Told after a commit that wrote feed events, with its transaction. */
  readonly #feedChanged: (tx: bigint) => void;
  /** This handle's mark on its notifications (notify.ts), so that it does not wake itself twice. */
  readonly #notifyToken: string;
  #pending: PendingCreate[] = [];
  /** A create batch is in PostgreSQL now; a flush is due (setImmediate). */
  #committing = false;
  #flushDue = false;

  constructor(
    connections: Connections, inFlight: Set<Promise<void>>, observer: StoreObserver | undefined, eventsQueued: () => void,
    feedChanged: (tx: bigint) => void, notifyToken: string,
  ) {
    this.#feedChanged = feedChanged;
    this.#connections = connections;
    this.#inFlight = inFlight;
    this.#observer = observer;
    this.#eventsQueued = eventsQueued;
    this.#notifyToken = notifyToken;
  }

  add(owner: string, plant: NewPlant): Promise<CreateOutcome> {
    return new Promise((resolve, reject) => {
      this.#pending.push({ owner, plant, resolve, reject });
      this.#scheduleFlush();
    });
  }

  /** Every create already asked for is committed (or fails) before this resolves, batch after batch. */
  async close(): Promise<void> {
    while (this.#pending.length > 0 || this.#inFlight.size > 0) {
      this.#flush();
      await Promise.all(this.#inFlight);
    }
  }

  #scheduleFlush(): void {
    if (this.#flushDue || this.#committing || this.#pending.length === 0) return;
    this.#flushDue = true;
    setImmediate(this.#flush);
  }

  readonly #flush = (): void => {
    this.#flushDue = false;
    if (this.#committing || this.#pending.length === 0) return;
    const batch = this.#pending.splice(0, MAX_BATCH);
    this.#committing = true;
    const done = this.#insertBatch(batch).then(
      (outcomes) => {
        batch.forEach((c, j) => c.resolve(outcomes[j] as CreateOutcome));
        this.#observer?.committed('postgres', batch.length);
      },
      (error) => batch.forEach((c) => c.reject(error)),
    ).finally(() => {
      this.#committing = false;
      this.#scheduleFlush();
    });
    this.#inFlight.add(done);
    void done.finally(() => this.#inFlight.delete(done));
  };

  async #insertBatch(batch: PendingCreate[]): Promise<CreateOutcome[]> {
    const key = (owner: string, id: string) => `${id}\u0000${owner}`;
    const owners = batch.map((c) => c.owner);
    const ids = batch.map((c) => c.plant.id.toString());
    const { rows: inserted } = await this.#connections.query<{ owner: string; id: string; events: number; tx: string }>(
      'plant_insert_batch', INSERT_BATCH, [owners, ids, batch.map((c) => c.plant.name), batch.map((c) => c.plant.tag ?? null), this.#notifyToken],
    );
    if ((inserted[0]?.events ?? 0) > 0) this.#eventsQueued();
    if (inserted[0] !== undefined) this.#feedChanged(BigInt(inserted[0].tx));
    const created = new Set(inserted.map((r) => key(r.owner, r.id)));
    const keys = batch.map((c, i) => key(c.owner, ids[i] as string));
    const copies = new Map<string, number>();
    for (const k of keys) copies.set(k, (copies.get(k) ?? 0) + 1);
    // Created and alone in the batch: done. Otherwise the stored row decides replay or conflict. It is
    // read in a new statement, so READ COMMITTED sees a concurrent insert that ON CONFLICT waited for.
    const unsure = keys.flatMap((k, i) => (created.has(k) && copies.get(k) === 1 ? [] : [i]));
    const outcomes: CreateOutcome[] = batch.map(() => 'created');
    if (unsure.length === 0) return outcomes;
    const { rows } = await this.#connections.query<{ owner: string; id: string; name: string; tag: string | null }>(
      'plant_find_batch',
      `SELECT owner, id, name, tag FROM plants
       WHERE (owner, id) IN (SELECT * FROM unnest($1::text[], $2::bigint[]))`,
      [unsure.map((i) => owners[i]), unsure.map((i) => ids[i])],
    );
    const stored = new Map(rows.map((r) => [key(r.owner, r.id), plantOfColumns(r)]));
    for (const i of unsure) {
      const item = batch[i] as PendingCreate;
      const found = stored.get(keys[i] as string);
      // Deleted between the insert and the read: try this one again, alone.
      outcomes[i] = found === undefined ? await this.#insertBatch([item]).then((o) => o[0] as CreateOutcome)
        : samePlant(found, plantOf(item.plant)) ? 'replayed' : 'conflict';
    }
    return outcomes;
  }
}

/** The plants facet: creates in group commits, lists in group reads, deletes one statement each. */
export class PostgresPlants implements PlantStore {
  readonly #commits: GroupCommit;
  readonly #lists: ListReads;
  readonly #connections: Connections;
  readonly #feedChanged: (tx: bigint) => void;
  readonly #notifyToken: string;

  constructor(commits: GroupCommit, lists: ListReads, connections: Connections, feedChanged: (tx: bigint) => void, notifyToken: string) {
    this.#commits = commits;
    this.#lists = lists;
    this.#connections = connections;
    this.#feedChanged = feedChanged;
    this.#notifyToken = notifyToken;
  }

  createPlant(owner: string, plant: NewPlant): Promise<CreateOutcome> {
    return this.#commits.add(owner, plant);
  }

  /** Other instances write too: no page is kept (identical lists in one turn are read once, see ListReads). */
  cachedPage(): undefined {
    return undefined;
  }

  listPlants(query: ListQuery): Promise<PlantPage> {
    return this.#lists.read(query);
  }

  async deletePlant(owner: string, id: bigint): Promise<boolean> {
    const { rows } = await this.#connections.query<{ tx: string }>('plant_delete', DELETE_PLANT, [owner, id.toString(), this.#notifyToken]);
    if (rows[0] === undefined) return false;
    this.#feedChanged(BigInt(rows[0].tx));
    return true;
  }
}
