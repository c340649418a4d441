import type Database from './driver.js';
import type { Dialect } from '../sql/dialect.js';
import {
  endpointInsertValues, endpointOfRow, eventInsertValues, eventsToInsert, snapshotOver, tokenInsertValues, tokenOfRow, transferStatements,
  type EndpointExportRow, type RowQuery, type StoredEventRow, type TokenExportRow, type TransferStatements,
} from '../sql/transfer.js';
import {
  BatchTally, describeEndpoint, describePlant, describeToken, differingFields, ENDPOINT_FIELDS, PLANT_FIELDS, RollBack, TOKEN_FIELDS,
  type BatchResult, type EndpointTransferRecord, type EventTransferRecord, type PlantRecord, type Snapshot, type StoreTransfer, type TokenTransferRecord,
} from '../transfer.js';

/** Queues `run` on the store's write queue: one IMMEDIATE transaction, waiting for the lock on timers. */
export type QueueWrite = <T>(run: () => T) => Promise<T>;

type Batch<T> = (batch: readonly T[], skipConflicts: boolean) => BatchResult;

/**
 * Export and import on SQLite (see StoreTransfer). Imports go through the store's write queue, so they
 * wait for another process's write lock as requests do; each batch runs in a savepoint of the queue's
 * transaction, which RollBack undoes alone.
 */
export class SqliteTransfer implements StoreTransfer {
  readonly #db: Database.Database;
  readonly #d: Dialect;
  readonly #S: TransferStatements;
  readonly #write: QueueWrite;
  readonly #statements = new Map<string, Database.Statement>();
  readonly importPlants: (batch: readonly PlantRecord[], skipConflicts: boolean) => Promise<BatchResult>;
  readonly importTokens: (batch: readonly TokenTransferRecord[], skipConflicts: boolean) => Promise<BatchResult>;
  readonly importWebhooks: (batch: readonly EndpointTransferRecord[], skipConflicts: boolean) => Promise<BatchResult>;
  readonly importEvents: (batch: readonly EventTransferRecord[], skipConflicts: boolean) => Promise<BatchResult>;

  constructor(db: Database.Database, dialect: Dialect, write: QueueWrite) {
    this.#db = db;
    this.#d = dialect;
    this.#S = transferStatements(dialect, 'rowid');
    this.#write = write;
    this.importPlants = this.#batch((batch, skip) => this.#plants(batch, skip));
    this.importTokens = this.#batch((batch, skip) => this.#tokens(batch, skip));
    this.importWebhooks = this.#batch((batch, skip) => this.#webhooks(batch, skip));
    this.importEvents = this.#batch((batch, skip) => this.#events(batch, skip));
  }

  #prepare(text: string): Database.Statement {
    let statement = this.#statements.get(text);
    if (statement === undefined) this.#statements.set(text, (statement = this.#db.prepare(text)));
    return statement;
  }

  /**
   * A deferred transaction: its first read fixes the WAL snapshot that every later read sees, while a
   * server goes on writing (it then cannot checkpoint past the snapshot until the export ends).
   */
  async readSnapshot<T>(read: (snapshot: Snapshot) => Promise<T>): Promise<T> {
    const query: RowQuery = async <R>(_name: string, text: string, values: unknown[]) => this.#prepare(text).all(values) as R[];
    this.#db.exec('BEGIN');
    try {
      return await read(await snapshotOver(this.#d, this.#S, query));
    } finally {
      if (this.#db.inTransaction) this.#db.exec('COMMIT');
    }
  }

  #batch<T>(write: Batch<T>): (batch: readonly T[], skipConflicts: boolean) => Promise<BatchResult> {
    // Inside the queue's transaction, better-sqlite3 runs this as a savepoint: a throw undoes the batch only.
    const savepoint = this.#db.transaction(write);
    return (batch, skipConflicts) => this.#write(() => {
      try {
        return savepoint(batch, skipConflicts);
      } catch (error) {
        if (error instanceof RollBack) return error.result;
        throw error;
      }
    });
  }

  #plants(batch: readonly PlantRecord[], skipConflicts: boolean): BatchResult {
    const insert = this.#prepare('INSERT INTO plants (owner, id, name, tag) VALUES (?, ?, ?, ?) ON CONFLICT (owner, id) DO NOTHING');
    const find = this.#prepare('SELECT name, tag FROM plants WHERE owner = ? AND id = ?');
    const tally = new BatchTally(skipConflicts);
    for (const p of batch) {
      if (insert.run(p.owner, p.id, p.name, p.tag).changes === 1) {
        tally.imported++;
        continue;
      }
      const stored = find.get(p.owner, p.id) as { name: string; tag: string | null } | undefined;
      if (!stored) throw new Error(`${describePlant(p)} was neither inserted nor found`);
      tally.found(describePlant(p), differingFields(p, { ...p, ...stored }, PLANT_FIELDS));
    }
    return tally.result();
  }

  #tokens(batch: readonly TokenTransferRecord[], skipConflicts: boolean): BatchResult {
    const tally = new BatchTally(skipConflicts);
    for (const t of batch) {
      const stored = this.#prepare(this.#S.tokenByHash).get(t.hash) as TokenExportRow | undefined;
      if (stored) {
        tally.found(describeToken(t), differingFields(t, tokenOfRow(this.#d, stored), TOKEN_FIELDS));
        continue;
      }
      tally.imported++;
      if (this.#prepare(this.#S.insertTokenWithId).get(tokenInsertValues(this.#d, t, true))) continue;
      const row = this.#prepare(this.#S.insertTokenNewId).get(tokenInsertValues(this.#d, t, false)) as { id: number } | undefined;
      if (!row) throw new Error('token insert returned no row');
      tally.renumbered.push({ from: t.id, to: row.id });
    }
    return tally.result();
  }

  #webhooks(batch: readonly EndpointTransferRecord[], skipConflicts: boolean): BatchResult {
    const tally = new BatchTally(skipConflicts);
    for (const e of batch) {
      if (this.#prepare(this.#S.insertEndpoint).run(endpointInsertValues(this.#d, e)).changes === 1) {
        tally.imported++;
        continue;
      }
      const stored = this.#prepare(this.#S.endpointById).get(e.id) as EndpointExportRow | undefined;
      if (!stored) throw new Error(`${describeEndpoint(e)} was neither inserted nor found`);
      tally.found(describeEndpoint(e), differingFields(e, endpointOfRow(this.#d, stored), ENDPOINT_FIELDS));
    }
    return tally.result();
  }

  #events(batch: readonly EventTransferRecord[], skipConflicts: boolean): BatchResult {
    const ids = (values: Iterable<string>) => JSON.stringify([...new Set(values)]);
    const endpoints = new Set(
      this.#prepare('SELECT id FROM webhook_endpoints WHERE id IN (SELECT value FROM json_each(?))').pluck()
        .all(ids(batch.map((e) => e.endpointId))) as string[],
    );
    // No index finds an event by its id (none is needed to serve requests): one scan per batch.
    const rows = this.#prepare(
      `SELECT endpoint_id, event_id, CAST(plant_id AS TEXT) AS plant_id, body FROM webhook_deliveries
       WHERE event_id IN (SELECT value FROM json_each(?))`,
    ).all(ids(batch.map((e) => e.eventId))) as StoredEventRow[];
    const tally = new BatchTally(skipConflicts);
    const insert = this.#prepare(this.#S.insertEvent);
    for (const e of eventsToInsert(batch, endpoints, rows, tally)) insert.run(eventInsertValues(this.#d, e));
    return tally.result();
  }
}
