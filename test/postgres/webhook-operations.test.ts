import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { newEndpointId, newWebhookSecret, type WebhookEndpoint } from '../../src/domain/webhook.js';
import { BACKEND, testStore } from '../helpers/app.js';
import { dispatcher } from '../helpers/webhook-dispatch.js';
import { eventually } from '../helpers/eventually.js';
import { receiver } from '../helpers/webhook-receiver.js';

if (BACKEND !== 'postgres') throw new Error('test/postgres/* needs PLANTSTORE_TEST_DATABASE_URL (npm test sets it)');

// Webhook operations with two instances on one PostgreSQL database: what one instance's API does, the
// other instance's dispatcher sees at its next claim, and claims stay exclusive.

test('a secret rotated through one instance signs the other instance\'s next deliveries, with both secrets during the overlap', async (t) => {
  const db = await testStore(t);
  const other = await db.reopen();
  const rx = await receiver(t);
  const first = newWebhookSecret();
  const endpoint = await db.store.webhooks.createWebhook(
    { id: newEndpointId(), user: 'alice', allUsers: false, url: rx.url, description: null, secret: first }, 10,
  ) as WebhookEndpoint;
  // Only the other instance delivers.
  const worker = dispatcher(t, other);
  await db.store.plants.createPlant('alice', { id: 1n, name: 'before' });
  await rx.waitFor(1);
  const next = newWebhookSecret();
  assert.ok(await db.store.webhooks.rotateWebhookSecret(endpoint.id, 'alice', next, 3_600_000));
  await db.store.plants.createPlant('alice', { id: 2n, name: 'after' });
  const after = (await rx.waitFor(2))[1];
  assert.equal(after?.body, '{"id":2,"name":"after"}');
  assert.equal(String(after?.headers['webhook-signature']).split(' ').length, 2);
  for (const secret of [first, next]) new Webhook(secret).verify(after?.body ?? '', after?.headers as Record<string, string>);
  // Without an overlap, from the next claim on: the new secret alone.
  const last = newWebhookSecret();
  await db.store.webhooks.rotateWebhookSecret(endpoint.id, null, last, 0);
  await db.store.plants.createPlant('alice', { id: 3n, name: 'last' });
  const third = (await rx.waitFor(3))[2];
  assert.equal(String(third?.headers['webhook-signature']).split(' ').length, 1);
  new Webhook(last).verify(third?.body ?? '', third?.headers as Record<string, string>);
  assert.throws(() => new Webhook(next).verify(third?.body ?? '', third?.headers as Record<string, string>));
  await worker.stop(Date.now() + 1000);
});

test('a recover through one instance is claimed once across two instances: each failed event arrives exactly once', async (t) => {
  const db = await testStore(t);
  const other = await db.reopen();
  const rx = await receiver(t);
  await rx.close();
  const endpoint = await db.store.webhooks.createWebhook(
    { id: newEndpointId(), user: 'alice', allUsers: false, url: rx.url, description: null, secret: newWebhookSecret() }, 10,
  ) as WebhookEndpoint;
  const workers = [dispatcher(t, db.store, { webhookRetryScheduleMs: [] }), dispatcher(t, other, { webhookRetryScheduleMs: [] })];
  const EVENTS = 120;
  const since = new Date(Date.now() - 1000);
  for (let i = 1; i <= EVENTS; i++) await db.store.plants.createPlant('alice', { id: BigInt(i), name: `p${i}` });
  await eventually(async () => {
    const attempts = await db.store.webhooks.listDeliveryAttempts(endpoint.id, null, 1000);
    return attempts?.filter((a) => a.state === 'failed').length === EVENTS ? true : undefined;
  }, 'every event to fail');
  await rx.reopen();
  assert.equal(await other.webhooks.recoverWebhookEvents(endpoint.id, null, since), EVENTS);
  await rx.waitFor(EVENTS, 20_000);
  // Past a few polls of both instances: an event claimed twice would have arrived twice by now.
  await eventually(async () => {
    const attempts = await db.store.webhooks.listDeliveryAttempts(endpoint.id, null, 1000);
    return attempts?.filter((a) => a.state === 'delivered').length === EVENTS ? true : undefined;
  }, 'every event to be delivered');
  const ids = rx.received.map((r) => r.headers['webhook-id']);
  assert.equal(ids.length, EVENTS);
  assert.equal(new Set(ids).size, EVENTS);
  await Promise.all(workers.map((w) => w.stop(Date.now() + 1000)));
});
