import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test, type TestContext } from 'node:test';
import { buildApp } from '../../src/app.js';
import { parseDatabaseUrl } from '../../src/config.js';
import { openStore } from '../../src/store/open.js';
import { issueToken } from '../../src/tokens.js';
import { BACKEND, create, errorBody, list, silentLogger, TEST_QUERY_TIMEOUT_MS, testDatabase } from '../helpers.js';
import { runCli, spawnServer } from '../process.js';
import { startProxy } from './tcp-proxy.js';

if (BACKEND !== 'postgres') throw new Error('test/postgres/* needs PLANTSTORE_TEST_DATABASE_URL (npm test sets it)');

/** An app whose every connection to PostgreSQL goes through a proxy the test controls. */
async function appBehindProxy(t: TestContext) {
  const db = await testDatabase(t);
  const proxy = await startProxy(t, db.url);
  const store = await openStore(parseDatabaseUrl(proxy.via(db.url)), {
    logger: silentLogger,
    poolSize: 4,
    startupTimeoutMs: 5000,
    queryTimeoutMs: TEST_QUERY_TIMEOUT_MS,
  });
  const app = await buildApp({ store, logger: silentLogger });
  t.after(async () => {
    await app.close();
    await store.close();
  });
  // Tokens are issued directly, not through the proxy, as the CLI on another machine would.
  const direct = await openStore(db.config, { logger: silentLogger, poolSize: 1, startupTimeoutMs: 5000 });
  t.after(() => direct.close());
  const token = async (user: string) => (await issueToken(direct, { user })).secret;
  return { app, proxy, token, db };
}

function assertUnavailable(res: Awaited<ReturnType<typeof list>>, label: string) {
  assert.equal(res.statusCode, 503, label);
  assert.equal(errorBody(res).error, 50300, label);
  assert.equal(res.headers['retry-after'], '2', label);
}

test('database down: 503 50300 (never 401 for a token that could not be checked), then recovery without a restart', async (t) => {
  const { app, proxy, token } = await appBehindProxy(t);
  const alice = await token('alice');
  assert.equal((await create(app, alice, { id: 1, name: 'before' })).statusCode, 200);

  await proxy.set('refuse');
  const unchecked = await token('bob'); // not in any cache: the server cannot check it now
  assertUnavailable(await list(app, unchecked), 'unknown-to-the-cache token');
  assertUnavailable(await create(app, alice, { id: 2, name: 'during' }), 'create with a cached token');
  assertUnavailable(await list(app, alice), 'list with a cached token');
  assertUnavailable(await app.inject({ method: 'GET', url: '/readyz' }), 'readiness');
  assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200, 'the process itself is alive');

  await proxy.set('forward');
  assert.equal((await create(app, alice, { id: 2, name: 'after' })).statusCode, 200);
  assert.deepEqual((await list(app, alice)).json(), [{ name: 'before' }, { name: 'after' }]);
  assert.equal((await list(app, unchecked)).statusCode, 200);
  assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
});

test('connections dropped mid-flight (a failover) are replaced: the next requests succeed', async (t) => {
  const { app, proxy, token } = await appBehindProxy(t);
  const alice = await token('alice');
  for (let i = 0; i < 4; i++) assert.equal((await create(app, alice, { id: i, name: `p${i}` })).statusCode, 200);
  // Cut every pooled connection, then let new ones through at once.
  await proxy.set('refuse');
  await proxy.set('forward');
  await sleep(50);
  const statuses = [];
  for (let i = 4; i < 8; i++) statuses.push((await create(app, alice, { id: i, name: `p${i}` })).statusCode);
  // A request may meet a connection that died with the cut (503, retryable); later ones must succeed.
  assert.ok(statuses.every((s) => s === 200 || s === 503), JSON.stringify(statuses));
  assert.equal(statuses.at(-1), 200);
  assert.equal((await list(app, alice)).statusCode, 200);
});

test('a database that hangs is answered with 503 after a bounded wait, not a hung request', async (t) => {
  const { app, proxy, token } = await appBehindProxy(t);
  const alice = await token('alice');
  assert.equal((await list(app, alice)).statusCode, 200);
  await proxy.set('blackhole');
  const started = Date.now();
  assertUnavailable(await create(app, alice, { id: 1, name: 'stuck' }), 'create while the network hangs');
  const waited = Date.now() - started;
  await proxy.set('forward');
  assert.equal((await create(app, alice, { id: 1, name: 'stuck' })).statusCode, 200);
  t.diagnostic(`answered 503 after ${waited} ms (query timeout ${TEST_QUERY_TIMEOUT_MS} ms, connect timeout 3000 ms)`);
});

test('start-up waits for the database with a clear log line, answering 503 meanwhile, then serves', async (t) => {
  const db = await testDatabase(t);
  const proxy = await startProxy(t, db.url);
  await proxy.set('refuse');
  const server = spawnServer(t, { DATABASE_URL: proxy.via(db.url) });
  const url = await server.listening; // listening already, while the database refuses
  while (!server.logs().includes('waiting for PostgreSQL')) await sleep(50);
  const line = JSON.parse(server.logs().split('\n').find((l) => l.includes('waiting for PostgreSQL')) ?? '{}');
  assert.equal(line.msg, `waiting for PostgreSQL at 127.0.0.1:${proxy.port}/test`);
  assert.match(line.reason, /ECONNREFUSED/);
  assert.equal((await fetch(`${url}/healthz`)).status, 200, 'alive');
  for (const path of ['/readyz', '/plants']) {
    const res = await fetch(`${url}${path}`, { headers: { authorization: 'Bearer pst_x' } });
    assert.equal(res.status, 503, path);
    assert.equal(((await res.json()) as { error: number }).error, 50301, path);
  }
  await proxy.set('forward');
  assert.equal(await server.ready, url);
  assert.equal((await fetch(`${url}/readyz`)).status, 200);
  const secret = (await runCli(['token', 'create', '--user', 'alice'], { DATABASE_URL: db.url })).stdout.trim();
  assert.equal((await fetch(`${url}/plants`, { headers: { authorization: `Bearer ${secret}` } })).status, 200);
  assert.equal(await server.stop(), 0);
});

test('start-up gives up after DATABASE_STARTUP_TIMEOUT with a clear message and exit 1', async (t) => {
  const db = await testDatabase(t);
  const proxy = await startProxy(t, db.url);
  await proxy.set('refuse');
  const server = spawnServer(t, { DATABASE_URL: proxy.via(db.url), DATABASE_STARTUP_TIMEOUT: '2s' });
  assert.equal(await server.exited, 1);
  assert.match(server.errors(), new RegExp(`PostgreSQL at 127.0.0.1:${proxy.port}/test did not accept connections within 2s`));
});
