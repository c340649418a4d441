import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test, type TestContext } from 'node:test';
import { buildApp } from '../../src/app.js';
import { parseDatabaseUrl } from '../../src/config/database.js';
import { openStore } from '../../src/store/open.js';
import type { PoolStats } from '../../src/store/store.js';
import { issueToken } from '../helpers/tokens.js';
import { adminSql, BACKEND, create, errorBody, list, silentLogger, TEST_QUERY_TIMEOUT_MS, testDatabase } from '../helpers/app.js';
import { cli } from '../helpers/cli.js';
import { eventually } from '../helpers/eventually.js';
import { spawnServer } from '../helpers/process.js';
import { startProxy } from '../helpers/tcp-proxy.js';

if (BACKEND !== 'postgres') throw new Error('test/postgres/* needs PLANTSTORE_TEST_DATABASE_URL (npm test sets it)');

/** The database a URL names: the suite's is whichever PLANTSTORE_TEST_DATABASE_URL names, `test` by default. */
const databaseName = (url: string) => new URL(url).pathname.slice(1);

/** An app on its own store at `url`, both closed when the test ends. */
async function appOn(t: TestContext, url: string, poolSize: number) {
  // The pool's state, as the metrics read it: what a test waits on when connections are cut.
  let pool: () => PoolStats = () => assert.fail('the store made no pool');
  const store = await openStore(parseDatabaseUrl(url, process.cwd()), {
    logger: silentLogger,
    poolSize,
    startupTimeoutMs: 5000,
    queryTimeoutMs: TEST_QUERY_TIMEOUT_MS,
    observer: { committed: () => undefined, listCache: () => undefined, pool: (read) => (pool = read) },
  });
  const app = await buildApp({ store, logger: silentLogger });
  t.after(async () => {
    await app.close();
    await store.close();
  });
  return { app, store, pool: () => pool() };
}

/** An app whose every connection to PostgreSQL goes through a proxy the test controls. */
async function appBehindProxy(t: TestContext) {
  const db = await testDatabase(t);
  const proxy = await startProxy(t, db.url);
  const { app, pool } = await appOn(t, proxy.via(db.url), 4);
  // Tokens are issued directly, not through the proxy, as the CLI on another machine would.
  const direct = await openStore(db.config, { logger: silentLogger, poolSize: 1, startupTimeoutMs: 5000 });
  t.after(() => direct.close());
  const token = async (user: string) => (await issueToken(direct, { user })).secret;
  return { app, proxy, token, db, pool };
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
  // Asked for together: identical lists share one read (and its failure), a different one has its own.
  const lists = await Promise.all([list(app, alice), list(app, alice), list(app, alice), list(app, alice, '?limit=5')]);
  lists.forEach((res, i) => assertUnavailable(res, `list ${i + 1} of 4 with a cached token`));
  assertUnavailable(await app.inject({ method: 'GET', url: '/readyz' }), 'readiness');
  assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200, 'the process itself is alive');

  await proxy.set('forward');
  assert.equal((await create(app, alice, { id: 2, name: 'after' })).statusCode, 200);
  assert.deepEqual((await list(app, alice)).json(), [{ name: 'before' }, { name: 'after' }]);
  assert.equal((await list(app, unchecked)).statusCode, 200);
  assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
});

test('connections dropped mid-flight (a failover) are replaced: the next requests succeed', async (t) => {
  const { app, proxy, token, pool } = await appBehindProxy(t);
  const alice = await token('alice');
  for (let i = 0; i < 4; i++) assert.equal((await create(app, alice, { id: i, name: `p${i}` })).statusCode, 200);
  // Cut every pooled connection, then let new ones through at once.
  await proxy.set('refuse');
  await proxy.set('forward');
  await eventually(() => (pool().total === 0 ? true : undefined), 'the cut connections to leave the pool');
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
  t.diagnostic(`answered 503 after ${waited} ms (a network that hangs: the client's timeout, ${TEST_QUERY_TIMEOUT_MS} ms + 1 s, or the 3000 ms connect timeout)`);
});

