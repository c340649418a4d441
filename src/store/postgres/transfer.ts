import type pg from 'pg';
import type { Dialect } from '../sql/dialect.js';
import {
  endpointInsertValues, endpointOfRow, eventInsertValues, eventsToInsert, snapshotOver, tokenInsertValues, tokenOfRow, transferStatements,
  type EndpointExportRow, type StoredEventRow, type TokenExportRow, type TransferStatements,
} from '../sql/transfer.js';
import {
  BatchTally, describeEndpoint, describePlant, describeToken, differingFields, ENDPOINT_FIELDS, PLANT_FIELDS, RollBack, TOKEN_FIELDS,
  type BatchResult, type EndpointTransferRecord, type EventTransferRecord, type PlantRecord, type Snapshot, type StoreTransfer, type TokenTransferRecord,
} from '../transfer.js';

/**
 * One statement of a transfer may take long (counting a hundred million plants); the request bound
 * (5 s) would cut it off. Still bounded: a transfer must not hang forever on a lost database.
 */
const TRANSFER_QUERY_TIMEOUT_MS = 10 * 60_000;

type Query = <R>(name: string, text: string, values: unknown[]) => Promise<R[]>;

/** Export and import on PostgreSQL (see StoreTransfer): each on one pooled connection, in one transaction. */
export class PostgresTransfer implements StoreTransfer {
  readonly #pool: pg.Pool;
  readonly #d: Dialect;
  readonly #S: TransferStatements;

  constructor(pool: pg.Pool, dialect: Dialect) {
    this.#pool = pool;
    this.#d = dialect;
    this.#S = transferStatements(dialect, 'created_at, id');
  }

