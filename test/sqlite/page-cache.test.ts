import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { BACKEND, testStore } from '../helpers/app.js';

if (BACKEND !== 'sqlite') throw new Error('test/sqlite/* runs on SQLite only (npm test runs it without PLANTSTORE_TEST_DATABASE_URL)');

// A full collection before each measurement, so that it counts what is kept, not garbage not yet
// collected. `--expose-gc` at run time: the test runner starts this file without it.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const MB = 1024 * 1024;

/**
 * What the process keeps alive: the V8 heap in use after a full collection, and the memory outside it
 * that JavaScript objects hold (Buffers). Not RSS, which also counts what the engine and the allocator
 * hold in reserve, differently on each Node.js release. Measured over this test, with the same 21-26 MB
 * kept on each: Node 24 leaves its young generation at 128 MB committed, empty (V8 grows it while many
 * objects survive; Node 20 and 22 stay at 32 MB), and RSS outside the V8 heap grows by about 65 MB on
 * Node 24, 45 MB on Node 22 and 10 MB on Node 20 (as much with better-sqlite3 12 as with 13); so RSS
 * grew by 186, 67 and 31 MB.
 */
function kept(): { kept: number; rss: number } {
  gc();
  gc();
  const { heapUsed, external, rss } = process.memoryUsage();
  return { kept: heapUsed + external, rss };
}

test('a million distinct cache-missing lists grow what the server keeps by less than 50 MB', async (t) => {
  const { store, reopen } = await testStore(t); // as a server opens it: the page cache on, LIST_CACHE_PLANTS 100000
  for (let id = 1n; id <= 10n; id++) await store.plants.createPlant('alice', { id, name: `plant ${id}`, tag: 'a' });
  // The same queries through a handle without a cache first, so that what any busy process keeps
  // anyway (compiled code, the statements' state) is in the starting figure.
  const uncached = await reopen();
  for (let i = 0; i < 100_000; i++) await uncached.plants.listPlants({ owner: 'alice', tag: `warm ${i}`, limit: 100 });
  const start = kept();
  const peak = { ...start };
  const started = Date.now();
  // What any plants:read token can vary without bound: a new tag each time, or a position nobody used.
  for (let i = 0; i < 500_000; i++) {
    await store.plants.listPlants({ owner: 'alice', tag: `tag ${i}`, limit: 100 });
    await store.plants.listPlants({ owner: null, after: i + 1, limit: 100 });
    if (i % 100_000 === 99_999) {
      const now = kept();
      peak.kept = Math.max(peak.kept, now.kept);
      peak.rss = Math.max(peak.rss, now.rss);
    }
  }
  const mb = (bytes: number): string => `${(bytes / MB).toFixed(0)} MB`;
  t.diagnostic(
    `${process.version}: kept ${mb(start.kept)} at the start, at most ${mb(peak.kept)} over 1,000,000 lists ` +
      `(measured every 200,000; RSS ${mb(start.rss)}, at most ${mb(peak.rss)}), ${Date.now() - started} ms`,
  );
  assert.ok(peak.kept - start.kept < 50 * MB, `what the process keeps grew by ${mb(peak.kept - start.kept)}`);
});