test('start-up waits for the database with a clear log line, answering 503 meanwhile, then serves', async (t) => {
  const db = await testDatabase(t);
  const proxy = await startProxy(t, db.url);
  await proxy.set('refuse');
  const server = spawnServer(t, { DATABASE_URL: proxy.via(db.url) });
  const url = await server.listening; // listening already, while the database refuses
  await eventually(() => (server.logs().includes('waiting for PostgreSQL') ? true : undefined), server.logs);
  const line = JSON.parse(server.logs().split('\n').find((l) => l.includes('waiting for PostgreSQL')) ?? '{}');
  assert.equal(line.msg, `waiting for PostgreSQL at 127.0.0.1:${proxy.port}/${databaseName(db.url)}`);
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
  const secret = (await cli(['token', 'create', '--user', 'alice'], { env: { DATABASE_URL: db.url } })).stdout.trim();
  assert.equal((await fetch(`${url}/plants`, { headers: { authorization: `Bearer ${secret}` } })).status, 200);
  assert.equal(await server.stop(), 0);
});

test('start-up gives up after DATABASE_STARTUP_TIMEOUT with a clear message and exit 1', async (t) => {
  const db = await testDatabase(t);
  const proxy = await startProxy(t, db.url);
  await proxy.set('refuse');
  const server = spawnServer(t, { DATABASE_URL: proxy.via(db.url), DATABASE_STARTUP_TIMEOUT: '2s' });
  assert.equal(await server.exited, 1);
  assert.match(server.fatal(), new RegExp(`PostgreSQL at 127.0.0.1:${proxy.port}/${databaseName(db.url)} did not accept connections within 2s`));
});

/**
 * A store on a database and a login role of its own (random names, removed afterwards), so that a test
 * can refuse the role's logins or the database's connections without disturbing other tests.
 */
