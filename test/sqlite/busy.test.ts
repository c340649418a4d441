import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import Database from '../../src/store/sqlite/driver.js';
import { StoreUnavailableError } from '../../src/store/store.js';
import { BACKEND, testStore, TEST_QUERY_TIMEOUT_MS } from '../helpers/app.js';
import { call, errorCode, servedSqlite, type Answer } from '../helpers/sqlite-spawn.js';

if (BACKEND !== 'sqlite') throw new Error('test/sqlite/* runs on SQLite only');

/** The busy timeout a server runs with (not configurable; docs/guarantees.md, "Limits"). */
const SERVER_BUSY_TIMEOUT_MS = 5000;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** Another process's connection holding SQLite's write lock, as `BEGIN IMMEDIATE` in the sqlite3 shell does. */
function holdWriteLock(path: string): () => void {
  const other = new Database(path);
  other.exec('BEGIN IMMEDIATE');
  return () => {
    if (!other.open) return;
    other.exec('ROLLBACK');
    other.close();
  };
}

test('while another process holds the write lock, /healthz and a cached list answer within 100 ms, a create answers 503 50300 after 5 s', async (t) => {
  const { server, path, create, list } = await servedSqlite(t);
  assert.equal((await create(1)).status, 200);
  assert.equal((await list()).status, 200, 'the list is now cached');

  const release = holdWriteLock(path);
  t.after(release);
  const held = performance.now();
  let answered = false;
  const blocked = create(2).finally(() => (answered = true));
  // Requests fired on a clock, not one after the other: a blocked event loop delays every one sent
  // meanwhile. Sampled for as long as the create waits on the lock, which is the window that matters.
  const samples: Array<Promise<{ health: Answer; list: Answer }>> = [];
  while (!answered) {
    assert.ok(performance.now() - held < 60_000, 'the blocked create never answered');
    samples.push(Promise.all([call(`${server.url}/healthz`), list()]).then(([health, cached]) => ({ health, list: cached })));
    await sleep(100);
  }
  release();
  const answers = await Promise.all(samples);
  const late = await blocked;

  assert.ok(answers.every((a) => a.health.status === 200 && a.list.status === 200));
  assert.equal(answers[0]?.list.body, '[{"name":"p1"}]');
  const health = median(answers.map((a) => a.health.ms));
  const cached = median(answers.map((a) => a.list.ms));
  assert.ok(health <= 100, `/healthz took ${health.toFixed(0)} ms (median of ${answers.length}) while the lock was held`);
  assert.ok(cached <= 100, `the cached list took ${cached.toFixed(0)} ms (median of ${answers.length}) while the lock was held`);

  assert.equal(late.status, 503);
  assert.equal(errorCode(late), 50300);
  assert.equal(late.headers.get('retry-after'), '2');
  assert.ok(late.ms >= SERVER_BUSY_TIMEOUT_MS - 500 && late.ms <= SERVER_BUSY_TIMEOUT_MS + 1500, `the create answered after ${late.ms.toFixed(0)} ms`);

  assert.equal((await create(2)).status, 200, 'once the lock is released, the same create succeeds');
  assert.equal((await list()).body, '[{"name":"p1"},{"name":"p2"}]');
});

test('a create that finds the write lock taken succeeds once it is released within the busy timeout', async (t) => {
  const { path, create } = await servedSqlite(t);
  const release = holdWriteLock(path);
  t.after(release);
  const pending = create(1);
  // A window in which nothing may answer: the create must still be waiting on the lock when it is released.
  await sleep(1500);
  release();
  const answer = await pending;
  assert.equal(answer.status, 200, answer.body);
  assert.ok(answer.ms >= 1400, `answered after ${answer.ms.toFixed(0)} ms: it waited for the lock`);
});

test('writes waiting for the lock keep their order, and each waits the busy timeout from its own first try', async (t) => {
  const { store, holdWriteLock: hold } = await testStore(t);
  const release = await hold();
  const started = performance.now();
  const first = store.plants.createPlant('alice', { id: 1n, name: 'first' }).then(
    () => assert.fail('the first write should have timed out'),
    (error: unknown) => ({ error, ms: performance.now() - started }),
  );
  // The scenario's own clock, not a wait for an event: the later writes start partway through the
  // first one's busy timeout, so that they are still within theirs when it fails.
  await sleep(TEST_QUERY_TIMEOUT_MS * 0.6);
  const later = [2n, 3n, 4n].map((id) => store.plants.createPlant('alice', { id, name: `p${id}` }));
  const failed = await first;
  assert.ok(failed.error instanceof StoreUnavailableError);
  assert.ok(failed.ms >= TEST_QUERY_TIMEOUT_MS - 50, `the first write failed after ${failed.ms.toFixed(0)} ms`);
  // The later writes must not fail when the first does: the lock is held on past that moment.
  await sleep(TEST_QUERY_TIMEOUT_MS * 0.2);
  await release();
  assert.deepEqual(await Promise.all(later), ['created', 'created', 'created']);
  assert.equal(await store.plants.createPlant('alice', { id: 5n, name: 'p5' }), 'created');
  const page = await store.plants.listPlants({ owner: 'alice', limit: 10 });
  assert.deepEqual(page.plants.map((p) => p.name), ['p2', 'p3', 'p4', 'p5']);
});

test('the cursor key, written at the first list that needs a cursor, waits for a write lock held for a moment (as the checkpoint thread holds it) instead of failing with 503', async (t) => {
  const { store, holdWriteLock: hold } = await testStore(t);
  const release = await hold();
  let settled = false;
  const pending = store.secrets.cursorKey().finally(() => (settled = true));
  // A window in which nothing may happen: the key must not be settled while the lock is held.
  await sleep(300);
  assert.equal(settled, false, 'it waits while the lock is held');
  await release();
  const key = await pending;
  assert.equal(key.length, 32);
  assert.deepEqual(await store.secrets.cursorKey(), key, 'the same key afterwards');
});
