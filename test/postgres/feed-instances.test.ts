import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test, type TestContext } from 'node:test';
import { PlantStore, type FeedEvent } from '@plantstore/client';
import pg from 'pg';
import { compareFeed, parseFeedId } from '../../src/domain/feed.js';
import { REVOCATION_WITHIN_MS } from '../../src/domain/token.js';
import { webhookBody } from '../../src/domain/webhook.js';
import { adminSql, BACKEND, POSTGRES_URL, testDatabase } from '../helpers/app.js';
import { balancer } from '../helpers/balancer.js';
import { cli } from '../helpers/cli.js';
import { eventually, HANG_MS } from '../helpers/eventually.js';
import { startServer } from '../helpers/process.js';
import { openFeed, subscribe, type EventStream, type ServerSentEvent } from '../helpers/sse.js';

if (BACKEND !== 'postgres') throw new Error('test/postgres/* needs PLANTSTORE_TEST_DATABASE_URL (npm test sets it)');

/**
 * The live feed across server processes on one PostgreSQL schema, as behind a load balancer: what one
 * instance commits, a stream on the other carries; a client that resumes on another instance (after a
 * drop, a kill -9) loses nothing and gets nothing twice; concurrent writers on both instances give every
 * reader the same sequence.
 */

async function token(databaseUrl: string, user: string, ...flags: string[]): Promise<string> {
  const res = await cli(['token', 'create', '--user', user, ...flags], { env: { DATABASE_URL: databaseUrl } });
  assert.equal(res.code, 0, res.stderr);
  return res.stdout.trim();
}

/** Two `plantstore serve` processes on one fresh schema, and alice's and bob's tokens. */
async function twoInstances(t: TestContext) {
  const { url: databaseUrl } = await testDatabase(t);
  const alice = await token(databaseUrl, 'alice');
  const bob = await token(databaseUrl, 'bob');
  const [a, b] = await Promise.all([startServer(t, { DATABASE_URL: databaseUrl }), startServer(t, { DATABASE_URL: databaseUrl })]);
  return { databaseUrl, a, b, alice, bob };
}