async function appOnOwnDatabase(t: TestContext) {
  const admin = process.env.PLANTSTORE_TEST_DATABASE_URL as string;
  const suffix = randomBytes(6).toString('hex');
  const [database, role] = [`d_${suffix}`, `r_${suffix}`];
  await adminSql(admin, `CREATE ROLE ${role} LOGIN`, `CREATE DATABASE ${database} OWNER ${role}`);
  const u = new URL(admin);
  u.username = role;
  u.pathname = `/${database}`;
  const { app, store } = await appOn(t, u.toString(), 2);
  // After appOn's: node:test runs t.after hooks in the order they were added, so the app is closed first.
  t.after(async () => {
    for (const name of [database, `${database}_gone`]) await adminSql(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await adminSql(admin, `DROP ROLE IF EXISTS ${role}`);
  });
  /** Ends the store's open connections, so that its next request must open a new one. */
  const disconnect = () => eventually(async () => {
    const [res] = await adminSql(
      admin,
      `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = '${database}' AND application_name = 'plantstore'`,
    );
    return res?.rows[0]?.n === 0 ? true : undefined;
  }, 'the store\'s connections to end');
  const sql = (...statements: string[]) => adminSql(admin, ...statements).then(() => undefined);
  const token = async (user: string) => (await issueToken(store, { user })).secret;
  return { app, database, role, sql, disconnect, token };
}

type OwnDatabase = Awaited<ReturnType<typeof appOnOwnDatabase>>;

/** Ways the database can refuse a new connection at run time, each with the SQLSTATE it answers. */
const REFUSALS: { readonly what: string; cause(db: OwnDatabase): Promise<void>; undo(db: OwnDatabase): Promise<void> }[] = [
  {
    what: 'the database does not allow connections (55000)',
    cause: (db) => db.sql(`ALTER DATABASE ${db.database} ALLOW_CONNECTIONS false`),
    undo: (db) => db.sql(`ALTER DATABASE ${db.database} ALLOW_CONNECTIONS true`),
  },
  {
    what: 'the database is gone (3D000)',
    // A database with connections cannot be renamed; none are allowed in until it has its name back.
    async cause(db) {
      await db.sql(`ALTER DATABASE ${db.database} ALLOW_CONNECTIONS false`);
      await db.disconnect();
      await db.sql(`ALTER DATABASE ${db.database} RENAME TO ${db.database}_gone`);
    },
    undo: (db) => db.sql(`ALTER DATABASE ${db.database}_gone RENAME TO ${db.database}`, `ALTER DATABASE ${db.database} ALLOW_CONNECTIONS true`),
  },
  {
    what: 'the login is rejected (28000)',
    cause: (db) => db.sql(`ALTER ROLE ${db.role} NOLOGIN`),
    undo: (db) => db.sql(`ALTER ROLE ${db.role} LOGIN`),
  },
  {
    what: 'no connection slot is left (53300)',
    cause: (db) => db.sql(`ALTER ROLE ${db.role} CONNECTION LIMIT 0`),
    undo: (db) => db.sql(`ALTER ROLE ${db.role} CONNECTION LIMIT -1`),
  },
];

for (const refusal of REFUSALS) {
  test(`${refusal.what}: 503 50300 with Retry-After, then recovery without a restart`, async (t) => {
    const db = await appOnOwnDatabase(t);
    const { app } = db;
    const alice = await db.token('alice');
    const unchecked = await db.token('bob'); // never used before the outage: its check needs the database
    assert.equal((await create(app, alice, { id: 1, name: 'before' })).statusCode, 200);

    await refusal.cause(db);
    await db.disconnect(); // open connections outlive the change; new ones meet it
    // Asked for together: identical lists share one read (and its failure), a different one has its own.
    const lists = await Promise.all([list(app, alice), list(app, alice), list(app, alice), list(app, alice, '?limit=5')]);
    lists.forEach((res, i) => assertUnavailable(res, `list ${i + 1} of 4 with a cached token`));
    assertUnavailable(await create(app, alice, { id: 2, name: 'during' }), 'create');
    assertUnavailable(await list(app, unchecked), 'a token that cannot be checked');
    assertUnavailable(await app.inject({ method: 'GET', url: '/readyz' }), 'readiness');

    await refusal.undo(db);
    assert.equal((await create(app, alice, { id: 2, name: 'after' })).statusCode, 200);
    assert.deepEqual((await list(app, alice)).json(), [{ name: 'before' }, { name: 'after' }]);
    assert.equal((await list(app, unchecked)).statusCode, 200);
    assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
  });
}

test('start-up with a login the database refuses exits 1 at once, saying why; a disallowed database is waited for', async (t) => {
  const admin = process.env.PLANTSTORE_TEST_DATABASE_URL as string;
  const suffix = randomBytes(6).toString('hex');
  const [database, role] = [`d_${suffix}`, `r_${suffix}`];
  await adminSql(admin, `CREATE ROLE ${role} NOLOGIN`, `CREATE DATABASE ${database} OWNER ${role} ALLOW_CONNECTIONS false`);
  t.after(() => adminSql(admin, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`, `DROP ROLE IF EXISTS ${role}`).then(() => undefined));
  const u = new URL(admin);
  u.username = role;
  u.pathname = `/${database}`;
  const env = { DATABASE_URL: u.toString(), DATABASE_STARTUP_TIMEOUT: '60s' };

  // Waiting would not change a refused login (a configuration mistake), so start-up fails at once.
  const refused = spawnServer(t, env);
  const started = Date.now();
  assert.equal(await refused.exited, 1);
  assert.ok(Date.now() - started < 30_000, 'did not wait for the start-up timeout');
  assert.match(refused.fatal(), /not permitted to log in/);

  // Connections not allowed (55000) is a state an operator sets and lifts: start-up waits it out.
  await adminSql(admin, `ALTER ROLE ${role} LOGIN`);
  const waiting = spawnServer(t, env);
  await eventually(() => {
    if (waiting.logs().includes('waiting for PostgreSQL')) return true;
    assert.equal(waiting.child.exitCode, null, `start-up gave up instead of waiting: ${waiting.logs()}`);
    return undefined;
  }, waiting.logs);
  assert.match(waiting.logs(), /does not allow connections|not currently accepting connections/);
  await adminSql(admin, `ALTER DATABASE ${database} ALLOW_CONNECTIONS true`);
  await waiting.ready;
  assert.equal(await waiting.stop(), 0);
});
