import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test, type TestContext } from 'node:test';
import pg from 'pg';
import { parseDatabaseUrl } from '../../src/config/database.js';
import { compareFeed, FEED_START, feedId, parseFeedId, type FeedEvent } from '../../src/domain/feed.js';
import { openStore } from '../../src/store/open.js';
import type { FeedRead, Store } from '../../src/store/store.js';
import { adminSql, BACKEND, create, POSTGRES_URL, silentLogger, testApp, testDatabase, testStore, type TestDatabase } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { openFeed } from '../helpers/sse.js';

if (BACKEND !== 'postgres') throw new Error('test/postgres/* needs PLANTSTORE_TEST_DATABASE_URL (npm test sets it)');

// The feed's order on PostgreSQL (migration 011): events sort by (writing transaction, pos), and a reader
// takes only those of transactions older than every one still running, so that no event can later
// commit before one it has read. Also: transaction ids from another cluster (a restored dump), and
// instances hearing of each other's commits.

const HOUR_MS = 3_600_000;

/** The log's events once at least `n` are final (an older transaction anywhere in the cluster holds them back a moment). */
function finalEvents(store: Store, n: number): Promise<readonly FeedEvent[]> {
  return eventually(async () => {
    const { events } = await store.feed.readFeed(FEED_START, 1000, null);
    return events.length >= n ? events : undefined;
  }, `${n} events final in the log`);
}

/**
 * Runs `body` with a transaction open on a connection of its own, on the test's schema; `body` ends it
 * (or it is rolled back as the connection ends). The connection is ended in `finally`, not in an after
 * hook: the test's schema is dropped in one, which would wait forever for this transaction's locks.
 */
async function withTransaction(url: string, body: (other: pg.Client) => Promise<void>): Promise<void> {
  const other = new pg.Client({ connectionString: url });
  await other.connect();
  try {
    await other.query('BEGIN');
    await body(other);
  } finally {
    await other.end();
  }
}

/** Inserts an event of alice's plant in `other`'s transaction, as a create there would; returns the transaction's id. */
async function insertEvent(other: pg.Client, body: string): Promise<bigint> {
  await other.query('INSERT INTO plant_events (owner, deleted, body) VALUES ($1, false, $2)', ['alice', body]);
  return BigInt((await other.query<{ tx: string }>('SELECT pg_current_xact_id()::text AS tx')).rows[0]!.tx);
}

/** How many rows of plant_events another session sees with `body`: committed or not, as the table holds them. */
async function committedRows(url: string, body: string): Promise<number> {
  const [result] = await adminSql(url, `SELECT count(*)::int AS n FROM plant_events WHERE body = '${body}'`);
  return result!.rows[0].n as number;
}

test('an event of a transaction still open is not read, nor any event committed after it, until it commits; then both, in transaction order', async (t) => {
  const { store, url } = await testStore(t);
  assert.equal(await store.plants.createPlant('alice', { id: 0n, name: 'before' }), 'created');
  const [before] = await finalEvents(store, 1);
  let held = 0n;
  await withTransaction(url, async (other) => {
    held = await insertEvent(other, '{"id":1,"name":"held"}');
    // Created, and committed, while the other transaction is open: in a later transaction than it.
    assert.equal(await store.plants.createPlant('alice', { id: 2n, name: 'later' }), 'created');
    assert.equal(await committedRows(url, '{"id":2,"name":"later"}'), 1, 'the later create is committed');
    const read = await store.feed.readFeed(before!.at, 100, null);
    assert.deepEqual(read.events, [], 'neither the open transaction\'s event nor the one committed after it');
    assert.ok(read.settledBefore <= held, `settled before ${read.settledBefore}, the open transaction is ${held}`);
    assert.deepEqual(await store.feed.feedBounds(), { pruned: FEED_START, head: before!.at }, 'the head stays before the open transaction');
    assert.deepEqual((await store.feed.readFeed(FEED_START, 100, 'alice', { tx: held + 1000n, pos: 0n })).events.map((e) => e.body), ['{"id":0,"name":"before"}']);
    await other.query('COMMIT');
  });
  const events = await finalEvents(store, 3);
  assert.deepEqual(events.map((e) => e.body), ['{"id":0,"name":"before"}', '{"id":1,"name":"held"}', '{"id":2,"name":"later"}']);
  assert.equal(events[1]!.at.tx, held);
  assert.ok(events[2]!.at.tx > held, 'the later create\'s transaction comes after the held one, as its event does');
  assert.ok((await store.feed.readFeed(FEED_START, 100, null)).settledBefore > events[2]!.at.tx);
});

test('an event of a transaction rolled back is never read; the events after it are, once it has ended', async (t) => {
  const { store, url } = await testStore(t);
  await withTransaction(url, async (other) => {
    await insertEvent(other, '{"id":1,"name":"rolled back"}');
    assert.equal(await store.plants.createPlant('alice', { id: 2n, name: 'later' }), 'created');
    assert.deepEqual((await store.feed.readFeed(FEED_START, 100, null)).events, []);
    await other.query('ROLLBACK');
  });
  const events = await finalEvents(store, 1);
  assert.deepEqual(events.map((e) => e.body), ['{"id":2,"name":"later"}']);
});

