import type { CounterStore, RateCount } from '../store.js';
import type { Connections } from './pool.js';

/** How often, at most, ended windows are dropped. */
const SWEEP_INTERVAL_MS = 60_000;

/** The rate limit's counters in the database, so that every instance on the store shares them. */
export class PostgresCounters implements CounterStore {
  readonly #connections: Connections;
  #sweptAt = 0;

  constructor(connections: Connections) {
    this.#connections = connections;
  }

  /** One statement; the window is computed from the database's clock, so instances agree on it. */
  async hit(key: string, windowMs: number): Promise<RateCount> {
    const { rows } = await this.#connections.query<{ count: number; reset_in_ms: string }>(
      'rate_hit',
      `WITH now AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms)
       INSERT INTO rate_limit_windows AS w (key, window_start, window_ms, count)
       SELECT $1, ms - ms % $2::bigint, $2, 1 FROM now
       ON CONFLICT (key, window_start) DO UPDATE SET count = w.count + 1
       RETURNING count, window_start + window_ms - (SELECT ms FROM now) AS reset_in_ms`,
      [key, windowMs],
    );
    if (Date.now() - this.#sweptAt > SWEEP_INTERVAL_MS) this.#sweep();
    const row = rows[0];
    if (!row) throw new Error('rate counter returned no row');
    return { count: row.count, resetInMs: Number(row.reset_in_ms) };
  }

  /** Drops ended windows now and then; a failure only means they are dropped next time. */
  #sweep(): void {
    this.#sweptAt = Date.now();
    this.#connections.query(
      'rate_sweep',
      'DELETE FROM rate_limit_windows WHERE window_start + window_ms < (extract(epoch FROM clock_timestamp()) * 1000)::bigint',
      [],
    ).catch(() => undefined);
  }
}
