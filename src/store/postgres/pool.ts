import pg from 'pg';
import { StoreUnavailableError } from '../store.js';
import { storeError } from './errors.js';

/** A statement on the connection of a transaction. */
export type TxQuery = <R extends pg.QueryResultRow>(name: string, text: string, values: unknown[]) => Promise<pg.QueryResult<R>>;

/**
 * Statements on the webhook queue, sent unnamed: planned on each execution rather than prepared once per
 * connection. The queue can grow from nothing to tens of thousands of events in seconds (a burst of
 * creates), and a connection keeps the generic plan it prepared while the table was small until the
 * table is next analyzed: for recording attempts, "read every pending event, then match the batch",
 * which made recording a batch of attempts against a backlog slow enough to pass statement_timeout (the
 * events were then sent again when their lease ended). Planned with the batch and the table as they
 * are, they look events up by key. Each runs once per batch or claim, so planning each time costs little.
 */
const PLANNED_EACH_TIME = new Set([
  'webhook_claim', 'webhook_record_lock', 'webhook_record_update', 'webhook_record_gone', 'webhook_record_attempts',
  'webhook_release', 'webhook_sweep', 'webhook_withdraw', 'webhook_withdraw_user', 'webhook_backlog',
]);
const statementName = (name: string) => (PLANNED_EACH_TIME.has(name) ? undefined : name);

/** The store's pool, as each facet runs its statements on it: one at a time, or a transaction. */
export class Connections {
  readonly pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.pool = pool;
  }

  /**
   * One statement on a pooled connection, as `pool.query` runs it (same error handling and release),
   * except that getting the connection is told apart from running the statement: whatever stops the
   * pool from handing out a connection (refused, reset, timed out, or the server turning the start-up
   * down: 55000 connections not allowed, 3D000 no such database, 28xxx login refused, 53300 no slot,
   * 57P03 starting up) means the store is unavailable (503), never a fault of the request. Named
   * statements are parsed and planned once per connection, not once per request (but PLANNED_EACH_TIME).
   */
  query<R extends pg.QueryResultRow>(name: string, text: string, values: unknown[], rowMode?: 'array'): Promise<pg.QueryResult<R>> {
    return new Promise((resolve, reject) => {
      this.pool.connect((connectError, client, release) => {
        if (connectError || client === undefined) {
          reject(new StoreUnavailableError(connectError ?? new Error('the pool handed out no connection')));
          return;
        }
        let released = false;
        // Any error destroys the connection rather than returning it to the pool (pool.query does the
        // same): after a timeout or a lost socket its state is unknown.
        const fail = (error: Error) => {
          if (released) return;
          released = true;
          release(error);
          reject(storeError(error));
        };
        // A connection that breaks while we hold it reports on 'error'; without a listener that would
        // be an uncaught exception.
        client.once('error', fail);
        try {
          client.query<R>({ name: statementName(name), text, values, rowMode } as pg.QueryConfig, (error, result) => {
            client.removeListener('error', fail);
            if (error) fail(error);
            else if (!released) {
              released = true;
              release();
              resolve(result);
            }
          });
        } catch (error) {
          client.removeListener('error', fail);
          fail(error as Error);
        }
      });
    });
  }

  /**
   * `work` in one transaction on one pooled connection. Errors are handled as in `query`: no connection
   * means unavailable; any error destroys the connection (its transaction with it: the server rolls
   * back) rather than returning it to the pool in an unknown state.
   */
  async transaction<T>(work: (query: TxQuery) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw new StoreUnavailableError(error);
    }
    let lost: Error | undefined;
    const onError = (error: Error) => {
      lost ??= error;
    };
    client.on('error', onError);
    const query: TxQuery = async (name, text, values) => {
      if (lost) throw lost;
      return client.query({ name: statementName(name), text, values });
    };
    try {
      await client.query('BEGIN');
      const result = await work(query);
      await client.query('COMMIT');
      if (lost) throw lost;
      client.removeListener('error', onError);
      client.release();
      return result;
    } catch (error) {
      client.removeListener('error', onError);
      client.release(error instanceof Error ? error : new Error(String(error)));
      throw storeError(error);
    }
  }
}
