import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newEndpointId, newWebhookSecret } from '../../src/domain/webhook.js';
import { openStore } from '../../src/store/open.js';
import { issueToken } from '../helpers/tokens.js';
import { webhookService } from '../../src/webhooks/service.js';
import { BACKEND, silentLogger, testDatabase, testStore } from '../helpers/app.js';
import { startServer } from '../helpers/process.js';
import { eventually } from '../helpers/eventually.js';
import { receiver } from '../helpers/webhook-receiver.js';

if (BACKEND !== 'postgres') throw new Error('test/postgres/* needs PLANTSTORE_TEST_DATABASE_URL (npm test sets it)');

const PLANTS = 300;

test('two server instances on one database: with a receiver answering 200, each event arrives exactly once', async (t) => {
  const db = await testDatabase(t);
  const rx = await receiver(t);
  const store = await openStore(db.config, { logger: silentLogger, poolSize: 1, startupTimeoutMs: 5000, server: false });
  const { secret: token } = await issueToken(store, { user: 'alice' });
  const endpoint = await store.webhooks.createWebhook(
    { id: newEndpointId(), user: 'alice', allUsers: false, url: rx.url, description: null, secret: newWebhookSecret() }, 10,
  );
  assert.notEqual(endpoint, 'limit');
  await store.close();
  const env = { DATABASE_URL: db.url, WEBHOOK_ALLOW_PRIVATE: 'on' };
  const [a, b] = await Promise.all([startServer(t, env), startServer(t, env)]);
  // Creates go to both instances at once; each instance claims whatever is due, its own or the other's.
  const creates: Promise<void>[] = [];
  for (let id = 1; id <= PLANTS; id++) {
    const base = id % 2 ? a.url : b.url;
    creates.push(fetch(`${base}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ id, name: `p${id}` }),
    }).then((res) => assert.equal(res.status, 200)));
    if (creates.length % 20 === 0) await Promise.all(creates.splice(0));
  }
  await Promise.all(creates);
  await rx.waitFor(PLANTS, 30_000);
  // Once the store holds no pending event, neither instance can claim one again; once both have stopped
  // (each drains its attempts in flight), whatever was sent twice has arrived.
  const observer = await openStore(db.config, { logger: silentLogger, poolSize: 1, startupTimeoutMs: 5000, server: false });
  t.after(() => observer.close());
  await eventually(async () => ((await observer.outbox.webhookBacklog(PLANTS)).pending === 0 ? true : undefined), 'every event recorded delivered');
  assert.deepEqual(await Promise.all([a.stop(), b.stop()]), [0, 0]);
  const perEvent = new Map<string, number>();
  const perPlant = new Map<string, number>();
  for (const r of rx.received) {
    const id = String(r.headers['webhook-id']);
    perEvent.set(id, (perEvent.get(id) ?? 0) + 1);
    perPlant.set(r.body, (perPlant.get(r.body) ?? 0) + 1);
  }
  assert.equal(rx.received.length, PLANTS);
  assert.equal(perEvent.size, PLANTS);
  assert.equal(perPlant.size, PLANTS);
});

test('two instances on one database: a user\'s dead receivers with a backlog fill neither, and another user\'s event arrives', async (t) => {
  const db = await testStore(t);
  const stores = [db.store, await db.reopen()];
  const dead = [await receiver(t, () => 'hang'), await receiver(t, () => 'hang')];
  const live = await receiver(t);
  for (const rx of dead) {
    const e = await db.store.webhooks.createWebhook(
      { id: newEndpointId(), user: 'alice', allUsers: false, url: rx.url, description: null, secret: newWebhookSecret() }, 10,
    );
    assert.notEqual(e, 'limit');
  }
  const e = await db.store.webhooks.createWebhook(
    { id: newEndpointId(), user: 'bob', allUsers: false, url: live.url, description: null, secret: newWebhookSecret() }, 10,
  );
  assert.notEqual(e, 'limit');
  for (let i = 1; i <= 60; i++) await db.store.plants.createPlant('alice', { id: BigInt(i), name: `a${i}` });
  // No attempt ends before its 30 s timeout, on either instance.
  const dispatchers = stores.map((store) => webhookService(store, {
    webhookTimeoutMs: 30_000, webhookRetryScheduleMs: [200], webhookRetentionMs: 86_400_000, webhookConcurrency: 8,
    webhookEndpointConcurrency: 4, webhookAllowPrivate: true, userAgent: 'plantstore/test', pollIntervalMs: 50,
  }, silentLogger));
  for (const d of dispatchers) {
    d.start();
    t.after(() => d.stop(Date.now() + 200));
  }
  const held = () => dead[0]!.received.length + dead[1]!.received.length;
  // Each instance holds alice's share of its own slots: both have claimed.
  await eventually(() => (held() >= 8 ? true : undefined), 'both instances to hold dead requests');
  await db.store.plants.createPlant('bob', { id: 1000n, name: 'b' });
  // Before fairness, each instance's slots were all alice's until a dead attempt timed out (30 s).
  const [got] = await live.waitFor(1, 25_000);
  assert.equal(got?.body, '{"id":1000,"name":"b"}');
  const sent = dead.flatMap((rx) => rx.received.map((r) => r.headers['webhook-id']));
  assert.equal(new Set(sent).size, sent.length, 'no dead attempt ended and was retried, on either instance');
  await Promise.all(dispatchers.map((d) => d.stop(Date.now() + 200)));
});
