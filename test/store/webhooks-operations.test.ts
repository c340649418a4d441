import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EVENT_ID_PATTERN, newEndpointId, newWebhookSecret, TEST_EVENT_BODY, type AttemptResult, type ClaimedDelivery } from '../../src/domain/webhook.js';
import type { Store } from '../../src/store/store.js';
import Database from '../../src/store/sqlite/driver.js';
import { adminSql, BACKEND, testStore, type TestStore } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { issueToken } from '../helpers/tokens.js';

// The webhook operations of the Store (update, rotate, resend, recover, test events), on every backend:
// what they change, whom they refuse, and what a claim then gets.

async function addWebhook(store: Store, user: string, allUsers = false) {
  const secret = newWebhookSecret();
  const created = await store.webhooks.createWebhook({ id: newEndpointId(), user, allUsers, url: `https://hooks.example/${user}`, description: null, secret }, 10);
  if (created === 'limit') throw new Error('limit');
  return { ...created, secret };
}

function claim(store: Store, instance = 'i1'): Promise<ClaimedDelivery[]> {
  return store.outbox.claimDeliveries({ instance, limit: 100, perEndpoint: 100, busy: [], leaseMs: 60_000 });
}

function record(store: Store, deliveries: readonly ClaimedDelivery[], outcome: AttemptResult['outcome'], instance = 'i1'): Promise<void> {
  return store.outbox.recordAttempts(instance, deliveries.map((delivery) => ({
    delivery, outcome, status: outcome === 'delivered' ? 200 : 500, error: outcome === 'delivered' ? null : 'HTTP 500', at: new Date(),
    retryInMs: outcome === 'retry' ? 3_600_000 : null,
  })));
}

/** Whether the store still holds a previous secret for the endpoint (read past the Store, as an operator would). */
async function previousSecretStored(db: TestStore, id: string): Promise<boolean> {
  const query = 'SELECT previous_secret FROM webhook_endpoints WHERE id = ';
  if (BACKEND === 'postgres') {
    const [result] = await adminSql(db.url, `${query}'${id}'`);
    return result?.rows[0]?.previous_secret !== null;
  }
  const raw = new Database(db.url.slice('sqlite:'.length), { readonly: true });
  try {
    return (raw.prepare(`${query}?`).get(id) as { previous_secret: string | null }).previous_secret !== null;
  } finally {
    raw.close();
  }
}

test('updateWebhook changes the URL and description; of another user\'s endpoint it changes nothing (null)', async (t) => {
  const { store } = await testStore(t);
  const e = await addWebhook(store, 'alice');
  assert.equal(await store.webhooks.updateWebhook(e.id, 'bob', { url: 'https://evil.example/' }), null);
  assert.equal(await store.webhooks.updateWebhook(newEndpointId(), null, { url: 'https://x.example/' }), null);
  const changed = await store.webhooks.updateWebhook(e.id, 'alice', { url: 'https://new.example/hook', description: 'moved' });
  assert.equal(changed?.url, 'https://new.example/hook');
  assert.equal(changed?.description, 'moved');
  // Claims made after the change go to the new URL.
  await store.plants.createPlant('alice', { id: 1n, name: 'a' });
  const [claimed] = await claim(store);
  assert.equal(claimed?.url, 'https://new.example/hook');
  // An admin (null) changes anyone's; what is not given stays.
  const again = await store.webhooks.updateWebhook(e.id, null, { description: 'again' });
  assert.deepEqual([again?.url, again?.description], ['https://new.example/hook', 'again']);
});

