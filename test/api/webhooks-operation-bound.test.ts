import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { DEFAULTS } from '../../src/config/load.js';
import type { ClaimedDelivery } from '../../src/domain/webhook.js';
import type { Store } from '../../src/store/store.js';
import { assertError, bearer, create, testApp } from '../helpers/app.js';

// WEBHOOK_MAX_QUEUED_PER_USER through the API: test, resend and recover past it are 409 40903, say how
// many, and queue nothing. The Store's counting: test/store/webhooks-operation-bound.test.ts.

function post(app: FastifyInstance, token: string, url: string, body?: object) {
  return app.inject({
    method: 'POST', url, headers: { ...bearer(token), ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { payload: JSON.stringify(body) } : {}),
  });
}

/** Every event queued now, claimed and recorded as failed for good (as the dispatcher would after its last retry). */
async function failAll(store: Store): Promise<ClaimedDelivery[]> {
  const claimed = await store.outbox.claimDeliveries({ instance: 'i1', limit: 1000, perEndpoint: 1000, busy: [], leaseMs: 60_000 });
  await store.outbox.recordAttempts('i1', claimed.map((delivery) => ({
    delivery, outcome: 'failed' as const, status: 500, error: 'HTTP 500', at: new Date(), retryInMs: null,
  })));
  return claimed;
}

test('the default bound is 10000 events queued by test, resend and recover per user', () => {
  assert.equal(DEFAULTS.webhookMaxQueuedPerUser, 10_000);
});

test('test, resend and recover past WEBHOOK_MAX_QUEUED_PER_USER are 409 40903, saying how many; nothing is queued', async (t) => {
  const { app, token, store } = await testApp(t, { webhookMaxQueuedPerUser: 3 });
  const alice = await token('alice');
  const bob = await token('bob');
  const registered = await post(app, alice, '/webhooks', { url: 'https://hooks.example/a' });
  const { id } = registered.json() as { id: string };
  for (let i = 1; i <= 4; i++) assert.equal((await create(app, alice, { id: i, name: `p${i}` })).statusCode, 200);
  const failed = await failAll(store);
  assert.equal(failed.length, 4);

  const recover = () => post(app, alice, `/webhooks/${id}/recover`, { since: '2020-01-01T00:00:00Z' });
  const refusedRecovery = await recover();
  assertError(refusedRecovery, 409, 40903, /\(WEBHOOK_MAX_QUEUED_PER_USER\); nothing was queued: 0 queued now, 4 more would pass 3$/);
  assert.deepEqual(await failAll(store), [], 'a recovery is whole or nothing: none of the four was queued');

  const [first, second] = failed as [ClaimedDelivery, ClaimedDelivery];
  assert.equal((await post(app, alice, `/webhooks/${id}/deliveries/${first.eventId}/resend`)).statusCode, 202);
  assert.equal((await post(app, alice, `/webhooks/${id}/test`)).statusCode, 202);
  assert.equal((await post(app, alice, `/webhooks/${id}/test`)).statusCode, 202);
  assertError(await post(app, alice, `/webhooks/${id}/test`), 409, 40903, /: 3 queued now, 1 more would pass 3$/);
  assertError(await post(app, alice, `/webhooks/${id}/deliveries/${second.eventId}/resend`), 409, 40903, /: 3 queued now, 1 more would pass 3$/);
  assert.equal((await post(app, alice, `/webhooks/${id}/deliveries/${first.eventId}/resend`)).statusCode, 202, 'a pending one adds nothing');
  assertError(await recover(), 409, 40903, /: 3 queued now, 3 more would pass 3$/);

  // Failed for good, they no longer count; a recovery of all six failed events would still pass the bound.
  assert.equal((await failAll(store)).length, 3);
  assertError(await recover(), 409, 40903, /: 0 queued now, 6 more would pass 3$/);
  const later = await post(app, alice, `/webhooks/${id}/recover`, { since: new Date(Date.now() + 60_000).toISOString() });
  assert.deepEqual([later.statusCode, later.json()], [202, { queued: 0 }], 'a later since recovers fewer');
  assert.equal((await post(app, alice, `/webhooks/${id}/test`)).statusCode, 202);

  const bobs = (await post(app, bob, '/webhooks', { url: 'https://hooks.example/b' })).json() as { id: string };
  assert.equal((await post(app, bob, `/webhooks/${bobs.id}/test`)).statusCode, 202, 'another user has a bound of its own');
});
