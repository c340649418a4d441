import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setImmediate as tick } from 'node:timers/promises';
import { newEndpointId, newWebhookSecret } from '../../src/domain/webhook.js';
import { StoreUnavailableError } from '../../src/store/store.js';
import { BACKEND, testStore } from '../helpers/app.js';

if (BACKEND !== 'sqlite') throw new Error('test/sqlite/* runs on SQLite only');

// SQLite's group commit runs many creates in one transaction, where a failed statement rolls back only
// itself: the outbox must not let a create's plant commit without its events.

test('a create whose events cannot be queued fails and stores no plant; the other creates of its batch commit', async (t) => {
  const ts = await testStore(t);
  const { store } = ts;
  const created = await store.webhooks.createWebhook(
    { id: newEndpointId(), user: 'alice', allUsers: false, url: 'https://hooks.example/a', description: null, secret: newWebhookSecret() }, 10,
  );
  assert.notEqual(created, 'limit');
  let queued = 0;
  store.outbox.onEventsQueued(() => {
    queued += 1;
  });
  await ts.sql("CREATE TRIGGER refuse BEFORE INSERT ON webhook_deliveries WHEN NEW.plant_id = 2 BEGIN SELECT RAISE(ABORT, 'refused'); END");
  // One turn of the event loop: one batch, one transaction.
  const results = await Promise.allSettled([
    store.plants.createPlant('alice', { id: 1n, name: 'one' }),
    store.plants.createPlant('alice', { id: 2n, name: 'two' }),
    store.plants.createPlant('bob', { id: 2n, name: 'bob receives nothing' }),
  ]);
  assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
  const page = await store.plants.listPlants({ owner: 'alice', limit: 10 });
  assert.deepEqual(page.plants, [{ name: 'one' }], 'plant 2 was not stored');
  const claimed = await store.outbox.claimDeliveries({ instance: 'i', limit: 10, perEndpoint: 10, busy: [], leaseMs: 60_000 });
  assert.deepEqual(claimed.map((d) => d.body), ['{"id":1,"name":"one"}']);
  await tick();
  assert.equal(queued, 1);
  // Once queueing works again, the same create succeeds: nothing of the failed one was left behind.
  await ts.sql('DROP TRIGGER refuse');
  assert.equal(await store.plants.createPlant('alice', { id: 2n, name: 'two' }), 'created');
});

test('webhook reads of a closed store fail with StoreUnavailableError', async (t) => {
  const { store } = await testStore(t);
  await store.close();
  await assert.rejects(store.webhooks.listWebhooks(null), StoreUnavailableError);
  await assert.rejects(store.webhooks.listDeliveryAttempts('ep_x', null, 10), StoreUnavailableError);
  await assert.rejects(store.outbox.claimDeliveries({ instance: 'i', limit: 1, perEndpoint: 1, busy: [], leaseMs: 1 }), StoreUnavailableError);
});