test('disabling by hand fails pending events, keeps the first reason, and queues nothing new; enabling clears it', async (t) => {
  const { store } = await testStore(t);
  const e = await addWebhook(store, 'alice');
  await store.plants.createPlant('alice', { id: 1n, name: 'queued before' });
  const disabled = await store.webhooks.updateWebhook(e.id, 'alice', { disable: 'disabled by alice' });
  assert.ok(disabled?.disabledAt instanceof Date);
  assert.equal(disabled?.disabledReason, 'disabled by alice');
  assert.deepEqual(await store.outbox.webhookBacklog(100), { pending: 0, capped: false, oldest: null }, 'its pending event failed');
  const twice = await store.webhooks.updateWebhook(e.id, null, { disable: 'disabled by root' });
  assert.equal(twice?.disabledReason, 'disabled by alice');
  assert.equal(twice?.disabledAt?.getTime(), disabled?.disabledAt?.getTime());
  await store.plants.createPlant('alice', { id: 2n, name: 'while disabled' });
  assert.deepEqual(await claim(store), [], 'nothing queued while disabled');
  const enabled = await store.webhooks.updateWebhook(e.id, 'alice', { enable: true });
  assert.deepEqual([enabled?.disabledAt, enabled?.disabledReason], [null, null]);
  await store.plants.createPlant('alice', { id: 3n, name: 'after' });
  assert.deepEqual((await claim(store)).map((d) => d.plantId), [3n], 'the event created while disabled was never queued');
});

test('a claim after a rotation signs with the new secret and, during the overlap, the previous one; overlap 0 keeps none', async (t) => {
  const db = await testStore(t);
  const { store } = db;
  const e = await addWebhook(store, 'alice');
  assert.equal(await store.webhooks.rotateWebhookSecret(e.id, 'bob', newWebhookSecret(), 60_000), null, 'not bob\'s');
  const second = newWebhookSecret();
  const before = Date.now();
  const rotated = await store.webhooks.rotateWebhookSecret(e.id, 'alice', second, 3_600_000);
  assert.ok(rotated);
  assert.ok(Math.abs(rotated.previousSecretExpiresAt.getTime() - (before + 3_600_000)) < 5000);
  await store.plants.createPlant('alice', { id: 1n, name: 'a' });
  const [one] = await claim(store);
  assert.deepEqual([one?.secret, one?.previousSecret], [second, e.secret]);
  assert.equal(one?.previousSecretExpiresAt?.getTime(), rotated.previousSecretExpiresAt.getTime());
  // A second rotation keeps the secret it replaces; the first one is forgotten.
  const third = newWebhookSecret();
  await store.webhooks.rotateWebhookSecret(e.id, null, third, 3_600_000);
  await store.plants.createPlant('alice', { id: 2n, name: 'b' });
  const [two] = await claim(store);
  assert.deepEqual([two?.secret, two?.previousSecret], [third, second]);
  // Without an overlap: the new secret alone, at once, and nothing kept.
  const fourth = newWebhookSecret();
  const none = await store.webhooks.rotateWebhookSecret(e.id, null, fourth, 0);
  assert.ok(none && Math.abs(none.previousSecretExpiresAt.getTime() - Date.now()) < 5000, 'the previous one ends now');
  await store.plants.createPlant('alice', { id: 3n, name: 'c' });
  const [three] = await claim(store);
  assert.deepEqual([three?.secret, three?.previousSecret, three?.previousSecretExpiresAt], [fourth, null, null]);
  assert.equal(await previousSecretStored(db, e.id), false);
});

test('a previous secret past its overlap signs no claim, and the sweep erases it', async (t) => {
  const db = await testStore(t);
  const { store } = db;
  const e = await addWebhook(store, 'alice');
  // An overlap long enough that the first sweep comes within it on a busy machine too.
  const rotated = await store.webhooks.rotateWebhookSecret(e.id, null, newWebhookSecret(), 2000);
  assert.ok(rotated);
  assert.equal(await previousSecretStored(db, e.id), true);
  await store.outbox.sweepWebhooks(new Date(0));
  assert.equal(await previousSecretStored(db, e.id), true, 'kept while its overlap runs');
  const end = rotated.previousSecretExpiresAt.getTime();
  await eventually(() => (Date.now() > end ? true : undefined), 'the overlap to end');
  await store.plants.createPlant('alice', { id: 1n, name: 'a' });
  const [claimed] = await claim(store);
  assert.deepEqual([claimed?.previousSecret, claimed?.previousSecretExpiresAt], [null, null]);
  await store.outbox.sweepWebhooks(new Date(0));
  assert.equal(await previousSecretStored(db, e.id), false, 'erased once past its end');
});

