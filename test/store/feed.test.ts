import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { FEED_START, feedId, type FeedEvent } from '../../src/domain/feed.js';
import type { NewPlant } from '../../src/domain/plant.js';
import { webhookBody } from '../../src/domain/webhook.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/store.js';
import { silentLogger, testDatabase, testStore } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { exportTo, importFrom, tempDir } from '../helpers/transfer.js';

// The feed's log (store.feed) on every backend: what writes an event and what does not, reads after a
// position, of an owner, up to a position, and the retention's sweep. test/postgres/feed.test.ts has
// what only PostgreSQL's order needs: transactions still open, and transaction ids from elsewhere.

const HOUR_MS = 3_600_000;

/**
 * The log's events once at least `n` are final. On SQLite a write's promise waits for that; on PostgreSQL
 * a transaction still open anywhere in the cluster (another test's) holds later events back a moment.
 */
function finalEvents(store: Store, n: number, owner: string | null = null): Promise<readonly FeedEvent[]> {
  return eventually(async () => {
    const { events } = await store.feed.readFeed(FEED_START, 1000, owner);
    return events.length >= n ? events : undefined;
  }, `${n} events final in the log`);
}

/** An event as a line: where it is, whose, what, the body. */
const line = (e: FeedEvent) => `${feedId(e.at)} ${e.owner} ${e.deleted ? 'deleted' : 'created'} ${e.body}`;
const lines = (events: readonly FeedEvent[]) => events.map(line);

async function created(store: Store, owner: string, plant: NewPlant): Promise<void> {
  assert.equal(await store.plants.createPlant(owner, plant), 'created', `${owner} ${plant.id}`);
}

test('an empty log: both bounds at the start, nothing to read, nothing to sweep', async (t) => {
  const { store } = await testStore(t);
  assert.deepEqual(await store.feed.feedBounds(), { pruned: FEED_START, head: FEED_START });
  const read = await store.feed.readFeed(FEED_START, 10, null);
  assert.deepEqual(read.events, []);
  assert.ok(read.settledBefore > 0n, 'nothing is left to settle before the first transaction');
  assert.equal(await store.feed.sweepFeed(new Date(Date.now() + HOUR_MS)), 0);
  assert.equal(await store.feed.sweepFeed(new Date(Date.now() + HOUR_MS)), 0);
  assert.deepEqual(await store.feed.feedBounds(), { pruned: FEED_START, head: FEED_START });
});

test('a create writes one event and a delete another, whose body is the deleted plant; replays, conflicts and deletes of nothing write none', async (t) => {
  const { store } = await testStore(t);
  await created(store, 'alice', { id: 1n, name: 'Fern', tag: 'green' });
  assert.equal(await store.plants.createPlant('alice', { id: 1n, name: 'Fern', tag: 'green' }), 'replayed');
  assert.equal(await store.plants.createPlant('alice', { id: 1n, name: 'Other' }), 'conflict');
  await created(store, 'bob', { id: 1n, name: 'Bob\'s' });
  assert.equal(await store.plants.deletePlant('carol', 1n), false, 'nobody\'s plant of carol');
  assert.equal(await store.plants.deletePlant('alice', 2n), false);
  assert.equal(await store.plants.deletePlant('alice', 1n), true);
  assert.equal(await store.plants.deletePlant('alice', 1n), false, 'deleted already');
  const events = await finalEvents(store, 3);
  assert.deepEqual(events.map((e) => `${e.owner} ${e.deleted ? 'deleted' : 'created'} ${e.body}`), [
    'alice created {"id":1,"name":"Fern","tag":"green"}',
    'bob created {"id":1,"name":"Bob\'s"}',
    'alice deleted {"id":1,"name":"Fern","tag":"green"}',
  ]);
  assert.deepEqual(await store.feed.feedBounds(), { pruned: FEED_START, head: events[2]!.at });
});

test('an event\'s body is the webhook body, byte for byte, for created and deleted plants alike: exact int64, escapes, every width of UTF-8', async (t) => {
  const { store } = await testStore(t);
  const plants: NewPlant[] = [
    { id: 2n ** 63n - 1n, name: 'Max' },
    { id: -(2n ** 63n), name: 'Min', tag: '' },
    { id: 9_007_199_254_740_993n, name: 'quote " backslash \\ slash / tab \t line\n\u0001\u001f\u007f', tag: 'é 日本 🌿 \u2028\u2029' },
  ];
  for (const plant of plants) await created(store, 'alice', plant);
  for (const plant of plants) assert.equal(await store.plants.deletePlant('alice', plant.id), true);
  const events = await finalEvents(store, 6);
  const bodies = plants.map(webhookBody);
  assert.deepEqual(events.map((e) => e.body), [...bodies, ...bodies]);
  assert.deepEqual(events.map((e) => e.deleted), [false, false, false, true, true, true]);
  assert.equal(events[0]!.body, '{"id":9223372036854775807,"name":"Max"}');
});

