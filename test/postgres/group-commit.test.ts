import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { test } from 'node:test';
import pg from 'pg';
import { openStore } from '../../src/store/open.js';
import { StoreUnavailableError, type CreateOutcome, type StoreObserver } from '../../src/store/store.js';
import { BACKEND, silentLogger, testDatabase } from '../helpers/app.js';

if (BACKEND !== 'postgres') throw new Error('test/postgres/* needs PLANTSTORE_TEST_DATABASE_URL (npm test sets it)');

/**
 * Runs `body` while another transaction holds an uncommitted insert of alice's plant `id`, named `name`;
 * `body` ends that transaction with `finish`. The connection is ended in `finally`, not in an after hook:
 * the test database is dropped in one, which would wait forever for this transaction's lock.
 */
async function whileInserted(url: string, id: number, name: string, body: (finish: (end: 'COMMIT' | 'ROLLBACK') => Promise<void>) => Promise<void>): Promise<void> {
  const other = new pg.Client({ connectionString: url });
  await other.connect();
  try {
    await other.query('BEGIN');
    await other.query("INSERT INTO plants (owner, id, name) VALUES ('alice', $1, $2)", [id, name]);
    await body(async (end) => void (await other.query(end)));
  } finally {
    await other.end();
  }
}

test('creates that arrive while a batch commits wait for it and go together in the next; every one is committed', async (t) => {
  const db = await testDatabase(t);
  const batches: number[] = [];
  const observer: StoreObserver = { committed: (_backend, writes) => batches.push(writes), listCache() {}, pool() {} };
  const store = await openStore(db.config, { logger: silentLogger, poolSize: 4, startupTimeoutMs: 5000, observer });
  t.after(() => store.close());
  // The first batch is held in flight for as long as the test needs: another transaction inserts the
  // same plant and commits only later.
  await whileInserted(db.url, 0, 'plant 0', async (finish) => {
    const first = store.plants.createPlant('alice', { id: 0n, name: 'plant 0' });
    await nextTurn();

    // Twenty creates, each in an event-loop turn of its own: sent a turn at a time, they would be
    // twenty batches beside the held one (the pool has room for four at once).
    const outcomes: Array<Promise<CreateOutcome>> = [];
    for (let i = 1; i <= 20; i++) {
      outcomes.push(store.plants.createPlant('alice', { id: BigInt(i), name: `plant ${i}` }));
      await nextTurn();
    }
    await finish('COMMIT');
    assert.equal(await first, 'replayed', 'the held create found the same plant committed');
    assert.deepEqual(await Promise.all(outcomes), Array(20).fill('created'));
    assert.deepEqual(batches, [1, 20], 'the held batch alone, then every create that arrived meanwhile');
  });
  const page = await store.plants.listPlants({ owner: 'alice', limit: 50 });
  assert.deepEqual(page.plants.map((p) => p.name), Array.from({ length: 21 }, (_, i) => `plant ${i}`));
});

test('closing the store commits every create already asked for, batch after batch, before it ends the pool', async (t) => {
  const db = await testDatabase(t);
  const store = await openStore(db.config, { logger: silentLogger, poolSize: 2, startupTimeoutMs: 5000 });
  const first = store.plants.createPlant('alice', { id: 1n, name: 'first' });
  await nextTurn(); // the first batch is in flight; the next creates wait for it
  const rest = Array.from({ length: 1200 }, (_, i) => store.plants.createPlant('alice', { id: BigInt(i + 2), name: `plant ${i + 2}` }));
  const closed = store.close();
  assert.deepEqual(new Set(await Promise.all([first, ...rest])), new Set(['created']));
  await closed;

  const reopened = await openStore(db.config, { logger: silentLogger, poolSize: 2, startupTimeoutMs: 5000 });
  t.after(() => reopened.close());
  let count = 0;
  for (let after: number | null = 0; after !== null; ) {
    const page = await reopened.plants.listPlants({ owner: 'alice', after, limit: 500 });
    count += page.plants.length;
    after = page.next;
  }
  assert.equal(count, 1201);
});

test('a batch waiting on a row lock holds the next creates back until its statement timeout, then they go', async (t) => {
  const db = await testDatabase(t);
  const store = await openStore(db.config, { logger: silentLogger, poolSize: 4, startupTimeoutMs: 5000, queryTimeoutMs: 1000 });
  t.after(() => store.close());
  // Someone's transaction inserts alice's plant 1 and does not commit.
  await whileInserted(db.url, 1, 'held', async (finish) => {
    const started = performance.now();
    const held = store.plants.createPlant('alice', { id: 1n, name: 'mine' });
    const settled = held.then(() => performance.now(), () => performance.now());
    await nextTurn(); // that batch now waits on the lock; this create forms the next
    const next = store.plants.createPlant('bob', { id: 2n, name: 'unrelated' }).then((outcome) => ({ outcome, at: performance.now() }));

    await assert.rejects(held, StoreUnavailableError, 'the waiting create answers 503 at the statement timeout');
    const { outcome, at } = await next;
    assert.equal(outcome, 'created');
    assert.ok(at >= (await settled), 'the next batch went after the held one ended');
    assert.ok(at - started >= 900, `held back for the timeout: ${Math.round(at - started)} ms`);
    await finish('ROLLBACK');
    assert.equal(await store.plants.createPlant('alice', { id: 1n, name: 'mine' }), 'created', 'once the lock is gone');
  });
});
