import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { BACKEND, testStore } from '../helpers.js';

if (BACKEND !== 'sqlite') throw new Error('test/sqlite/* runs on SQLite only (npm test runs it without PLANTSTORE_TEST_DATABASE_URL)');

// A full collection before each measurement, so that RSS counts what is kept, not garbage not yet
// collected. `--expose-gc` at run time: the test runner starts this file without it.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const MB = 1024 * 1024;

function rss(): number {
  gc();
  gc();
  return process.memoryUsage().rss;
}

test('a million distinct cache-missing lists keep the server within 50 MB of its starting memory', async (t) => {
  const { store, reopen } = await testStore(t); // as a server opens it: the page cache on, LIST_CACHE_PLANTS 100000
  for (let id = 1n; id <= 10n; id++) await store.createPlant('alice', { id, name: `plant ${id}`, tag: 'a' });
  // The same queries through a handle without a cache first, so that what any busy process grows to
  // anyway (V8's young generation, compiled code, SQLite's own caches) is in the starting figure.
  const uncached = await reopen();
  for (let i = 0; i < 100_000; i++) await uncached.listPlants({ owner: 'alice', tag: `warm ${i}`, limit: 100 });
  const start = rss();
  let peak = start;
  const started = Date.now();
  // What any plants:read token can vary without bound: a new tag each time, or a position nobody used.
  for (let i = 0; i < 500_000; i++) {
    await store.listPlants({ owner: 'alice', tag: `tag ${i}`, limit: 100 });
    await store.listPlants({ owner: null, after: i + 1, limit: 100 });
    if (i % 100_000 === 99_999) peak = Math.max(peak, rss());
  }
  t.diagnostic(
    `RSS ${(start / MB).toFixed(0)} MB at the start, at most ${(peak / MB).toFixed(0)} MB over 1,000,000 lists ` +
      `(measured every 200,000), ${Date.now() - started} ms`,
  );
  assert.ok(peak - start < 50 * MB, `RSS grew by ${((peak - start) / MB).toFixed(0)} MB`);
});
