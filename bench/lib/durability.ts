// The durability check: every create a server answered 2xx must be in its store afterwards, read from the
// store itself (not through the server).
import pg from 'pg';
import { BENCH_USER } from './seed.js';

/**
 * Ids looked up in one PostgreSQL statement. A run's creates are all checked at once, millions on a
 * machine with many cores and instances: one statement would carry them all as two array parameters,
 * built as text in memory on both sides, so they go in slices of this many.
 */
export const STORED_CHUNK = 50_000;

/**
 * How many of `ids` the store holds, each for its owner (the bench user, or the mix's user read from the
 * id); an id of another owner does not count. `chunk`: ids per PostgreSQL statement.
 */
export async function countStored(
  databaseUrl: string, ids: readonly number[], ownerOf: (id: number) => string = () => BENCH_USER, chunk = STORED_CHUNK,
): Promise<number> {
  if (databaseUrl.startsWith('sqlite:')) {
    const { default: Database } = await import('../../src/store/sqlite/driver.js');
    const db = new Database(databaseUrl.slice('sqlite:'.length), { readonly: true });
    try {
      const has = db.prepare('SELECT 1 FROM plants WHERE owner = ? AND id = ?').pluck();
      return ids.filter((id) => has.get(ownerOf(id), id) !== undefined).length;
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    let stored = 0;
    for (let from = 0; from < ids.length; from += chunk) {
      const slice = ids.slice(from, from + chunk);
      const res = await client.query(
        `SELECT count(*)::int AS n FROM unnest($1::text[], $2::bigint[]) AS a(owner, id)
         WHERE EXISTS (SELECT 1 FROM plants p WHERE p.owner = a.owner AND p.id = a.id)`,
        [slice.map(ownerOf), slice],
      );
      stored += res.rows[0].n as number;
    }
    return stored;
  } finally {
    await client.end();
  }
}