test('resendWebhookEvent queues a delivered or failed event again with its id, starting its retry schedule over; history stays', async (t) => {
  const { store } = await testStore(t);
  const e = await addWebhook(store, 'alice');
  await store.plants.createPlant('alice', { id: 1n, name: 'delivered' });
  await store.plants.createPlant('alice', { id: 2n, name: 'failed' });
  const first = await claim(store);
  const [delivered, failed] = first as [ClaimedDelivery, ClaimedDelivery];
  await record(store, [delivered], 'delivered');
  await record(store, [failed], 'failed');
  for (const d of [delivered, failed]) assert.equal(await store.webhooks.resendWebhookEvent(e.id, 'alice', d.eventId), 'queued');
  const again = await claim(store);
  assert.deepEqual(again.map((d) => [d.eventId, d.attempt, d.roundStart, d.body]), [
    [delivered.eventId, 2, 1, delivered.body], [failed.eventId, 2, 1, failed.body],
  ]);
  await record(store, again, 'delivered');
  const history = await store.webhooks.listDeliveryAttempts(e.id, null, 10);
  assert.deepEqual(history?.map((a) => [a.eventId, a.attempt, a.state]), [
    [failed.eventId, 2, 'delivered'], [delivered.eventId, 2, 'delivered'], [failed.eventId, 1, 'failed'], [delivered.eventId, 1, 'delivered'],
  ]);
});

test('resending a pending event makes it due now without a second copy; a claimed one is attempted again', async (t) => {
  const { store } = await testStore(t);
  const e = await addWebhook(store, 'alice');
  await store.plants.createPlant('alice', { id: 1n, name: 'a' });
  const [first] = await claim(store);
  assert.ok(first);
  await record(store, [first], 'retry'); // due again in an hour
  assert.deepEqual(await claim(store), []);
  assert.equal(await store.webhooks.resendWebhookEvent(e.id, null, first.eventId), 'queued');
  assert.equal(await store.webhooks.resendWebhookEvent(e.id, null, first.eventId), 'queued');
  const [second, ...more] = await claim(store);
  assert.deepEqual([second?.eventId, second?.attempt, second?.roundStart, more], [first.eventId, 2, 0, []], 'one event, its schedule going on');
  assert.deepEqual((await store.outbox.webhookBacklog(100)).pending, 1);
  // Claimed now (its result not recorded yet): resent, it loses the claim and is claimed again at once.
  assert.equal(await store.webhooks.resendWebhookEvent(e.id, null, first.eventId), 'queued');
  const [third] = await claim(store, 'i2');
  assert.deepEqual([third?.eventId, third?.attempt], [first.eventId, 3]);
  // The earlier attempt's result comes late: listed, and the new claim stands.
  await record(store, [second as ClaimedDelivery], 'delivered');
  await record(store, [third as ClaimedDelivery], 'delivered', 'i2');
  const history = await store.webhooks.listDeliveryAttempts(e.id, null, 10);
  assert.deepEqual(history?.map((a) => [a.attempt, a.state]), [[3, 'delivered'], [2, 'delivered'], [1, 'pending']]);
  assert.deepEqual((await store.outbox.webhookBacklog(100)).pending, 0);
});

test('resend, recover and test events refuse unknown, other users\' and disabled endpoints, and unknown events', async (t) => {
  const { store } = await testStore(t);
  const e = await addWebhook(store, 'alice');
  const unknown = newEndpointId();
  for (const [id, user] of [[unknown, null], [e.id, 'bob']] as const) {
    assert.deepEqual(await store.webhooks.resendWebhookEvent(id, user, 'msg_000000000000aaaaaaaaaaaaaaaaaaaa'), { refused: 'no-endpoint' });
    assert.deepEqual(await store.webhooks.recoverWebhookEvents(id, user, new Date(0)), { refused: 'no-endpoint' });
    assert.deepEqual(await store.webhooks.queueTestEvent(id, user), { refused: 'no-endpoint' });
  }
  assert.equal(await store.webhooks.resendWebhookEvent(e.id, 'alice', 'msg_000000000000aaaaaaaaaaaaaaaaaaaa'), 'no-event');
  await store.webhooks.updateWebhook(e.id, null, { disable: 'disabled by root' });
  assert.deepEqual(await store.webhooks.resendWebhookEvent(e.id, 'alice', 'msg_000000000000aaaaaaaaaaaaaaaaaaaa'), { refused: 'disabled' });
  assert.deepEqual(await store.webhooks.recoverWebhookEvents(e.id, 'alice', new Date(0)), { refused: 'disabled' });
  assert.deepEqual(await store.webhooks.queueTestEvent(e.id, null), { refused: 'disabled' });
});

