import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test, type TestContext } from 'node:test';
import pg from 'pg';
import { parseDatabaseUrl } from '../../src/config/database.js';
import { openStore } from '../../src/store/open.js';
import type { Store, StoreObserver } from '../../src/store/store.js';
import { webhookService } from '../../src/webhooks/service.js';
import { adminSql, BACKEND, POSTGRES_URL, silentLogger, testDatabase, type TestDatabase } from '../helpers/app.js';
import { add, register, SETTINGS } from '../helpers/webhook-dispatch.js';
import { eventually } from '../helpers/eventually.js';
import { receiver } from '../helpers/webhook-receiver.js';

if (BACKEND !== 'postgres') throw new Error('test/postgres/* needs PLANTSTORE_TEST_DATABASE_URL (npm test sets it)');

// Instances on one store hear of each other's new events through LISTEN/NOTIFY (store/postgres/notify.ts):
// the create's transaction notifies, and the other instance's worker claims at once, not at its poll.

/** Far beyond every bound below: a worker with this poll finds another instance's event only if told. */
const FAR_POLL_MS = 600_000;
/** Loose: a notification and a claim take milliseconds. */
const DELIVERED_WITHIN_MS = 5000;

/** A handle on the test's schema whose connections carry `name` (application_name), to find them in pg_stat_activity. */
async function instance(t: TestContext, db: TestDatabase, name: string, observer?: StoreObserver): Promise<Store> {
  const url = new URL(db.url);
  url.searchParams.set('application_name', name);
  const store = await openStore(parseDatabaseUrl(url.toString(), process.cwd()), { logger: silentLogger, poolSize: 2, startupTimeoutMs: 5000, observer });
  t.after(() => store.close());
  return store;
}

/** The backend pid of the connection of `name` that is listening (its last statement a LISTEN, done). */
async function listener(name: string): Promise<number> {
  return eventually(async () => {
    const [result] = await adminSql(
      POSTGRES_URL as string,
      `SELECT pid FROM pg_stat_activity WHERE application_name = '${name}' AND query LIKE 'LISTEN %' AND state = 'idle'`,
    );
    return result?.rows[0]?.pid as number | undefined;
  }, `${name} listening`);
}

test('an event created through instance A is delivered by instance B\'s worker at once, B\'s poll far away; also after B\'s listening connection was cut', async (t) => {
  const db = await testDatabase(t);
  const tag = randomBytes(4).toString('hex');
  const a = await instance(t, db, `notify_a_${tag}`);
  const b = await instance(t, db, `notify_b_${tag}`);
  const rx = await receiver(t);
  await register(a, rx.url, 'alice');
  const service = webhookService(b, { ...SETTINGS, pollIntervalMs: FAR_POLL_MS }, silentLogger);
  t.after(() => service.stop(Date.now() + 1000));
  service.start();
  const first = await listener(`notify_b_${tag}`);

  // A has no worker; B's looked once, at its start, before this event existed.
  await add(a, 'alice', { id: 1n, name: 'one' });
  const [got] = await rx.waitFor(1, DELIVERED_WITHIN_MS);
  assert.equal(got?.body, '{"id":1,"name":"one"}');

  // The listening connection dies (a failover, an administrator): B makes it again, with backoff.
  await adminSql(POSTGRES_URL as string, `SELECT pg_terminate_backend(${first})`);
  const second = await eventually(async () => {
    const pid = await listener(`notify_b_${tag}`);
    return pid === first ? undefined : pid;
  }, 'listening again');
  assert.notEqual(second, first);
  await add(a, 'alice', { id: 2n, name: 'two' });
  const both = await rx.waitFor(2, DELIVERED_WITHIN_MS);
  assert.equal(both[1]?.body, '{"id":2,"name":"two"}');
  await service.stop(Date.now() + 1000);
});

test('one notification per commit that queued events: none for creates that queue none, one for a group commit of 500', async (t) => {
  const db = await testDatabase(t);
  const schema = /search_path=(\S+)/.exec(new URL(db.url).searchParams.get('options') ?? '')?.[1];
  assert.ok(schema);
  let commits = 0;
  const observer: StoreObserver = { committed: () => void commits++, listCache: () => undefined, pool: () => undefined };
  const a = await instance(t, db, `notify_c_${randomBytes(4).toString('hex')}`, observer);
  await register(a, 'https://receiver.example/hook', 'alice');
  // Every notification of the channel, in commit order, as another instance's listener gets them.
  const heard: string[] = [];
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  t.after(() => client.end());
  client.on('notification', ({ payload = '' }) => heard.push(payload));
  await client.query('LISTEN plantstore_events');

  // Bob has no endpoint: his creates queue no event, and commit without notifying.
  for (let i = 1; i <= 5; i++) await add(a, 'bob', { id: BigInt(i), name: `b${i}` });
  // Alice's 500 creates asked for at once: one batch, one commit, one notification.
  commits = 0;
  await Promise.all(Array.from({ length: 500 }, (_, i) => add(a, 'alice', { id: BigInt(100 + i), name: `a${i}` })));
  assert.equal(commits, 1);
  // Notifications reach listeners in commit order: once this one is heard, every earlier one has been.
  await adminSql(POSTGRES_URL as string, "NOTIFY plantstore_events, 'end'");
  await eventually(() => (heard.includes('end') ? true : undefined), 'the last notification');
  const ours = heard.filter((payload) => payload.endsWith(`:${schema}`));
  assert.equal(ours.length, 1, JSON.stringify(heard));
});
