import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from '../../src/store/sqlite/driver.js';
import { cli } from '../helpers/cli.js';
import { startServer } from '../helpers/process.js';
import { tempDir } from '../helpers/transfer.js';

// doctor writes nothing on SQLite: no store, no directory, no -wal or -shm beside a store.

/** Every file of `dir` with its size and modification time. */
const snapshot = (dir: string) => readdirSync(dir).map((name) => `${name} ${statSync(join(dir, name)).size} ${statSync(join(dir, name)).mtimeMs}`).sort();

test('doctor on a missing SQLite store says so, exit 1, and creates nothing', async (t) => {
  const dir = tempDir(t);
  const res = await cli(['doctor'], { env: { DATABASE_URL: 'sqlite:./nested/store.db' }, cwd: dir });
  assert.equal(res.code, 1);
  assert.match(res.stdout, /^attention store: no store at sqlite:\/\S+\/nested\/store\.db: serve or "plantstore migrate" would create a new, empty one/m);
  assert.deepEqual(readdirSync(dir), [], 'neither the store nor its directory');
});

test('doctor reads a SQLite store, closed or served, without creating or changing a file beside it', async (t) => {
  const dir = tempDir(t);
  const env = { DATABASE_URL: `sqlite:${join(dir, 'store.db')}` };
  assert.equal((await cli(['migrate'], { env })).code, 0);
  const closed = snapshot(dir);
  assert.deepEqual(closed.map((line) => line.split(' ')[0]), ['store.db'], 'a closed store has no -wal');
  const res = await cli(['doctor'], { env });
  assert.equal(res.code, 0, res.stdout);
  assert.match(res.stdout, /^ok {8}schema: version \d+, no pending migrations$/m);
  assert.deepEqual(snapshot(dir), closed, 'no -wal, no -shm, the store untouched');

  await startServer(t, env);
  const served = snapshot(dir);
  const again = await cli(['doctor'], { env });
  assert.equal(again.code, 0, again.stdout);
  assert.match(again.stdout, /^ok {8}store: sqlite:\S+store\.db opens$/m);
  assert.deepEqual(readdirSync(dir).sort(), served.map((line) => line.split(' ')[0]), 'only the server\'s own files');
});

test('doctor reads a store left with a -wal and no -shm from what the -wal holds, and creates no -shm', async (t) => {
  const dir = tempDir(t);
  const source = join(dir, 'source.db');
  assert.equal((await cli(['migrate'], { env: { DATABASE_URL: `sqlite:${source}` } })).code, 0);
  // A store copied file by file while open (or a -shm removed after a crash): the last migration's record
  // is deleted in the -wal only, so doctor sees it pending only if it reads the -wal.
  const db = new Database(source);
  t.after(() => db.close());
  db.pragma('journal_mode = WAL');
  db.pragma('wal_autocheckpoint = 0');
  db.exec('DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)');
  const copy = join(dir, 'copy');
  mkdirSync(copy);
  copyFileSync(source, join(copy, 'store.db'));
  copyFileSync(`${source}-wal`, join(copy, 'store.db-wal'));
  const before = snapshot(copy);
  const res = await cli(['doctor'], { env: { DATABASE_URL: `sqlite:${join(copy, 'store.db')}` } });
  assert.equal(res.code, 1, res.stdout + res.stderr);
  assert.match(res.stdout, /^attention schema: version \d+; pending: \d+_\w+/m);
  assert.deepEqual(snapshot(copy), before, 'no -shm, the store and its -wal untouched');
});

test('doctor on a file that is not a SQLite store needs attention, exit 1', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'notes.db');
  writeFileSync(path, 'these are not the pages you are looking for'.repeat(100));
  const res = await cli(['doctor'], { env: { DATABASE_URL: `sqlite:${path}` } });
  assert.equal(res.code, 1);
  assert.match(res.stdout, /^attention store: cannot read the SQLite store .*notes\.db: file is not a database$/m);
  assert.ok(existsSync(path) && readdirSync(dir).length === 1);
});
