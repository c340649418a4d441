import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import Database, { sqliteDriver } from '../../src/store/sqlite/driver.js';
import { BACKEND } from '../helpers/app.js';
import { startServer } from '../helpers/process.js';
import { tempDir } from '../helpers/sqlite-spawn.js';

if (BACKEND !== 'sqlite') throw new Error('test/sqlite/* runs on SQLite only');

// What src/store/sqlite/driver.ts must choose, worked out from the Node.js release rather than from
// Node-API, which the module asks: Node-API 10 came with 22.14.0, and every 24 has it.
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
const napi10 = major > 22 || (major === 22 && minor >= 14);
const expected = napi10 ? { major: '13', specifier: 'better-sqlite3-napi' } : { major: '12', specifier: 'better-sqlite3' };

test(`on Node ${process.version} the SQLite driver is better-sqlite3 ${expected.major}`, () => {
  assert.equal(Number(process.versions.napi) >= 10, napi10, `Node-API ${process.versions.napi} on ${process.version}`);
  assert.equal(sqliteDriver.specifier, expected.specifier);
  assert.equal(sqliteDriver.version.split('.')[0], expected.major, `better-sqlite3 ${sqliteDriver.version}`);
  assert.equal(sqliteDriver.warning, undefined);
});

test('the driver loaded is the file whose package version is reported, and the only better-sqlite3 loaded', () => {
  const require = createRequire(import.meta.url);
  assert.equal(require(sqliteDriver.path), Database, 'Database is the module at sqliteDriver.path');
  // lib/index.js, one folder below the package's root in both majors.
  const pkg = JSON.parse(readFileSync(join(dirname(sqliteDriver.path), '..', 'package.json'), 'utf8')) as { name: string; version: string };
  assert.deepEqual(pkg, { ...pkg, name: 'better-sqlite3', version: sqliteDriver.version });
  const loaded = Object.keys(require.cache).filter((file) => /[\\/]better-sqlite3(-napi)?[\\/]lib[\\/]index\.js$/.test(file));
  assert.deepEqual(loaded, [sqliteDriver.path]);
});

test('the driver opens, writes and reads a SQLite file', (t) => {
  const db = new Database(join(tempDir(t), 'driver.db'));
  t.after(() => db.close());
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL)');
  db.prepare('INSERT INTO t VALUES (?, ?)').run(9007199254740993n, 'ficus');
  const row = db.prepare('SELECT id, name FROM t').safeIntegers().get() as { id: bigint; name: string };
  assert.deepEqual(row, { id: 9007199254740993n, name: 'ficus' });
});

test('a server on SQLite names its driver in the "plantstore ready" line', async (t) => {
  const server = await startServer(t, { DATABASE_URL: `sqlite:${join(tempDir(t), 'store.db')}` });
  const ready = server.logs().split('\n').find((line) => line.includes('"msg":"plantstore ready"'));
  assert.ok(ready, server.logs());
  assert.equal((JSON.parse(ready) as { driver?: string }).driver, `better-sqlite3 ${sqliteDriver.version}`);
  assert.equal(await server.stop(), 0);
});