  /**
   * `work` in a transaction begun with `begin`, on a connection of its own; any error rolls back and
   * destroys the connection (its state is unknown). A RollBack rolls back and returns its result.
   */
  async #transaction<T>(begin: string, work: (query: Query) => Promise<T>): Promise<T> {
    const client = await this.#pool.connect();
    let lost: Error | undefined;
    // A connection that breaks while held reports here; without a listener that would crash the process.
    const onError = (error: Error) => {
      lost ??= error;
    };
    client.on('error', onError);
    // pg honours a per-query query_timeout (lib/client.js); @types/pg does not declare it, hence the cast.
    const query: Query = async <R>(name: string, text: string, values: unknown[]) => {
      if (lost) throw lost;
      const config = { name: name === '' ? undefined : name, text, values, query_timeout: TRANSFER_QUERY_TIMEOUT_MS };
      return (await client.query(config as pg.QueryConfig)).rows as R[];
    };
    try {
      await query('', begin, []);
      await query('', `SET LOCAL statement_timeout = ${TRANSFER_QUERY_TIMEOUT_MS}`, []);
      let result: T;
      try {
        result = await work(query);
        await query('', 'COMMIT', []);
      } catch (error) {
        if (!(error instanceof RollBack)) throw error;
        await query('', 'ROLLBACK', []);
        result = error.result as T;
      }
      client.removeListener('error', onError);
      client.release();
      return result;
    } catch (error) {
      client.removeListener('error', onError);
      client.release(error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
  }

  /** REPEATABLE READ: every statement sees the snapshot of the first; READ ONLY: it cannot write by mistake. */
  readSnapshot<T>(read: (snapshot: Snapshot) => Promise<T>): Promise<T> {
    return this.#transaction('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', async (query) =>
      read(await snapshotOver(this.#d, this.#S, query)));
  }

  /**
   * One INSERT for the batch, its rows in the batch's order (their positions follow it); then the keys
   * it did not insert are read back, in the same transaction, and compared.
   */
  importPlants(batch: readonly PlantRecord[], skipConflicts: boolean): Promise<BatchResult> {
    return this.#transaction('BEGIN', async (query) => {
      const key = (owner: string, id: string) => `${id}\u0000${owner}`;
      const ids = batch.map((p) => p.id.toString());
      const inserted = await query<{ owner: string; id: string }>(
        'transfer_plant_insert',
        `INSERT INTO plants (owner, id, name, tag)
         SELECT owner, id, name, tag FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[]) WITH ORDINALITY AS u(owner, id, name, tag, ord)
         ORDER BY ord
         ON CONFLICT (owner, id) DO NOTHING RETURNING owner, id::text AS id`,
        [batch.map((p) => p.owner), ids, batch.map((p) => p.name), batch.map((p) => p.tag)],
      );
      // The first of a key written twice in the batch was the one inserted; a later one compares with it.
      const fresh = new Set(inserted.map((r) => key(r.owner, r.id)));
      const tally = new BatchTally(skipConflicts);
      const rest: number[] = [];
      batch.forEach((p, i) => {
        if (fresh.delete(key(p.owner, ids[i] as string))) tally.imported++;
        else rest.push(i);
      });
      if (rest.length === 0) return tally.result();
      const rows = await query<{ owner: string; id: string; name: string; tag: string | null }>(
        'transfer_plant_find',
        'SELECT owner, id::text AS id, name, tag FROM plants WHERE (owner, id) IN (SELECT * FROM unnest($1::text[], $2::bigint[]))',
        [rest.map((i) => batch[i]?.owner), rest.map((i) => ids[i])],
      );
      const stored = new Map(rows.map((r) => [key(r.owner, r.id), r]));
      for (const i of rest) {
        const p = batch[i] as PlantRecord;
        const found = stored.get(key(p.owner, ids[i] as string));
        if (!found) throw new Error(`${describePlant(p)} was neither inserted nor found`);
        tally.found(describePlant(p), differingFields(p, { ...p, name: found.name, tag: found.tag }, PLANT_FIELDS));
      }
      return tally.result();
    });
  }

  importTokens(batch: readonly TokenTransferRecord[], skipConflicts: boolean): Promise<BatchResult> {
    return this.#transaction('BEGIN', async (query) => {
      // First, so that no token a server creates meanwhile takes an id about to be imported.
      await query(
        'transfer_token_sequence',
        `SELECT setval(s, $1::bigint) FROM (SELECT pg_get_serial_sequence('tokens', 'id')::regclass AS s) x
         WHERE $1::bigint > coalesce(pg_sequence_last_value(s), 0)`,
        [Math.max(0, ...batch.map((t) => t.id))],
      );
      const tally = new BatchTally(skipConflicts);
      for (const t of batch) {
        const [stored] = await query<TokenExportRow>('transfer_token_by_hash', this.#S.tokenByHash, [t.hash]);
        if (stored) {
          tally.found(describeToken(t), differingFields(t, tokenOfRow(this.#d, stored), TOKEN_FIELDS));
          continue;
        }
        tally.imported++;
        const kept = await query('transfer_token_insert_id', this.#S.insertTokenWithId, tokenInsertValues(this.#d, t, true));
        if (kept.length === 1) continue;
        const [row] = await query<{ id: string }>('transfer_token_insert', this.#S.insertTokenNewId, tokenInsertValues(this.#d, t, false));
        if (!row) throw new Error('token insert returned no row');
        tally.renumbered.push({ from: t.id, to: Number(row.id) });
      }
      return tally.result();
    });
  }

  importWebhooks(batch: readonly EndpointTransferRecord[], skipConflicts: boolean): Promise<BatchResult> {
    return this.#transaction('BEGIN', async (query) => {
      const tally = new BatchTally(skipConflicts);
      for (const e of batch) {
        const inserted = await query('transfer_endpoint_insert', `${this.#S.insertEndpoint} RETURNING id`, endpointInsertValues(this.#d, e));
        if (inserted.length === 1) {
          tally.imported++;
          continue;
        }
        const [stored] = await query<EndpointExportRow>('transfer_endpoint_by_id', this.#S.endpointById, [e.id]);
        if (!stored) throw new Error(`${describeEndpoint(e)} was neither inserted nor found`);
        tally.found(describeEndpoint(e), differingFields(e, endpointOfRow(this.#d, stored), ENDPOINT_FIELDS));
      }
      return tally.result();
    });
  }

  importEvents(batch: readonly EventTransferRecord[], skipConflicts: boolean): Promise<BatchResult> {
    return this.#transaction('BEGIN', async (query) => {
      const endpoints = new Set((await query<{ id: string }>(
        'transfer_event_endpoints', 'SELECT id FROM webhook_endpoints WHERE id = ANY($1::text[])', [[...new Set(batch.map((e) => e.endpointId))]],
      )).map((r) => r.id));
      // No index finds an event by its id (none is needed to serve requests): one scan per batch.
      const rows = await query<StoredEventRow>(
        'transfer_event_find',
        'SELECT endpoint_id, event_id, plant_id::text AS plant_id, body FROM webhook_deliveries WHERE event_id = ANY($1::text[])',
        [batch.map((e) => e.eventId)],
      );
      const tally = new BatchTally(skipConflicts);
      for (const e of eventsToInsert(batch, endpoints, rows, tally)) {
        await query('transfer_event_insert', this.#S.insertEvent, eventInsertValues(this.#d, e));
      }
      return tally.result();
    });
  }
}
