import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import pg from 'pg';
import { loadMigrations } from '../../src/store/sql/migrations.js';
import { openStore } from '../../src/store/open.js';
import { listBatchText } from '../../src/store/postgres/lists.js';
import type { ListShape } from '../../src/store/sql/lists.js';
import { adminSql, assertSamePages, BACKEND, createInterleaved, silentLogger, testDatabase } from '../helpers/app.js';

if (BACKEND !== 'postgres') throw new Error('test/postgres/* needs PLANTSTORE_TEST_DATABASE_URL (npm test sets it)');

const options = { logger: silentLogger, poolSize: 2, startupTimeoutMs: 5000 };
const MIGRATIONS = new URL('../../src/store/migrations/postgres/', import.meta.url);
/** The store's own list statement of each shape: a group read of one list (each branch of a larger one is the same). */
const listText = (shape: ListShape): string => listBatchText(shape, 1);
const VALUES: Readonly<Record<ListShape, unknown[]>> = {
  all: [0, 21], allTag: ['x', 0, 21], owner: ['alice', 0, 21], ownerTag: ['alice', 'x', 0, 21],
};

/**
 * The scan each list statement makes once the planner may only use an index (a table of a hundred
 * plants would otherwise be read whole, and the plan would say nothing about the indexes): the filtered
 * shapes by an index-only scan of their own index, which therefore holds every column the page needs;
 * every owner's plants by the primary key, in seq order.
 */
async function assertIndexOnly(url: string, label: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('SET enable_seqscan = off');
    await client.query('SET enable_bitmapscan = off');
    for (const shape of ['all', 'allTag', 'owner', 'ownerTag'] as const) {
      const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${listText(shape)}`, VALUES[shape]);
      const plan = rows.map((r) => r['QUERY PLAN']);
      const expected = shape === 'all' ? /Index Scan using plants_pkey on plants/ : /Index Only Scan using plants_\w+_page on plants/;
      assert.ok(plan.some((line) => expected.test(line)), `${label}, ${shape}: ${plan.join(' | ')}`);
    }
  } finally {
    await client.end();
  }
}

test('the list statements of one user or one tag can read their pages from their index alone (index-only scans), on a new store and one migrated from 001-005 with plants', async (t) => {
  const fresh = await testDatabase(t);
  const store = await openStore(fresh.config, options);
  t.after(() => store.close());
  await createInterleaved(store);
  await adminSql(fresh.url, 'VACUUM ANALYZE plants');
  await assertIndexOnly(fresh.url, 'a new store');

  // A store as the releases before the covering indexes left it, with plants in it, then opened.
  const old = await testDatabase(t);
  await adminSql(old.url, 'CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)');
  for (const file of readdirSync(MIGRATIONS).filter((f) => /^00[1-5]_.*\.sql$/.test(f)).sort()) {
    await adminSql(old.url, readFileSync(new URL(file, MIGRATIONS), 'utf8'));
    await adminSql(old.url, `INSERT INTO schema_migrations VALUES (${Number(file.slice(0, 3))}, '${file.slice(4, -4)}', now())`);
  }
  // createInterleaved's plants, there before the migration builds the new indexes.
  await adminSql(old.url, "INSERT INTO plants (owner, id, name, tag) SELECT (ARRAY['alice', 'bob', 'carol'])[i % 3 + 1], i, 'plant ' || i, CASE WHEN i % 5 = 0 THEN 'x' END FROM generate_series(1, 90) AS i");
  const migrated = await openStore(old.config, options);
  t.after(() => migrated.close());
  const [applied, indexes] = await adminSql(old.url,
    'SELECT version FROM schema_migrations ORDER BY version',
    "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'plants' ORDER BY indexname");
  assert.deepEqual(applied?.rows.map((r) => r.version), loadMigrations('postgres').map((m) => m.version));
  assert.deepEqual(indexes?.rows.map((r) => r.indexname), ['plants_owner_id_key', 'plants_owner_seq_page', 'plants_owner_tag_seq_page', 'plants_pkey', 'plants_tag_seq_page']);
  await adminSql(old.url, 'VACUUM ANALYZE plants');
  await assertIndexOnly(old.url, 'a migrated store');
  // The same plants in the same order: the same pages, through the new indexes.
  await assertSamePages(migrated, store);
});
