import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import pg from 'pg';
import { createLogger } from '../../src/logger.js';
import { openStore } from '../../src/store/open.js';
import { webhookService } from '../../src/webhooks/service.js';
import { POSTGRES_URL, silentLogger, testDatabase, testStore, type TestStore } from '../helpers/app.js';
import { add, attempts, dispatcher, register, SETTINGS } from '../helpers/webhook-dispatch.js';
import { eventually } from '../helpers/eventually.js';
import { freePort, receiver, sleep } from '../helpers/webhook-receiver.js';

// Webhooks under trouble: receivers that hang or are gone, a store that cannot record, retries kept to
// their due time. (Ordinary delivery is in webhooks-delivery.test.ts.)

test('an endpoint whose connections hang does not delay another endpoint', async (t) => {
  const { store } = await testStore(t);
  const dead = await receiver(t, () => 'hang');
  const live = await receiver(t);
  await register(store, dead.url);
  await register(store, live.url);
  // The dead endpoint's attempts hang far longer than the test: whatever the live one gets, it gets
  // while the dead one holds every slot it may have.
  const d = dispatcher(t, store, { webhookTimeoutMs: 60_000, webhookConcurrency: 8, webhookEndpointConcurrency: 2 });
  const count = 40;
  for (let i = 1; i <= count; i++) await add(store, 'alice', { id: BigInt(100 + i), name: `p${i}` });
  const got = await live.waitFor(count);
  assert.equal(new Set(got.map((r) => r.body)).size, count);
  assert.equal(dead.received.length, 2, 'the dead endpoint has exactly its cap in flight');
  // Stopping aborts the hanging attempts at the deadline and gives their events back.
  await d.stop(Date.now() + 200);
});

test('one user\'s dead receivers, with a backlog, leave room: another user\'s event arrives while they still hang', async (t) => {
  const { store } = await testStore(t);
  // Alice has four endpoints and carol one, each on a receiver of its own that accepts and never answers,
  // and both have a backlog older than bob's event.
  const aliceDead = await Promise.all([1, 2, 3, 4].map(() => receiver(t, () => 'hang')));
  for (const rx of aliceDead) await register(store, rx.url, 'alice');
  const carolDead = await receiver(t, () => 'hang');
  await register(store, carolDead.url, 'carol');
  const live = await receiver(t);
  await register(store, live.url, 'bob');
  for (let i = 1; i <= 30; i++) {
    await add(store, 'alice', { id: BigInt(i), name: `a${i}` });
    await add(store, 'carol', { id: BigInt(100 + i), name: `c${i}` });
  }
  // No attempt ends before its 30 s timeout: whatever bob gets before then, he gets while the dead
  // receivers hold every slot they may have.
  const d = dispatcher(t, store, { webhookTimeoutMs: 30_000, webhookConcurrency: 16, webhookEndpointConcurrency: 4 });
  const dead = [...aliceDead, carolDead];
  const inFlight = () => dead.reduce((n, rx) => n + rx.received.length, 0);
  await eventually(() => (inFlight() >= 10 ? true : undefined), 'the dead receivers to hold requests');
  await add(store, 'bob', { id: 1000n, name: 'b' });
  // Before fairness, bob's event waited for a dead attempt to time out: this bound is below that timeout.
  const [got] = await live.waitFor(1, 25_000);
  assert.equal(got?.body, '{"id":1000,"name":"b"}');
  const sent = dead.flatMap((rx) => rx.received.map((r) => r.headers['webhook-id']));
  assert.equal(new Set(sent).size, sent.length, 'no dead attempt ended and was retried');
  const alice = aliceDead.reduce((n, rx) => n + rx.received.length, 0);
  assert.ok(alice <= 8, `alice's endpoints together hold at most half the slots (${alice})`);
  assert.equal(carolDead.received.length, 4, 'carol\'s endpoint has its own cap in flight');
  await d.stop(Date.now() + 200);
});

test('a retry starts when it is due, not at the next poll, while another endpoint\'s receiver is gone', async (t) => {
  const { store } = await testStore(t);
  const rx = await receiver(t, (_r, n) => (n === 1 ? 503 : 200));
  await register(store, rx.url, 'alice');
  // An admin's endpoint, which gets alice's plants too, on a port nothing listens on.
  await register(store, `http://127.0.0.1:${await freePort()}/hook`, 'root', true);
  // The poll, which finds what this instance cannot know of, is a minute away: the retry must not need it.
  const d = dispatcher(t, store, { webhookRetryScheduleMs: [1000, 1000, 1000], pollIntervalMs: 60_000 });
  await add(store, 'alice', { id: 1n, name: 'fern' });
  // Due a second after the 503 (up to 10% later); the bound leaves a loaded machine many seconds more,
  // and is far below the poll the old code waited for.
  const got = await rx.waitFor(2, 15_000);
  assert.equal(got[0]?.headers['webhook-id'], got[1]?.headers['webhook-id']);
  assert.ok(got[1]!.at - got[0]!.at >= 990, `retried after ${got[1]!.at - got[0]!.at} ms, before it was due`);
  await d.stop(Date.now() + 1000);
});

async function lockWebhookTables(ts: TestStore): Promise<() => Promise<void>> {
  if (!POSTGRES_URL) return ts.holdWriteLock();
  const client = new pg.Client({ connectionString: ts.url });
  await client.connect();
  await client.query('BEGIN');
  await client.query('LOCK TABLE webhook_deliveries IN ACCESS EXCLUSIVE MODE');
  return async () => {
    await client.query('ROLLBACK');
    await client.end();
  };
}