async function create(base: string, bearer: string, id: number, name: string): Promise<void> {
  const res = await fetch(`${base}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
    body: JSON.stringify({ id, name }),
  });
  assert.equal(res.status, 200, `create ${id} ${name} on ${base}: ${await res.text()}`);
}

async function remove(base: string, bearer: string, id: number): Promise<void> {
  const res = await fetch(`${base}/plants/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${bearer}` } });
  assert.equal(res.status, 204, `delete ${id} on ${base}: ${await res.text()}`);
}

/** What an event says, without its id: its type and its data, exactly as sent. */
const what = (e: ServerSentEvent) => `${e.type} ${e.data}`;
const created = (id: number, name: string) => `plant.created ${webhookBody({ id: BigInt(id), name })}`;
const deleted = (id: number, name: string) => `plant.deleted ${webhookBody({ id: BigInt(id), name })}`;
/** The name of the plant a plant event carries. */
const nameOf = (e: ServerSentEvent) => (JSON.parse(e.data) as { name: string }).name;

/** Every event id is a PostgreSQL one (tx-pos), each after the one before: the order is the log's. */
function assertIncreasing(events: readonly ServerSentEvent[], what: string): void {
  for (let i = 0; i < events.length; i++) {
    const at = parseFeedId(events[i]!.lastEventId);
    assert.ok(at !== undefined && at.tx > 0n, `${what}: event ${i} has the id ${events[i]!.lastEventId}`);
    if (i > 0) assert.ok(compareFeed(parseFeedId(events[i - 1]!.lastEventId)!, at) < 0, `${what}: ids ${events[i - 1]!.lastEventId} then ${events[i]!.lastEventId}`);
  }
}

/** Takes events until the plant named `name` is created; returns them all (it last). */
const untilCreated = (feed: EventStream, name: string) => feed.takeUntil((e) => e.type === 'plant.created' && nameOf(e) === name);

test('a stream on one instance carries the plants another instance creates and deletes, in order, and no other user\'s', async (t) => {
  const { a, b, alice, bob } = await twoInstances(t);
  const { feed } = await subscribe(t, b.url, { token: alice });
  const started = performance.now();
  await create(a.url, alice, 1, 'one');
  await create(a.url, bob, 1, 'bob\'s');
  await create(a.url, alice, 2, 'two');
  await remove(a.url, bob, 1);
  await remove(a.url, alice, 1);
  const events = [await feed.next(), await feed.next(), await feed.next()];
  // Not asserted: how soon is the machine's load as much as the notification's; the 1 s poll would carry
  // them too. The figure is shown, for a reader who wonders whether the notification path was taken.
  t.diagnostic(`three events of the other instance arrived within ${Math.round(performance.now() - started)} ms of the first create`);
  assert.deepEqual(events.map(what), [created(1, 'one'), created(2, 'two'), deleted(1, 'one')]);
  // Bob's events were committed before alice's last: had they been sent to her, they would be among these.
  assertIncreasing(events, 'alice on b');
});

test('a client that read some events on one instance resumes on the other with exactly the rest (Last-Event-ID, then since)', async (t) => {
  const { a, b, alice } = await twoInstances(t);
  const first = await subscribe(t, a.url, { token: alice });
  for (let id = 1; id <= 6; id++) await create(id % 2 ? a.url : b.url, alice, id, `p${id}`);
  const read = [await first.feed.next(), await first.feed.next(), await first.feed.next()];
  assert.deepEqual(read.map(what), [created(1, 'p1'), created(2, 'p2'), created(3, 'p3')]);
  first.feed.close();
  const third = read[2]!.lastEventId;

  // The header wins over since (here the ready id, before every event): the stream goes on after p3.
  const second = await subscribe(t, b.url, { token: alice, lastEventId: third, since: first.ready });
  assert.equal(second.ready, third, 'ready names the position it continues after');
  const onB = [await second.feed.next(), await second.feed.next()];
  assert.deepEqual(onB.map(what), [created(4, 'p4'), created(5, 'p5')]);
  second.feed.close();

  await create(b.url, alice, 7, 'p7'); // while the client is away
  const last = await subscribe(t, a.url, { token: alice, since: onB[1]!.lastEventId });
  assert.equal(last.ready, onB[1]!.lastEventId);
  await create(a.url, alice, 8, 'last');
  const rest = await untilCreated(last.feed, 'last');
  assert.deepEqual(rest.map(what), [created(6, 'p6'), created(7, 'p7'), created(8, 'last')]);
  assertIncreasing([...read, ...onB, ...rest], 'the three streams, end to end');
});

/**
 * `count` creators, each creating plants one after another on `base` while `more(n)` (n: its creates so
 * far) says so; each resolves with the names of its creates, all acknowledged, in order.
 */
function creators(count: number, base: string, bearer: string, prefix: string, more: (n: number) => boolean, firstId: number) {
  return Array.from({ length: count }, async (_, c) => {
    const acknowledged: string[] = [];
    for (let n = 0; more(n); n++) {
      const name = `${prefix}${c}-${n}`;
      await create(base, bearer, firstId + c * 100_000 + n, name);
      acknowledged.push(name);
    }
    return acknowledged;
  });
}

/** Each creator's names appear in `names` exactly once each and in the creator's order, and nothing else does. */
function assertExactlyOnce(names: readonly string[], acknowledged: readonly string[][], what: string): void {
  assert.equal(new Set(names).size, names.length, `${what}: an event came twice`);
  assert.deepEqual([...names].sort(), acknowledged.flat().sort(), `${what}: every acknowledged create, nothing else`);
  for (const [c, mine] of acknowledged.entries()) {
    assert.deepEqual(names.filter((n) => mine.includes(n)), mine, `${what}: creator ${c}'s creates in the order they were acknowledged`);
  }
}

test('kill -9 of the instance a client reads from, while creates go on through the other: it resumes there and misses nothing', async (t) => {
  const { a, b, alice } = await twoInstances(t);
  const { feed: onA } = await subscribe(t, a.url, { token: alice });
  let running = true;
  const writers = creators(4, b.url, alice, 'c', () => running, 1);
  // The kill comes once a.'s stream has carried some of them, with the writers still going.
  await onA.takeUntil(() => onA.events.length > 10);
  a.child.kill('SIGKILL');
  assert.equal(await a.exited, null);
  assert.equal(await onA.finished, 'cut', 'the stream was cut, not ended');
  const fromA = onA.events.filter((e) => e.type.startsWith('plant.'));
  assert.ok(!onA.events.some((e) => e.type === 'end'), 'a killed process says nothing');

  const { feed: onB, ready } = await subscribe(t, b.url, { token: alice, lastEventId: onA.lastEventId });
  assert.equal(ready, fromA[fromA.length - 1]!.lastEventId);
  // The writers go on until the resumed stream has carried twenty more of their creates (a writer's
  // failure ends the wait too, and is the test's).
  const writes = Promise.all(writers);
  await Promise.race([writes, onB.takeUntil(() => onB.events.length > 20)]);
  running = false;
  const acknowledged = await writes;
  await create(b.url, alice, 0, 'sentinel');
  await untilCreated(onB, 'sentinel');
  const fromB = onB.events.slice(1, -1);
  assert.ok(fromB.length >= 20, `${fromB.length} events after the resume`);

  const all = [...fromA, ...fromB];
  assert.ok(all.every((e) => e.type === 'plant.created'));
  assertExactlyOnce(all.map(nameOf), acknowledged, 'read on a, then on b');
  assertIncreasing(all, 'read on a, then on b');
});

