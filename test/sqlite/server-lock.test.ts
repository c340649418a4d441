import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openStore } from '../../src/store/open.js';
import { StoreLockedError } from '../../src/store/sqlite/index.js';
import { BACKEND, silentLogger, testDatabase, testStore } from '../helpers/app.js';
import { cli } from '../helpers/cli.js';
import { spawnServer, startServer } from '../helpers/process.js';

if (BACKEND !== 'sqlite') throw new Error('test/sqlite/* runs on SQLite only');

const options = { logger: silentLogger, poolSize: 1, startupTimeoutMs: 1000, listCachePlants: 1000 };

test('a second server handle on one SQLite store is refused; the CLI\'s handle is not', async (t) => {
  const { store, config, url } = await testStore(t);
  await assert.rejects(openStore(config, { ...options, server: true }), (e: unknown) => {
    assert.ok(e instanceof StoreLockedError);
    assert.match(e.message, new RegExp(`another plantstore server is serving ${url.slice('sqlite:'.length)}.*use PostgreSQL`));
    return true;
  });
  const cli = await openStore(config, { ...options, server: false });
  assert.equal(await cli.plants.createPlant('alice', { id: 1n, name: 'x' }), 'created');
  await cli.close();
  await store.close();
  const next = await openStore(config, { ...options, server: true });
  await next.close();
});

test('a second plantstore serve on the same SQLite store exits 1 and says why; the first keeps serving', async (t) => {
  const { url } = await testDatabase(t);
  const first = await startServer(t, { DATABASE_URL: url });
  const second = spawnServer(t, { DATABASE_URL: url });
  assert.equal(await second.exited, 1);
  assert.match(second.fatal(), /another plantstore server is serving/);
  assert.doesNotMatch(second.logs(), /listening/i, 'the second server never said it was listening');
  const token = (await cli(['token', 'create', '--user', 'alice'], { env: { DATABASE_URL: url } })).stdout.trim();
  assert.equal((await fetch(`${first.url}/plants`, { headers: { authorization: `Bearer ${token}` } })).status, 200);
  assert.equal(await first.stop(), 0);
});

test('a server killed with SIGKILL leaves no stale lock: the next one starts at once', async (t) => {
  const { url } = await testDatabase(t);
  const killed = await startServer(t, { DATABASE_URL: url });
  assert.equal(await killed.stop('SIGKILL'), null);
  const next = await startServer(t, { DATABASE_URL: url });
  assert.equal(await next.stop(), 0);
});
