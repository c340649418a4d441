import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TOKEN_CACHE_TTL_MS } from '../../src/http/auth/index.js';
import { openStore } from '../../src/store/open.js';
import { loadMigrations } from '../../src/store/sql/migrations.js';
import { hashToken } from '../../src/domain/token.js';
import { adminSql, BACKEND, create, list, nextUrl, silentLogger, testApp, testDatabase } from '../helpers/app.js';

if (BACKEND !== 'postgres') throw new Error('test/postgres/* needs PLANTSTORE_TEST_DATABASE_URL (npm test sets it)');

/** Two app instances with separate connection pools, sharing one database, as behind a load balancer. */
async function twoInstances(t: Parameters<typeof testApp>[0]) {
  const a = await testApp(t);
  const b = await testApp(t, {}, { ...a, store: await a.reopen() });
  return { a, b, alice: await a.token('alice') };
}

test('what one instance stores, the other lists, pages included', async (t) => {
  const { a, b, alice } = await twoInstances(t);
  for (let i = 1; i <= 5; i++) assert.equal((await create(i % 2 ? a.app : b.app, alice, { id: i, name: `p${i}` })).statusCode, 200);
  const first = await list(a.app, alice, '?limit=3');
  assert.deepEqual(first.json(), [{ name: 'p1' }, { name: 'p2' }, { name: 'p3' }]);
  const second = await list(b.app, alice, nextUrl(first.headers.link)?.slice('/plants'.length));
  assert.deepEqual(second.json(), [{ name: 'p4' }, { name: 'p5' }]);
});

test('the same create sent to two instances at once stores one plant, and both answer 200', async (t) => {
  const { a, b, alice } = await twoInstances(t);
  for (let id = 0; id < 30; id++) {
    const body = { id, name: `same ${id}` };
    const [ra, rb] = await Promise.all([create(a.app, alice, body), create(b.app, alice, body)]);
    assert.deepEqual([ra.statusCode, rb.statusCode], [200, 200], `id ${id}`);
  }
  const rows = await adminSql(a.url, "SELECT count(*)::int AS n, count(DISTINCT id)::int AS ids FROM plants WHERE owner = 'alice'");
  assert.deepEqual(rows[0]?.rows[0], { n: 30, ids: 30 });
});

test('different creates of one id sent to two instances at once: one 200, one 409', async (t) => {
  const { a, b, alice } = await twoInstances(t);
  for (let id = 0; id < 30; id++) {
    const [ra, rb] = await Promise.all([create(a.app, alice, { id, name: 'from a' }), create(b.app, alice, { id, name: 'from b' })]);
    assert.deepEqual([ra.statusCode, rb.statusCode].sort(), [200, 409], `id ${id}`);
    const winner = ra.statusCode === 200 ? 'from a' : 'from b';
    const stored = await adminSql(a.url, `SELECT name FROM plants WHERE owner = 'alice' AND id = ${id}`);
    assert.deepEqual(stored[0]?.rows, [{ name: winner }], `id ${id}`);
  }
});

test('a token revoked through one instance\'s store is refused by the other within 5 seconds', async (t) => {
  const { a, b, alice } = await twoInstances(t);
  // The cache's lifetime passes on the test's clock.
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  assert.equal((await list(b.app, alice)).statusCode, 200); // cached by instance b now
  const record = await a.store.tokens.findTokenByHash(hashToken(alice));
  assert.ok(record && (await a.store.tokens.revokeToken(record.id)));
  t.mock.timers.tick(TOKEN_CACHE_TTL_MS + 100);
  assert.equal((await list(b.app, alice)).statusCode, 401);
  assert.ok(TOKEN_CACHE_TTL_MS < 5000);
});

test('instances starting together apply each migration exactly once', async (t) => {
  const db = await testDatabase(t);
  const stores = await Promise.all(
    Array.from({ length: 6 }, () => openStore(db.config, { logger: silentLogger, poolSize: 1, startupTimeoutMs: 5000 })),
  );
  t.after(() => Promise.all(stores.map((s) => s.close())));
  const applied = await adminSql(db.url, 'SELECT version FROM schema_migrations ORDER BY version');
  assert.deepEqual(applied[0]?.rows.map((r) => r.version), loadMigrations('postgres').map((m) => m.version));
  for (const store of stores) await store.health.ping();
  assert.equal(await stores[0]?.plants.createPlant('alice', { id: 1n, name: 'x' }), 'created');
  assert.equal(await stores[5]?.plants.createPlant('alice', { id: 1n, name: 'x' }), 'replayed');
});