test('readFeed reads after a position, at most limit, one owner\'s or everyone\'s, up to until', async (t) => {
  const { store } = await testStore(t);
  for (let i = 1; i <= 8; i++) await created(store, i % 2 === 0 ? 'bob' : 'alice', { id: BigInt(i), name: `p${i}` });
  const all = await finalEvents(store, 8);
  assert.equal(all.length, 8);
  const read = async (...args: Parameters<Store['feed']['readFeed']>) => lines((await store.feed.readFeed(...args)).events);
  assert.deepEqual(await read(all[2]!.at, 100, null), lines(all.slice(3)), 'after a position: what follows it');
  assert.deepEqual(await read(all[7]!.at, 100, null), [], 'after the last: nothing');
  assert.deepEqual(await read(FEED_START, 3, null), lines(all.slice(0, 3)), 'at most limit');
  // Paging by the last position read goes through the log once.
  const paged: string[] = [];
  for (let after = FEED_START; ;) {
    const { events } = await store.feed.readFeed(after, 3, null);
    if (events.length === 0) break;
    paged.push(...lines(events));
    after = events[events.length - 1]!.at;
  }
  assert.deepEqual(paged, lines(all));
  const alices = all.filter((e) => e.owner === 'alice');
  assert.deepEqual(await read(FEED_START, 100, 'alice'), lines(alices), 'one owner\'s');
  assert.deepEqual(await read(all[1]!.at, 100, 'alice'), lines(alices.slice(1)), 'one owner\'s, after another\'s event');
  assert.deepEqual(await read(FEED_START, 100, 'carol'), []);
  assert.deepEqual(await read(FEED_START, 100, null, all[3]!.at), lines(all.slice(0, 4)), 'up to until, which is included');
  assert.deepEqual(await read(all[1]!.at, 100, 'bob', all[5]!.at), lines([all[3]!, all[5]!]), 'after, owner and until together');
  assert.deepEqual(await read(all[4]!.at, 100, null, all[2]!.at), [], 'until before after');
  assert.deepEqual(await read(all[4]!.at, 1, 'alice', all[7]!.at), lines([all[6]!]));
});

test('the sweep keeps what is within the retention, then removes the events up to the newest mark older than its time; the pruned bound follows', async (t) => {
  const { store } = await testStore(t);
  await created(store, 'alice', { id: 1n, name: 'p1' });
  await created(store, 'alice', { id: 2n, name: 'p2' });
  const [e1, e2] = await finalEvents(store, 2);
  // Nothing was marked an hour ago: this sweep removes nothing, and marks the end (e2) now.
  assert.equal(await store.feed.sweepFeed(new Date(Date.now() - HOUR_MS)), 0);
  assert.deepEqual(await store.feed.feedBounds(), { pruned: FEED_START, head: e2!.at });
  assert.deepEqual(lines((await store.feed.readFeed(FEED_START, 10, null)).events), lines([e1!, e2!]));
  // A time after that mark and before the next sweep's (the clock, not a wait, separates them).
  const between = Date.now() + 1;
  await eventually(() => (Date.now() >= between ? true : undefined), 'the clock past the first mark');
  await created(store, 'alice', { id: 3n, name: 'p3' });
  const e3 = (await finalEvents(store, 3))[2]!;
  // The cut is the first mark: e1 and e2 go, e3 (marked by this sweep, after `between`) stays.
  assert.equal(await store.feed.sweepFeed(new Date(between)), 2);
  assert.deepEqual(await store.feed.feedBounds(), { pruned: e2!.at, head: e3.at });
  assert.deepEqual(lines((await store.feed.readFeed(FEED_START, 10, null)).events), lines([e3]));
  assert.equal(await store.feed.sweepFeed(new Date(between)), 0, 'the same sweep again: nothing more');
  // Past every mark: the log is emptied up to the last mark, e3, where the pruned bound stops.
  assert.equal(await store.feed.sweepFeed(new Date(Date.now() + HOUR_MS)), 1);
  assert.deepEqual(await store.feed.feedBounds(), { pruned: e3.at, head: e3.at });
  assert.deepEqual((await store.feed.readFeed(FEED_START, 10, null)).events, []);
  // The log goes on after what was removed.
  await created(store, 'alice', { id: 4n, name: 'p4' });
  const [e4] = await finalEvents(store, 1);
  assert.equal(e4!.body, '{"id":4,"name":"p4"}');
  assert.deepEqual(await store.feed.feedBounds(), { pruned: e3.at, head: e4!.at });
  assert.deepEqual(lines((await store.feed.readFeed(e3.at, 10, null)).events), lines([e4!]));
});

test('the listener is told after a commit that wrote events, and the events it announced are read after it', async (t) => {
  const { store } = await testStore(t);
  const told: bigint[] = [];
  let heard: () => void = () => undefined;
  store.feed.onFeedChanged((tx) => {
    told.push(tx);
    heard();
  });
  const announced = new Promise<void>((resolve) => (heard = resolve));
  await created(store, 'alice', { id: 1n, name: 'p1' });
  await announced;
  const [event] = await eventually(async () => {
    const read = await store.feed.readFeed(FEED_START, 10, null);
    // The announced transaction settled: its events are all there is to read of it.
    return read.settledBefore > told[0]! ? read.events : undefined;
  }, 'the announced commit settled');
  assert.equal(event?.body, '{"id":1,"name":"p1"}');
  assert.equal(event.at.tx, told[0], 'the announcement names the commit\'s transaction (0 on SQLite)');
});

test('plants imported from an export file write no event', async (t) => {
  const source = await testStore(t);
  for (let i = 1; i <= 3; i++) await created(source.store, 'alice', { id: BigInt(i), name: `p${i}` });
  const file = join(tempDir(t), 'export.ndjson');
  await exportTo(source.config, file);
  const target = await testDatabase(t);
  assert.equal((await importFrom(target.config, file)).tallies.plant.imported, 3);
  const store = await openStore(target.config, { logger: silentLogger, poolSize: 2, startupTimeoutMs: 5000, server: true });
  t.after(() => store.close());
  assert.equal((await store.plants.listPlants({ owner: 'alice', limit: 10 })).plants.length, 3);
  assert.deepEqual((await store.feed.readFeed(FEED_START, 10, null)).events, []);
  assert.deepEqual(await store.feed.feedBounds(), { pruned: FEED_START, head: FEED_START });
});
