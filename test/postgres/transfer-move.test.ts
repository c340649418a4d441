import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseDatabaseUrl } from '../../src/config/database.js';
import { BACKEND, testDatabase } from '../helpers/app.js';
import { cli as inProcess } from '../helpers/cli.js';
import { startServer } from '../helpers/process.js';
import { apiView, appOn, records, seedEdgeStore, tempDir } from '../helpers/transfer.js';

if (BACKEND !== 'postgres') throw new Error('test/postgres/* needs PLANTSTORE_TEST_DATABASE_URL (npm test sets it)');

async function cli(args: string[], databaseUrl: string): Promise<string> {
  const res = await inProcess(args, { env: { DATABASE_URL: databaseUrl } });
  assert.equal(res.code, 0, `${args.join(' ')}: ${res.stderr}`);
  return res.stderr;
}

test('SQLite → PostgreSQL → SQLite with the real CLI: every listing identical, tokens made before the move work on a server after it', async (t) => {
  const dir = tempDir(t);
  const sqliteUrl = `sqlite:${join(dir, 'before.db')}`;
  const source = await appOn(t, parseDatabaseUrl(sqliteUrl, process.cwd()), { webhookAllowPrivate: true });
  const { admin, alice, bob, revoked, expired } = await seedEdgeStore(source.app, source.store);
  const before = await apiView(source.app, admin, [alice, bob]);
  // The server stops taking writes before the move (docs/backups.md), and goes away.
  await source.app.close();
  await source.store.close();

  const first = join(dir, 'from-sqlite.ndjson');
  await cli(['export', '--out', first], sqliteUrl);
  const pg = await testDatabase(t);
  assert.match(await cli(['import', first], pg.url), /plants: 26 imported, 0 already present\n {2}tokens: 5 imported/);
  // Before a server runs on it: its dispatcher would go on trying the pending events (attempts, due times).
  const second = join(dir, 'from-postgres.ndjson');
  await cli(['export', '--out', second], pg.url);
  assert.equal(records(second), records(first), 'PostgreSQL exports the records SQLite did, byte for byte');

  // A real server on PostgreSQL, over real HTTP: the old secrets authenticate, revoked and expired ones do not.
  const server = await startServer(t, { DATABASE_URL: pg.url });
  const get = (token: string, path = '/plants?limit=100') => fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  const listed = await get(alice);
  assert.equal(listed.status, 200);
  assert.equal(await listed.text(), JSON.stringify((before['user0 plants'] as unknown[][]).flat()));
  assert.equal((await get(admin, '/tokens')).status, 200);
  assert.equal((await get(revoked)).status, 401);
  assert.equal((await get(expired)).status, 401);
  assert.equal(await server.stop(), 0);

  const onPostgres = await appOn(t, pg.config);
  assert.deepEqual(await apiView(onPostgres.app, admin, [alice, bob]), before, 'on PostgreSQL');

  const afterUrl = `sqlite:${join(dir, 'after.db')}`;
  await cli(['import', second], afterUrl);
  const third = join(dir, 'back-to-sqlite.ndjson');
  await cli(['export', '--out', third], afterUrl);
  assert.equal(records(third), records(first));
  const back = await appOn(t, parseDatabaseUrl(afterUrl, process.cwd()));
  assert.deepEqual(await apiView(back.app, admin, [alice, bob]), before, 'back on SQLite');
});
