// The durability check: every create a server answered 2xx must be in its store afterwards, read from the
// store itself (not through the server).
import pg from 'pg';
import { BENCH_USER } from './seed.js';

/** How many of `ids` the store holds, each for its owner (the bench user, or the mix's user read from the id). */
export async function countStored(databaseUrl: string, ids: number[], ownerOf: (id: number) => string = () => BENCH_USER): Promise<number> {
  if (databaseUrl.startsWith('sqlite:')) {
    const { default: Database } = await import('../../src/store/sqlite/driver.js');
    const db = new Database(databaseUrl.slice('sqlite:'.length), { readonly: true });
    const has = db.prepare('SELECT 1 FROM plants WHERE owner = ? AND id = ?').pluck();
    const n = ids.filter((id) => has.get(ownerOf(id), id) !== undefined).length;
    db.close();
    return n;
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const res = await client
    .query(
      `SELECT count(*)::int AS n FROM unnest($1::text[], $2::bigint[]) AS a(owner, id)
       WHERE EXISTS (SELECT 1 FROM plants p WHERE p.owner = a.owner AND p.id = a.id)`,
      [ids.map(ownerOf), ids],
    )
    .finally(() => client.end());
  return res.rows[0].n;
}