test('a stream holds back the events committed after a transaction still open, then sends that transaction\'s first', async (t) => {
  const { app, store, url, token } = await testApp(t);
  const alice = await token('alice');
  // The hub's reads, seen from the store: the test commits only once the hub has read while the
  // other transaction was open, so that a hub sending what it read past it would have done so.
  const reads: Array<{ started: number; read: FeedRead }> = [];
  const readFeed = store.feed.readFeed.bind(store.feed);
  store.feed.readFeed = async (...args) => {
    const started = performance.now();
    const read = await readFeed(...args);
    reads.push({ started, read });
    return read;
  };
  const stream = await openFeed(t, app, { token: alice });
  await stream.next();
  await withTransaction(url, async (other) => {
    const held = await insertEvent(other, '{"id":1,"name":"held"}');
    assert.equal((await create(app, alice, { id: 2, name: 'later' })).statusCode, 200);
    const answered = performance.now();
    await eventually(() => (reads.some((r) => r.started > answered && r.read.settledBefore <= held) ? true : undefined), 'the hub reading while the transaction is open');
    assert.deepEqual(stream.events.map((e) => e.type), ['ready'], 'nothing sent while the transaction is open');
    await other.query('COMMIT');
  });
  const events = await stream.take(2);
  assert.deepEqual(events.map((e) => e.data), ['{"id":1,"name":"held"}', '{"id":2,"name":"later"}']);
  const [heldAt, laterAt] = events.map((e) => parseFeedId(e.lastEventId) ?? assert.fail(e.lastEventId));
  assert.ok(compareFeed(heldAt!, laterAt!) < 0, 'the ids in the same order');
});

test('the sweep removes events of transactions this server has not started (a restored dump), and puts the pruned bound back at the start', async (t) => {
  const { store, url } = await testStore(t);
  const [xmax] = await adminSql(url, 'SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS x');
  // Transaction ids from another cluster, far past this one's: as a dump restored here holds.
  const ahead = (BigInt(xmax!.rows[0].x as string) + 1_000_000n).toString();
  await adminSql(
    url,
    `INSERT INTO plant_events (tx, owner, deleted, body) VALUES ('${ahead}', 'alice', false, '{"id":8,"name":"restored"}'), ('${ahead}', 'alice', true, '{"id":8,"name":"restored"}')`,
    `INSERT INTO feed_marks (tx, pos) SELECT tx, max(pos) FROM plant_events GROUP BY tx`,
    `UPDATE feed_pruned SET tx = '${ahead}', pos = (SELECT min(pos) FROM plant_events)`,
  );
  assert.equal(await store.plants.createPlant('alice', { id: 1n, name: 'new' }), 'created');
  const [created] = await finalEvents(store, 1);
  assert.deepEqual((await store.feed.readFeed(FEED_START, 100, null)).events.map((e) => e.body), ['{"id":1,"name":"new"}'], 'events ahead are not read: they are not final');
  const stuck = await store.feed.feedBounds();
  assert.ok(compareFeed(stuck.pruned, stuck.head) > 0, `before the sweep, every resume is refused: ${feedId(stuck.pruned)} after ${feedId(stuck.head)}`);

  // Nothing is old enough for the retention: what goes is only what is ahead.
  assert.equal(await store.feed.sweepFeed(new Date(Date.now() - HOUR_MS)), 2);
  const [left] = await adminSql(url, `SELECT (SELECT count(*)::int FROM plant_events WHERE tx >= '${ahead}') AS events, (SELECT count(*)::int FROM feed_marks WHERE tx >= '${ahead}') AS marks`);
  assert.deepEqual(left!.rows[0], { events: 0, marks: 0 });
  assert.deepEqual(await store.feed.feedBounds(), { pruned: FEED_START, head: created!.at });
  assert.equal(await store.feed.sweepFeed(new Date(Date.now() - HOUR_MS)), 0, 'nothing ahead any more');
  assert.equal(await store.plants.createPlant('alice', { id: 2n, name: 'next' }), 'created');
  assert.deepEqual((await finalEvents(store, 2)).map((e) => e.body), ['{"id":1,"name":"new"}', '{"id":2,"name":"next"}']);
});

/** A handle on the test's schema whose connections carry `name` (application_name), to find them in pg_stat_activity. */
async function instance(t: TestContext, db: TestDatabase, name: string): Promise<Store> {
  const url = new URL(db.url);
  url.searchParams.set('application_name', name);
  const store = await openStore(parseDatabaseUrl(url.toString(), process.cwd()), { logger: silentLogger, poolSize: 2, startupTimeoutMs: 5000, server: true });
  t.after(() => store.close());
  return store;
}

test('an instance is told of another\'s commit that wrote events, with its transaction, and reads them', async (t) => {
  const db = await testDatabase(t);
  const name = `feed_b_${randomBytes(4).toString('hex')}`;
  const a = await instance(t, db, `feed_a_${randomBytes(4).toString('hex')}`);
  const b = await instance(t, db, name);
  const told: bigint[] = [];
  b.feed.onFeedChanged((tx) => told.push(tx));
  await eventually(async () => {
    const [result] = await adminSql(POSTGRES_URL as string, `SELECT 1 FROM pg_stat_activity WHERE application_name = '${name}' AND query = 'LISTEN plantstore_feed' AND state = 'idle'`);
    return result!.rowCount === 1 ? true : undefined;
  }, 'b listening');
  assert.equal(await a.plants.createPlant('alice', { id: 1n, name: 'from a' }), 'created');
  const tx = await eventually(() => told[0], 'b told of a\'s commit');
  const [event] = await finalEvents(b, 1);
  assert.equal(event!.body, '{"id":1,"name":"from a"}');
  assert.equal(event!.at.tx, tx);
});