test('creates on both instances at once: readers on either see every acknowledged create once, in one and the same order', async (t) => {
  const { databaseUrl, a, b, alice, bob } = await twoInstances(t);
  const admin = await token(databaseUrl, 'root', '--admin');
  const readers = [await subscribe(t, a.url, { token: alice }), await subscribe(t, b.url, { token: alice }), await subscribe(t, a.url, { token: admin })];
  const writers = [...creators(3, a.url, alice, 'a', (n) => n < 20, 1), ...creators(3, b.url, alice, 'b', (n) => n < 20, 1_000_000)];
  const bobs = creators(2, b.url, bob, 'bob', (n) => n < 20, 1);
  const acknowledged = await Promise.all(writers);
  const bobsAcknowledged = await Promise.all(bobs);
  await create(a.url, alice, 0, 'sentinel');
  const seen = await Promise.all(readers.map(({ feed }) => untilCreated(feed, 'sentinel')));
  const [onA, onB, everyone] = seen.map((events) => events.slice(0, -1)) as [ServerSentEvent[], ServerSentEvent[], ServerSentEvent[]];
  assertExactlyOnce(onA.map(nameOf), acknowledged, 'alice on a');
  assertIncreasing(onA, 'alice on a');
  assert.deepEqual(onB.map((e) => `${e.lastEventId} ${what(e)}`), onA.map((e) => `${e.lastEventId} ${what(e)}`), 'both of alice\'s readers, event for event');
  // The admin's stream has bob's creates too, in the same order relative to alice's.
  assertExactlyOnce(everyone.map(nameOf), [...acknowledged, ...bobsAcknowledged], 'the admin on a');
  assertIncreasing(everyone, 'the admin on a');
  assert.deepEqual(everyone.filter((e) => !nameOf(e).startsWith('bob')).map((e) => `${e.lastEventId} ${what(e)}`), onA.map((e) => `${e.lastEventId} ${what(e)}`));
});

test('an event whose transaction commits after a later one is not skipped: readers wait for it, and get it first', async (t) => {
  const { url: databaseUrl } = await testDatabase(t);
  const alice = await token(databaseUrl, 'alice');
  // a's connections carry a name of their own, to find its reads in pg_stat_activity.
  const name = `feed_a_${randomBytes(4).toString('hex')}`;
  const urlA = new URL(databaseUrl);
  urlA.searchParams.set('application_name', name);
  const [a, b] = await Promise.all([startServer(t, { DATABASE_URL: urlA.toString() }), startServer(t, { DATABASE_URL: databaseUrl })]);
  const live = await subscribe(t, a.url, { token: alice });

  // A writer whose commit is held up (another instance, slow to commit): its transaction wrote alice's
  // plant and event, as a create's statement does, before the next create began, and commits after it.
  // Ended here, not in an after hook: the schema is dropped in one, which would wait for ever for the
  // transaction's locks if the test failed while it was open.
  const slow = new pg.Client({ connectionString: databaseUrl });
  await slow.connect();
  let opened: Awaited<ReturnType<typeof subscribe>>;
  try {
    await slow.query('BEGIN');
    await slow.query(`INSERT INTO plants (owner, id, name) VALUES ('alice', 1, 'slow')`);
    await slow.query(`INSERT INTO plant_events (owner, deleted, body) VALUES ('alice', false, $1)`, [webhookBody({ id: 1n, name: 'slow' })]);
    await create(b.url, alice, 2, 'quick');
    // a has been told of quick's commit; once a read of the log has begun since, quick was there to read.
    const [since] = await adminSql(POSTGRES_URL as string, 'SELECT clock_timestamp()::text AS now');
    await eventually(async () => {
      const [reads] = await adminSql(
        POSTGRES_URL as string,
        `SELECT 1 FROM pg_stat_activity WHERE application_name = '${name}' AND query LIKE 'WITH s AS (SELECT pg_snapshot_xmin%' AND query_start > '${since?.rows[0]?.now}'`,
      );
      return reads?.rowCount ? true : undefined;
    }, 'a to read the log after quick\'s commit');
    // A stream opened now starts before the slow transaction's event too: its ready is where the log is final.
    opened = await subscribe(t, b.url, { token: alice });
    await slow.query('COMMIT');
  } finally {
    await slow.end();
  }
  await create(b.url, alice, 3, 'last');
  for (const [which, { feed }] of [['live on a', live], ['opened on b while slow was held', opened]] as const) {
    const events = await untilCreated(feed, 'last');
    assert.deepEqual(events.map(what), [created(1, 'slow'), created(2, 'quick'), created(3, 'last')], which);
    assertIncreasing(events, which);
  }
});

