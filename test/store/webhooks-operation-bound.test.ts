import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newEndpointId, newWebhookSecret, type AttemptResult, type ClaimedDelivery } from '../../src/domain/webhook.js';
import type { Store } from '../../src/store/store.js';
import { testStore } from '../helpers/app.js';

// WEBHOOK_MAX_QUEUED_PER_USER at the Store (the `maxQueued` of test, resend and recover), on every backend:
// what counts, what is refused, and that concurrent operations do not pass the bound together.

async function addWebhook(store: Store, user: string) {
  const created = await store.webhooks.createWebhook(
    { id: newEndpointId(), user, allUsers: false, url: `https://hooks.example/${user}`, description: null, secret: newWebhookSecret() }, 10,
  );
  if (created === 'limit') throw new Error('limit');
  return created;
}

function claim(store: Store): Promise<ClaimedDelivery[]> {
  return store.outbox.claimDeliveries({ instance: 'i1', limit: 1000, perEndpoint: 1000, busy: [], leaseMs: 60_000 });
}

function record(store: Store, deliveries: readonly ClaimedDelivery[], outcome: AttemptResult['outcome']): Promise<void> {
  return store.outbox.recordAttempts('i1', deliveries.map((delivery) => ({
    delivery, outcome, status: outcome === 'delivered' ? 200 : 500, error: outcome === 'delivered' ? null : 'HTTP 500', at: new Date(),
    retryInMs: outcome === 'retry' ? 3_600_000 : null,
  })));
}

const full = (pending: number, adding: number, max: number) => ({ refused: 'queue-full', pending, adding, max });

test('test events count per user on all of its endpoints; past the bound nothing is queued; another user has its own', async (t) => {
  const { store } = await testStore(t);
  const [a1, a2, b] = [await addWebhook(store, 'alice'), await addWebhook(store, 'alice'), await addWebhook(store, 'bob')];
  assert.equal(typeof await store.webhooks.queueTestEvent(a1.id, 'alice', 3), 'string');
  assert.equal(typeof await store.webhooks.queueTestEvent(a2.id, 'alice', 3), 'string');
  assert.equal(typeof await store.webhooks.queueTestEvent(a1.id, null, 3), 'string', 'an admin\'s count against the endpoint\'s user');
  assert.deepEqual(await store.webhooks.queueTestEvent(a2.id, 'alice', 3), full(3, 1, 3));
  assert.equal(typeof await store.webhooks.queueTestEvent(b.id, 'bob', 3), 'string');
  assert.equal((await claim(store)).length, 4, 'the refused one was not queued');
  // Without a bound (the CLI's) it is queued, and counts.
  assert.equal(typeof await store.webhooks.queueTestEvent(a1.id, null), 'string');
  assert.deepEqual(await store.webhooks.queueTestEvent(a1.id, 'alice', 4), full(4, 1, 4), 'claimed, they are still pending');
});

test('an event counts until delivered or failed for good; a retry is still pending; a plant\'s own event never counts', async (t) => {
  const { store } = await testStore(t);
  const e = await addWebhook(store, 'alice');
  for (let i = 1n; i <= 3n; i++) await store.plants.createPlant('alice', { id: i, name: `p${i}` });
  await store.webhooks.queueTestEvent(e.id, 'alice', 2);
  await store.webhooks.queueTestEvent(e.id, 'alice', 2);
  assert.deepEqual(await store.webhooks.queueTestEvent(e.id, 'alice', 2), full(2, 1, 2), 'three plants pending do not count');
  const tests = (await claim(store)).filter((d) => d.test);
  await record(store, tests.slice(0, 1), 'retry');
  assert.deepEqual(await store.webhooks.queueTestEvent(e.id, 'alice', 2), full(2, 1, 2), 'one to be retried is pending');
  await record(store, tests.slice(1), 'delivered');
  assert.equal(typeof await store.webhooks.queueTestEvent(e.id, 'alice', 2), 'string', 'a delivered one no longer counts');
});

test('recover queues every failed event or, past the bound, none, saying how many; resend of a pending event queues nothing new', async (t) => {
  const { store } = await testStore(t);
  const e = await addWebhook(store, 'alice');
  for (let i = 1n; i <= 5n; i++) await store.plants.createPlant('alice', { id: i, name: `p${i}` });
  const failed = await claim(store);
  await record(store, failed, 'failed');
  await store.webhooks.queueTestEvent(e.id, 'alice', 10);
  assert.deepEqual(await store.webhooks.recoverWebhookEvents(e.id, 'alice', new Date(0), 5), full(1, 5, 5));
  assert.deepEqual((await claim(store)).map((d) => d.test), [true], 'none of the five was queued');
  assert.equal(await store.webhooks.recoverWebhookEvents(e.id, 'alice', new Date(0), 6), 5, 'all five fit');
  assert.deepEqual(await store.webhooks.recoverWebhookEvents(e.id, 'alice', new Date(0), 6), 0, 'nothing failed is left: no refusal');
  const [first] = failed as [ClaimedDelivery];
  assert.equal(await store.webhooks.resendWebhookEvent(e.id, 'alice', first.eventId, 6), 'queued', 'pending already: made due, not added');
  assert.deepEqual(await store.webhooks.queueTestEvent(e.id, 'alice', 6), full(6, 1, 6));
  // Delivered, it may be resent while there is room, and then counts again.
  const claimed = await claim(store);
  await record(store, claimed.filter((d) => d.eventId === first.eventId), 'delivered');
  assert.equal(typeof await store.webhooks.queueTestEvent(e.id, 'alice', 6), 'string');
  assert.deepEqual(await store.webhooks.resendWebhookEvent(e.id, 'alice', first.eventId, 6), full(6, 1, 6));
  assert.equal(await store.webhooks.resendWebhookEvent(e.id, 'alice', first.eventId, 7), 'queued');
  assert.deepEqual(await store.webhooks.queueTestEvent(e.id, 'alice', 7), full(7, 1, 7));
});

test('concurrent test events of one user do not pass the bound together', async (t) => {
  const { store } = await testStore(t);
  const [a1, a2] = [await addWebhook(store, 'alice'), await addWebhook(store, 'alice')];
  const results = await Promise.all(Array.from({ length: 24 }, (_, i) => store.webhooks.queueTestEvent(i % 2 ? a1.id : a2.id, 'alice', 5)));
  assert.equal(results.filter((r) => typeof r === 'string').length, 5);
  assert.ok(results.every((r) => typeof r === 'string' || (r as { refused: string }).refused === 'queue-full'));
  assert.equal((await claim(store)).length, 5);
});
