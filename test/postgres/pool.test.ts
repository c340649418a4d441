import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openStore } from '../../src/store/open.js';
import type { PoolStats, StoreObserver } from '../../src/store/store.js';
import { BACKEND, silentLogger, testDatabase } from '../helpers/app.js';

if (BACKEND !== 'postgres') throw new Error('test/postgres/* needs PLANTSTORE_TEST_DATABASE_URL (npm test sets it)');

/** pg's default idle timeout, after which a pool that keeps the default closes an unused connection. */
const PG_DEFAULT_IDLE_MS = 10_000;

test('the pool keeps its connections while idle, so a burst after a pause does not wait for new backends', async (t) => {
  const db = await testDatabase(t);
  let read: (() => PoolStats) | undefined;
  const observer: StoreObserver = { committed() {}, listCache() {}, pool: (r) => (read = r) };
  const store = await openStore(db.config, { logger: silentLogger, poolSize: 4, startupTimeoutMs: 5000, observer });
  t.after(() => store.close());
  assert.ok(read, 'the store reports its pool');
  // The pause is on a clock the test moves: pg's pool would close an idle connection from a timer set
  // when the connection goes back to it, so that timer must be a mocked one, from before the burst.
  t.mock.timers.enable({ apis: ['setTimeout'] });

  // Eight token lookups at once (lists would share one query): the pool opens all four connections.
  await Promise.all(Array.from({ length: 8 }, (_, i) => store.tokens.findTokenByHash(`no such hash ${i}`)));
  assert.deepEqual(read(), { total: 4, idle: 4, waiting: 0, max: 4 });

  t.mock.timers.tick(PG_DEFAULT_IDLE_MS + 1500);
  assert.deepEqual(read(), { total: 4, idle: 4, waiting: 0, max: 4 }, 'still four connections after the pause');
  // And they still answer.
  assert.deepEqual(await Promise.all(Array.from({ length: 4 }, () => store.tokens.findTokenByHash('no such hash'))), [null, null, null, null]);
});