test('a token revoked through one instance ends its streams on the other with end token-revoked; the user\'s other token\'s stream goes on', async (t) => {
  const { databaseUrl, a, b, alice } = await twoInstances(t);
  const other = await token(databaseUrl, 'alice');
  const revoked = await subscribe(t, b.url, { token: alice });
  const kept = await subscribe(t, b.url, { token: other });
  const listed = await fetch(`${a.url}/tokens`, { headers: { authorization: `Bearer ${alice}` } });
  assert.equal(listed.status, 200);
  const [first] = (await listed.json()) as Array<{ id: string }>; // alice's first token: this one
  const started = performance.now();
  const res = await fetch(`${a.url}/tokens/${first!.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${alice}` } });
  assert.equal(res.status, 204);

  const end = await revoked.feed.next();
  const ms = performance.now() - started;
  t.diagnostic(`ended ${Math.round(ms)} ms after the revocation`);
  assert.equal(end.type, 'end');
  assert.equal((JSON.parse(end.data) as { reason: string }).reason, 'token-revoked');
  assert.equal(await revoked.feed.finished, 'ended');
  // Loose: the promise is REVOCATION_WITHIN_MS; three times it only catches a check that is not made.
  assert.ok(ms < 3 * REVOCATION_WITHIN_MS, `${Math.round(ms)} ms`);
  const again = await openFeed(t, b.url, { token: alice, lastEventId: revoked.ready });
  assert.equal((await again.answer()).status, 401);
  // The other token's stream was not ended with it: it carries what comes next.
  await create(a.url, other, 1, 'after');
  assert.deepEqual((await kept.feed.next()).data, webhookBody({ id: 1n, name: 'after' }));
});

test('the client\'s watchPlants behind a balancer goes on on the other instance when its own stops (SIGTERM), missing nothing', { timeout: HANG_MS }, async (t) => {
  const { a, b, alice } = await twoInstances(t);
  const front = await balancer(t, [a.url, b.url]);
  const controller = new AbortController();
  t.after(() => controller.abort());
  // A short wait before reconnecting (the server's retry: is 2 s), so that the test is quick.
  const watch = new PlantStore({ baseUrl: front.url, token: alice, maxRetryDelayMs: 200 }).watchPlants({ signal: controller.signal });
  const next = async (): Promise<FeedEvent> => {
    const result = await watch.next();
    assert.equal(result.done, false, 'the watch ended');
    return result.value as FeedEvent;
  };
  assert.equal((await next()).type, 'ready');
  const [portA, portB] = [a.url, b.url].map((base) => Number(new URL(base).port));
  assert.deepEqual(front.seen, [portA], 'the watch is on a');

  let running = true;
  const writers = Promise.all(creators(3, b.url, alice, 'w', () => running, 1));
  const events: FeedEvent[] = [];
  const take = async (until: () => boolean): Promise<void> => {
    while (!until()) events.push(await next());
  };
  await Promise.race([writers, take(() => events.length >= 10)]);
  const stopped = a.stop('SIGTERM');
  // The writers go on until the watch has carried twenty more of their creates, from b.
  await Promise.race([writers, take(() => events.length >= 30)]);
  running = false;
  const acknowledged = await writers;
  assert.equal(await stopped, 0);
  await create(b.url, alice, 0, 'sentinel');
  await take(() => events.at(-1)?.type === 'plant.created' && (events.at(-1) as { plant: { name: string } }).plant.name === 'sentinel');
  controller.abort();

  assert.deepEqual(front.seen.slice(1).filter((port) => port !== portB), [], `after a, only b: ${front.seen.join(', ')}`);
  assert.ok(front.seen.length >= 2, 'the watch reconnected');
  const plants = events.slice(0, -1);
  assert.ok(plants.every((e) => e.type === 'plant.created'), 'one ready only, then creates');
  assertExactlyOnce(plants.map((e) => (e as { plant: { name: string } }).plant.name), acknowledged, 'the watch, across the two instances');
});
