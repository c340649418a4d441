import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseDatabaseUrl } from '../../src/config/database.js';
import type { ListShape } from '../../src/store/sql/lists.js';
import { openStore } from '../../src/store/open.js';
import { pageText } from '../../src/store/sqlite/lists.js';
import Database from '../../src/store/sqlite/driver.js';
import { assertSamePages, BACKEND, createInterleaved, silentLogger } from '../helpers/app.js';
import { tempDir } from '../helpers/sqlite-spawn.js';

if (BACKEND !== 'sqlite') throw new Error('test/sqlite/* runs on SQLite only');

const options = { logger: silentLogger, poolSize: 1, startupTimeoutMs: 1000 };
const MIGRATIONS = new URL('../../src/store/migrations/sqlite/', import.meta.url);
const SHAPES: readonly ListShape[] = ['all', 'allTag', 'owner', 'ownerTag'];
const VALUES: Readonly<Record<ListShape, number>> = { all: 0, allTag: 1, owner: 1, ownerTag: 2 };

/**
 * How a list statement reaches the plants table, from EXPLAIN QUERY PLAN: each line that reads it. A page
 * read through an index that lacks name or tag would show `USING INDEX` and then fetch each row from the
 * table, one table page per plant when owners' plants are interleaved.
 */
function plantsAccess(db: Database.Database, shape: ListShape): string[] {
  const values = Array.from({ length: 2 * VALUES[shape] + 2 }, (_, i) => (i % 2 === 0 ? 'alice' : 1));
  const plan = db.prepare(`EXPLAIN QUERY PLAN ${pageText(shape)}`).all(...values) as { detail: string }[];
  return plan.map((row) => row.detail).filter((detail) => /\bplants\b/.test(detail));
}

function assertIndexOnly(db: Database.Database, label: string): void {
  for (const shape of SHAPES) {
    const access = plantsAccess(db, shape);
    assert.equal(access.length, 2, `${label}, ${shape}: the page and the probe after it: ${access.join(' | ')}`);
    for (const line of access) {
      assert.match(
        line,
        shape === 'all' ? /^SEARCH plants USING INTEGER PRIMARY KEY \(rowid>\?\)$/ : /^SEARCH plants USING COVERING INDEX plants_\w+_page \(.*seq>\?\)$/,
        `${label}, ${shape}`,
      );
    }
  }
}

test('every list shape reads its page and the probe after it from one index range (a covering index, or the table itself for every owner), on a new store and after ANALYZE', async (t) => {
  const path = join(tempDir(t), 'store.db');
  const store = await openStore(parseDatabaseUrl(`sqlite:${path}`, process.cwd()), options);
  t.after(() => store.close());
  await createInterleaved(store);
  const db = new Database(path);
  t.after(() => db.close());
  assertIndexOnly(db, 'a new store');
  db.exec('ANALYZE');
  assertIndexOnly(db, 'after ANALYZE');
});

test('a store made by migrations 001-005, with plants, gets the covering indexes and lists every page exactly as a new store does', async (t) => {
  const dir = tempDir(t);
  const oldPath = join(dir, 'old.db');
  const db = new Database(oldPath);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
  for (const file of readdirSync(MIGRATIONS).filter((f) => /^00[1-5]_.*\.sql$/.test(f)).sort()) {
    db.exec(readFileSync(new URL(file, MIGRATIONS), 'utf8'));
    db.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(Number(file.slice(0, 3)), file.slice(4, -4), Date.now());
  }
  // createInterleaved's plants, there before the migration builds the new indexes.
  const insert = db.prepare('INSERT INTO plants (owner, id, name, tag) VALUES (?, ?, ?, ?)');
  for (let i = 1; i <= 90; i++) insert.run(['alice', 'bob', 'carol'][i % 3], i, `plant ${i}`, i % 5 === 0 ? 'x' : null);
  db.close();
  const old = await openStore(parseDatabaseUrl(`sqlite:${oldPath}`, process.cwd()), options);
  const fresh = await openStore(parseDatabaseUrl(`sqlite:${join(dir, 'new.db')}`, process.cwd()), options);
  t.after(() => Promise.all([old.close(), fresh.close()]));
  await createInterleaved(fresh);

  const migrated = new Database(oldPath);
  t.after(() => migrated.close());
  const indexes = migrated.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'plants' AND sql IS NOT NULL ORDER BY name").pluck().all();
  assert.deepEqual(indexes, ['plants_owner_seq_page', 'plants_owner_tag_seq_page', 'plants_tag_seq_page']);
  assertIndexOnly(migrated, 'a migrated store');
  await assertSamePages(old, fresh);
});