test('recoverWebhookEvents queues every failed event since a time again, oldest first; delivered and older ones stay', async (t) => {
  const { store } = await testStore(t);
  const e = await addWebhook(store, 'alice');
  await store.plants.createPlant('alice', { id: 1n, name: 'old failure' });
  await record(store, await claim(store), 'failed');
  // `since` must fall after the failure's time, at the clocks' millisecond resolution.
  const failed = Date.now();
  await eventually(() => (Date.now() > failed ? true : undefined), 'the clock to move on');
  const since = new Date();
  for (let i = 2n; i <= 6n; i++) await store.plants.createPlant('alice', { id: i, name: `p${i}` });
  const claimed = await claim(store);
  await record(store, claimed.filter((d) => d.plantId !== 4n), 'failed');
  await record(store, claimed.filter((d) => d.plantId === 4n), 'delivered');
  assert.equal(await store.webhooks.recoverWebhookEvents(e.id, 'alice', since), 4);
  const again = await claim(store);
  assert.deepEqual(again.map((d) => d.plantId), [2n, 3n, 5n, 6n]);
  assert.deepEqual(again.map((d) => d.eventId), claimed.filter((d) => d.plantId !== 4n).map((d) => d.eventId), 'the same event ids');
  assert.equal(await store.webhooks.recoverWebhookEvents(e.id, 'alice', since), 0, 'pending now: nothing failed to recover');
});

test('an all-users endpoint whose user lost its admin token gets no other user\'s event back through resend or recover', async (t) => {
  const { store } = await testStore(t);
  const admin = await issueToken(store, { user: 'root', admin: true });
  const e = await addWebhook(store, 'root', true);
  await store.plants.createPlant('alice', { id: 1n, name: 'alice\'s' });
  await store.plants.createPlant('root', { id: 2n, name: 'root\'s' });
  const claimed = await claim(store);
  assert.equal(claimed.length, 2);
  await record(store, claimed, 'failed');
  const alices = claimed.find((d) => d.plantId === 1n) as ClaimedDelivery;
  // A caller that is not admin acts on its own plants' events only, as it sees only those.
  assert.equal(await store.webhooks.resendWebhookEvent(e.id, 'root', alices.eventId), 'no-event');
  await store.tokens.revokeToken(admin.record.id);
  assert.equal(await store.webhooks.resendWebhookEvent(e.id, null, alices.eventId), 'no-event');
  assert.equal(await store.webhooks.recoverWebhookEvents(e.id, null, new Date(0)), 1);
  assert.deepEqual((await claim(store)).map((d) => d.plantId), [2n]);
});

test('queueTestEvent queues the test body for that endpoint alone, flagged, in its history as plant 0', async (t) => {
  const { store } = await testStore(t);
  const e = await addWebhook(store, 'alice');
  const other = await addWebhook(store, 'alice');
  const eventId = await store.webhooks.queueTestEvent(e.id, 'alice');
  assert.equal(typeof eventId, 'string');
  assert.match(eventId as string, EVENT_ID_PATTERN);
  const claimed = await claim(store);
  assert.deepEqual(claimed.map((d) => [d.endpointId, d.eventId, d.body, d.plantId, d.test]), [[e.id, eventId, TEST_EVENT_BODY, 0n, true]]);
  assert.notEqual(claimed[0]?.endpointId, other.id);
  await record(store, claimed, 'delivered');
  const [attempt] = (await store.webhooks.listDeliveryAttempts(e.id, 'alice', 10)) ?? [];
  assert.deepEqual([attempt?.eventId, attempt?.plantId, attempt?.test, attempt?.state], [eventId, 0n, true, 'delivered']);
  await store.plants.createPlant('alice', { id: 1n, name: 'a' });
  assert.ok((await claim(store)).every((d) => !d.test), 'a plant\'s event is no test');
});
