import assert from 'node:assert/strict';
import { renameSync, rmSync } from 'node:fs';
import { test, type TestContext } from 'node:test';
import { openStore } from '../../src/store/open.js';
import { StoreUnavailableError } from '../../src/store/store.js';
import { BACKEND, silentLogger, testDatabase } from '../helpers/app.js';
import { runCli, startServer, type ServerProcess } from '../helpers/process.js';
import { eventually } from '../helpers/eventually.js';
import { call, errorCode, servedSqlite } from '../helpers/sqlite-spawn.js';

if (BACKEND !== 'sqlite') throw new Error('test/sqlite/* runs on SQLite only');

/** The in-process stores check their file often: the test waits for the check, not for the production interval. */
const WATCH_MS = 50;

function logLines(server: ServerProcess): Array<{ level: number; msg: string; path?: string }> {
  return server.logs().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
}

async function servedStore(t: TestContext) {
  const served = await servedSqlite(t);
  assert.equal((await served.create(1)).status, 200);
  assert.equal((await served.list()).status, 200);
  return served;
}

async function expectLost(s: Awaited<ReturnType<typeof servedStore>>, what: RegExp): Promise<void> {
  const ready = await eventually(async () => {
    const a = await s.ready();
    return a.status !== 200 ? a : undefined;
  }, 'the server to be unready');
  assert.equal(ready.status, 503, 'unready within seconds');
  assert.equal(errorCode(ready), 50300);
  const create = await s.create(2);
  assert.equal(create.status, 503, 'writes are refused, never written into the lost file');
  assert.equal(errorCode(create), 50300);
  const list = await s.list();
  assert.equal(list.status, 503, 'reads are refused too: the file the server reads is no longer the store');
  assert.equal(errorCode(list), 50300);
  assert.equal((await call(`${s.server.url}/healthz`)).status, 200);
  const errors = logLines(s.server).filter((l) => l.level === 50 && l.msg.includes(s.path));
  assert.equal(errors.length, 1, 'one error line names the file');
  assert.match(errors[0]?.msg ?? '', what);
  assert.match(errors[0]?.msg ?? '', /restore the store from a backup/);
}

test('a store file deleted under a running server: within seconds it is unready, refuses requests with 503 50300 and logs an error naming the file; a restart says it created a new store', async (t) => {
  const s = await servedStore(t);
  rmSync(s.path);
  await expectLost(s, /was deleted or moved away while the server was running/);
  assert.equal(await s.server.stop(), 0);

  const restarted = await startServer(t, s.env);
  assert.ok(
    logLines(restarted).some((l) => l.level === 30 && l.msg === `no store at ${s.path}: created a new, empty one`),
    'the new, empty store is logged',
  );
  assert.equal(await restarted.stop(), 0);
});

test('a store file replaced by renaming another SQLite file over it: within seconds it is unready, refuses requests with 503 50300 and logs an error naming the file', async (t) => {
  const s = await servedStore(t);
  const other = await testDatabase(t);
  assert.equal((await runCli(['migrate'], { DATABASE_URL: other.url })).code, 0);
  renameSync(other.url.slice('sqlite:'.length), s.path);
  await expectLost(s, /was replaced by another file while the server was running/);
});

test('a store file moved away and back: the store is unavailable meanwhile and serves again once the same file is back', async (t) => {
  const { config, url } = await testDatabase(t);
  const path = url.slice('sqlite:'.length);
  const store = await openStore(config, { logger: silentLogger, poolSize: 1, startupTimeoutMs: 1000, server: true, watchIntervalMs: WATCH_MS });
  t.after(() => store.close());
  assert.equal(await store.plants.createPlant('alice', { id: 1n, name: 'a' }), 'created');
  renameSync(path, `${path}.moved`);
  const lost = await eventually(() => store.health.ping().then(() => undefined, (e: unknown) => e), 'ping to fail');
  assert.ok(lost instanceof StoreUnavailableError, 'ping fails once the file is gone');
  await assert.rejects(store.plants.createPlant('alice', { id: 2n, name: 'b' }), StoreUnavailableError);
  renameSync(`${path}.moved`, path);
  const back = (await eventually(() => store.health.ping().then(() => ({ error: undefined }), () => undefined), 'ping to succeed')).error;
  assert.equal(back, undefined, 'ready again');
  assert.equal(await store.plants.createPlant('alice', { id: 2n, name: 'b' }), 'created');
  assert.deepEqual((await store.plants.listPlants({ owner: 'alice', limit: 10 })).plants.map((p) => p.name), ['a', 'b']);
});

test('a cached page is not served once the store file is moved away: the list is refused like any read, and served again once the file is back', async (t) => {
  const { config, url } = await testDatabase(t);
  const path = url.slice('sqlite:'.length);
  const store = await openStore(config, { logger: silentLogger, poolSize: 1, startupTimeoutMs: 1000, listCachePlants: 1000, server: true, watchIntervalMs: WATCH_MS });
  t.after(() => store.close());
  assert.equal(await store.plants.createPlant('alice', { id: 1n, name: 'a' }), 'created');
  const query = { owner: 'alice', limit: 10 };
  const page = await store.plants.listPlants(query);
  assert.equal(await store.plants.listPlants(query), page, 'the page is cached');
  assert.equal(store.plants.cachedPage(query), page, 'and is there for the list route to answer at once');
  renameSync(path, `${path}.moved`);
  const lost = await eventually(() => store.health.ping().then(() => undefined, (e: unknown) => e), 'ping to fail');
  assert.ok(lost instanceof StoreUnavailableError, 'ping fails once the file is gone');
  await assert.rejects(store.plants.listPlants(query), StoreUnavailableError);
  // The route's synchronous look refuses it too (the page is still in the cache).
  assert.throws(() => store.plants.cachedPage(query), StoreUnavailableError);
  renameSync(`${path}.moved`, path);
  await eventually(() => store.health.ping().then(() => true, () => undefined), 'ping to succeed');
  assert.deepEqual((await store.plants.listPlants(query)).plants, [{ name: 'a' }]);
});