test('a store that cannot record an attempt: logged once, and the event is attempted again after its lease', async (t) => {
  const ts = await testStore(t);
  const { store } = ts;
  const rx = await receiver(t, (_r, n) => (n === 1 ? 'hang' : 200));
  const { endpoint } = await register(store, rx.url);
  const lines: Array<{ msg: string; level: number }> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line) as { msg: string; level: number });
      done();
    },
  });
  // A claim lasts twice the timeout plus the lease's fixed part, shortened here from the production
  // margin so that the lease ends within the test, yet well after the store is writable again: a retry
  // that came with the unlock, not with the lease's end, would be too early. It stays above the claims'
  // own start margin (claims.ts), or a claimed event would be given back before its first attempt.
  const leaseMarginMs = 6000;
  // Told when recording an attempt fails: the event to wait for once the store is locked.
  const record = store.outbox.recordAttempts.bind(store.outbox);
  let recordingFailed: () => void = () => undefined;
  const failedRecording = new Promise<void>((resolve) => (recordingFailed = resolve));
  store.outbox.recordAttempts = (...args) => record(...args).catch((error: unknown) => {
    recordingFailed();
    throw error;
  });
  const d = webhookService(store, { ...SETTINGS, webhookTimeoutMs: 1000, leaseMarginMs }, createLogger('info', stream));
  d.start();
  t.after(() => d.stop(Date.now() + 1000));
  await add(store, 'alice', { id: 40n, name: 'a' });
  await rx.waitFor(1);
  const unlock = await lockWebhookTables(ts);
  rx.answerHanging(200); // delivered, but the store cannot record it
  // Claims (the poll) and the recording both fail; whichever fails first is the outage's one warning.
  await eventually(() => (lines.some((l) => /webhook .* failed/.test(l.msg)) ? true : undefined), 'failure logged');
  // The recording, past its own time bound, failed too.
  await failedRecording;
  await unlock();
  const unlockedAt = Date.now();
  // Still claimed: attempted again only once the lease has ended, with the same webhook-id.
  const got = await rx.waitFor(2, 60_000);
  assert.equal(got[1]?.headers['webhook-id'], got[0]?.headers['webhook-id']);
  assert.ok(got[1]!.at - got[0]!.at >= leaseMarginMs, `attempted again after ${got[1]!.at - got[0]!.at} ms`);
  assert.ok(got[1]!.at > unlockedAt, 'attempted again after the store was writable');
  const list = await attempts(store, endpoint.id, (n) => n >= 1);
  assert.equal(list[0]?.state, 'delivered');
  assert.equal(lines.filter((l) => /failed/.test(l.msg)).length, 1, 'one warning for the outage');
  assert.ok(lines.some((l) => l.msg === 'webhook delivery resumed'));
  await d.stop(Date.now() + 1000);
});

test('a retry is due its delay after the failed attempt ended, however long its result waited to be recorded', async (t) => {
  const db = await testDatabase(t);
  // Writes wait for a lock up to 20 s here (1 s in other tests): the recording waits instead of failing.
  const store = await openStore(db.config, {
    logger: silentLogger, poolSize: 5, startupTimeoutMs: 5000, queryTimeoutMs: 20_000, server: true,
  });
  t.after(() => store.close());
  const first = await receiver(t, () => 'hang');
  const failing = await receiver(t, (_r, n) => (n === 1 ? 'hang' : 200));
  await register(store, first.url, 'alice');
  const { endpoint } = await register(store, failing.url, 'alice');
  const d = dispatcher(t, store, { webhookRetryScheduleMs: [5000] });
  await add(store, 'alice', { id: 50n, name: 'a' });
  await Promise.all([first.waitFor(1), failing.waitFor(1)]);
  // The webhook bookkeeping cannot be written (on PostgreSQL, attempts cannot be inserted: a recording
  // under way is held inside its transaction, and the next recording only starts after it).
  let unlock: () => Promise<void>;
  if (POSTGRES_URL) {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    await client.query('BEGIN');
    await client.query('LOCK TABLE webhook_attempts IN EXCLUSIVE MODE');
    unlock = async () => {
      await client.query('ROLLBACK');
      await client.end();
    };
  } else {
    unlock = await db.holdWriteLock();
  }
  // One result is being recorded (and waits for the lock) when the other attempt fails: a moment for its
  // batch to go (were both in one batch, the test would only prove less, never fail wrongly).
  first.answerHanging(200);
  await sleep(200);
  failing.answerHanging(503);
  const failedAt = Date.now();
  // A window in which nothing can be recorded: the store stays unwritable for 2 s, then records both. The
  // gap between the failure and its recording is what the due time must not count from.
  await sleep(2000);
  await unlock();
  const [attempt] = await attempts(store, endpoint.id, (n) => n >= 1);
  assert.equal(attempt?.state, 'pending');
  // Due 5 s after the 503 (up to 10% later); counted from the recording it would be 2 s later still.
  const dueIn = attempt!.nextAttemptAt!.getTime() - failedAt;
  assert.ok(dueIn >= 4900 && dueIn < 6500, `due ${dueIn} ms after the failed attempt`);
  await d.stop(Date.now() + 1000);
});
