import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { setImmediate as tick } from 'node:timers/promises';
import {
  newEndpointId, newWebhookSecret,
  type AttemptResult, type ClaimedDelivery, type ClaimRequest, type NewWebhookEndpoint,
} from '../../src/domain/webhook.js';
import type { Store } from '../../src/store/store.js';
import { issueToken } from '../helpers/tokens.js';
import { testStore } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';

// The webhook methods of the Store, on every backend: the outbox queued by the create's own transaction,
// claims under leases, and what each attempt's result does to its event and endpoint.

const MAX = 10;

function endpoint(user: string, allUsers = false): NewWebhookEndpoint {
  return { id: newEndpointId(), user, allUsers, url: `https://hooks.example/${user}`, description: null, secret: newWebhookSecret() };
}

/** An all-users endpoint reaches other users' plants only while its user holds an active admin token. */
async function adminToken(store: Store, user: string) {
  return (await issueToken(store, { user, admin: true })).record;
}

async function addWebhook(store: Store, user: string, allUsers = false) {
  const created = await store.webhooks.createWebhook(endpoint(user, allUsers), MAX);
  assert.notEqual(created, 'limit');
  if (created === 'limit') throw new Error('unreachable');
  return created;
}

function claim(store: Store, request: Partial<ClaimRequest> = {}): Promise<ClaimedDelivery[]> {
  return store.outbox.claimDeliveries({ instance: 'i1', limit: 100, perEndpoint: 100, busy: [], leaseMs: 60_000, ...request });
}

function result(delivery: ClaimedDelivery, outcome: AttemptResult['outcome'], extra: Partial<AttemptResult> = {}): AttemptResult {
  return {
    delivery,
    outcome,
    status: outcome === 'delivered' ? 200 : outcome === 'gone' ? 410 : 500,
    error: outcome === 'delivered' ? null : 'receiver failed',
    at: new Date(),
    retryInMs: outcome === 'retry' ? 0 : null,
    ...extra,
  };
}

const bySeq = (a: ClaimedDelivery, b: ClaimedDelivery) => a.seq - b.seq;

async function setup(t: TestContext) {
  const { store } = await testStore(t);
  let queued = 0;
  store.outbox.onEventsQueued(() => {
    queued += 1;
  });
  return { store, queued: async () => { await tick(); return queued; } };
}

test('a created plant queues one event per receiving endpoint; replays, conflicts and disabled endpoints queue none', async (t) => {
  const { store, queued } = await setup(t);
  assert.equal(await store.plants.createPlant('alice', { id: 1n, name: 'before any endpoint' }), 'created');
  assert.equal(await queued(), 0, 'nothing queued, no listener call');
  assert.deepEqual(await claim(store), []);

  const alices = await addWebhook(store, 'alice');
  const bobs = await addWebhook(store, 'bob');
  await adminToken(store, 'admin');
  const admins = await addWebhook(store, 'admin', true);

  assert.equal(await store.plants.createPlant('alice', { id: 2n, name: 'fern' }), 'created');
  assert.equal(await queued(), 1);
  assert.equal(await store.plants.createPlant('alice', { id: 2n, name: 'fern' }), 'replayed');
  assert.equal(await store.plants.createPlant('alice', { id: 2n, name: 'other' }), 'conflict');
  assert.equal(await queued(), 1, 'a replay and a conflict queue nothing');
  assert.equal(await store.plants.createPlant('bob', { id: 2n, name: 'moss' }), 'created');
  assert.equal(await queued(), 2);

  const events = (await claim(store)).sort(bySeq);
  const got = events.map((e) => [e.endpointId, e.plantId, e.body, e.attempt]);
  assert.deepEqual(got.sort(), [
    [alices.id, 2n, '{"id":2,"name":"fern"}', 1],
    [bobs.id, 2n, '{"id":2,"name":"moss"}', 1],
    [admins.id, 2n, '{"id":2,"name":"fern"}', 1],
    [admins.id, 2n, '{"id":2,"name":"moss"}', 1],
  ].sort());
  assert.equal(new Set(events.map((e) => e.eventId)).size, 4, 'every event has its own id');
  for (const e of events) {
    assert.match(e.eventId, /^msg_/);
    const ep = [alices, bobs, admins].find((x) => x.id === e.endpointId);
    assert.equal(e.url, ep?.url);
    assert.match(e.secret, /^whsec_/);
  }
});

test('the body is the stored plant, byte for byte: ids past 2^53, quotes, control characters, emoji', async (t) => {
  const { store } = await setup(t);
  await addWebhook(store, 'alice');
  const name = 'a "quoted" \\ name\n\t\u0001\u001f é 🌱';
  await store.plants.createPlant('alice', { id: 9223372036854775807n, name, tag: 'tag "x" 🌵' });
  await store.plants.createPlant('alice', { id: -9223372036854775808n, name: 'min' });
  await store.plants.createPlant('alice', { id: 9007199254740993n, name: 'past 2^53' });
  const events = (await claim(store)).sort(bySeq);
  assert.deepEqual(events.map((e) => e.body), [
    '{"id":9223372036854775807,"name":"a \\"quoted\\" \\\\ name\\n\\t\\u0001\\u001f é 🌱","tag":"tag \\"x\\" 🌵"}',
    '{"id":-9223372036854775808,"name":"min"}',
    '{"id":9007199254740993,"name":"past 2^53"}',
  ]);
  assert.deepEqual(events.map((e) => e.plantId), [9223372036854775807n, -9223372036854775808n, 9007199254740993n]);
});

test('createWebhook stops at maxPerUser; lists in creation order without secrets; delete removes the endpoint and its events', async (t) => {
  const { store } = await setup(t);
  const a1 = await store.webhooks.createWebhook(endpoint('alice'), 2);
  await adminToken(store, 'bob');
  const b1 = await store.webhooks.createWebhook(endpoint('bob', true), 2);
  const a2 = await store.webhooks.createWebhook(endpoint('alice'), 2);
  assert.equal(await store.webhooks.createWebhook(endpoint('alice'), 2), 'limit');
  // Concurrent creates of one user: the limit holds.
  const many = await Promise.all(Array.from({ length: 5 }, () => store.webhooks.createWebhook(endpoint('carol'), 3)));
  assert.equal(many.filter((x) => x === 'limit').length, 2);
  if (a1 === 'limit' || a2 === 'limit' || b1 === 'limit') throw new Error('limit too early');
  assert.equal(a1.user, 'alice');
  assert.equal(a1.allUsers, false);
  assert.equal(b1.allUsers, true);
  assert.equal(a1.disabledAt, null);
  assert.ok(a1.createdAt instanceof Date);

  const alices = await store.webhooks.listWebhooks('alice');
  assert.deepEqual(alices.map((e) => e.id), [a1.id, a2.id]);
  assert.deepEqual(alices[0], a1);
  for (const e of alices) assert.equal('secret' in e, false);
  assert.deepEqual((await store.webhooks.listWebhooks(null)).slice(0, 3).map((e) => e.id), [a1.id, b1.id, a2.id]);
  assert.equal((await store.webhooks.listWebhooks(null)).length, 6);

  await store.plants.createPlant('alice', { id: 1n, name: 'fern' });
  assert.equal(await store.webhooks.deleteWebhook(a1.id, 'bob'), false, "not bob's");
  assert.equal(await store.webhooks.deleteWebhook('ep_nonexistent', null), false);
  assert.equal(await store.webhooks.deleteWebhook(a1.id, 'alice'), true);
  assert.equal(await store.webhooks.deleteWebhook(a1.id, 'alice'), false, 'already gone');
  assert.equal(await store.webhooks.deleteWebhook(b1.id, null), true, 'anyone’s when the user is null');
  assert.equal(await store.webhooks.listDeliveryAttempts(a1.id, null, 10), null);
  const left = await claim(store);
  assert.deepEqual(left.map((e) => e.endpointId), [a2.id], 'the deleted endpoints’ events are gone');
  assert.deepEqual((await store.webhooks.listWebhooks('alice')).map((e) => e.id), [a2.id]);
});

test('a claim holds an event for its lease; then it is due again with the next attempt number', async (t) => {
  const { store } = await setup(t);
  await addWebhook(store, 'alice');
  await store.plants.createPlant('alice', { id: 1n, name: 'fern' });
  // Long enough for the next claim to fall within it on a loaded machine (at 50 ms it sometimes did not);
  // the test waits only until the lease ends, not for a fixed time.
  const [first, ...none] = await claim(store, { leaseMs: 1000 });
  assert.ok(first);
  assert.deepEqual(none, []);
  assert.equal(first.attempt, 1);
  assert.deepEqual(await claim(store, { instance: 'i2' }), [], 'claimed: not due during the lease');
  // Claimed again as soon as the lease has ended, by the database's clock.
  const [again] = await eventually(async () => {
    const claimed = await claim(store, { instance: 'i2' });
    return claimed.length > 0 ? claimed : undefined;
  }, 'the lease to end');
  assert.equal(again?.seq, first.seq);
  assert.equal(again?.eventId, first.eventId, 'the same webhook-id on every attempt');
  assert.equal(again?.attempt, 2);
});

test('claims take at most perEndpoint per endpoint and limit in all, skipping busy endpoints', async (t) => {
  const { store } = await setup(t);
  const a = await addWebhook(store, 'alice');
  const b = await addWebhook(store, 'bob');
  for (let i = 1; i <= 3; i++) {
    await store.plants.createPlant('alice', { id: BigInt(i), name: `a${i}` });
    await store.plants.createPlant('bob', { id: BigInt(i), name: `b${i}` });
  }
  const perEndpoint = await claim(store, { perEndpoint: 2 });
  assert.deepEqual(perEndpoint.map((e) => e.body).sort(), ['{"id":1,"name":"a1"}', '{"id":1,"name":"b1"}', '{"id":2,"name":"a2"}', '{"id":2,"name":"b2"}']);
  const busy = await claim(store, { busy: [a.id] });
  assert.deepEqual(busy.map((e) => e.body), ['{"id":3,"name":"b3"}']);
  const limited = await claim(store, { limit: 1 });
  assert.deepEqual(limited.map((e) => e.body), ['{"id":3,"name":"a3"}']);
  assert.deepEqual(await claim(store), []);
  assert.ok(b);
});

test('one endpoint’s backlog of due events does not hold back another endpoint’s', async (t) => {
  const { store } = await setup(t);
  await addWebhook(store, 'alice');
  const b = await addWebhook(store, 'bob');
  // Older than bob's event, all due now: more than any fixed window of the oldest due events.
  await Promise.all(Array.from({ length: 600 }, (_, i) => store.plants.createPlant('alice', { id: BigInt(i), name: `a${i}` })));
  await store.plants.createPlant('bob', { id: 1n, name: 'b' });
  const claimed = await claim(store, { limit: 10, perEndpoint: 2 });
  assert.equal(claimed.length, 3);
  assert.deepEqual(claimed.filter((d) => d.endpointId === b.id).map((d) => d.body), ['{"id":1,"name":"b"}']);
});

test('a claim takes events in turns: each user\'s oldest first, a user\'s endpoints in turn, whatever the backlogs', async (t) => {
  const { store } = await setup(t);
  const a1 = await addWebhook(store, 'alice');
  const a2 = await addWebhook(store, 'alice');
  const b = await addWebhook(store, 'bob');
  // Alice's backlog is older than anything of bob's, and each of her plants queues an event per endpoint.
  for (let i = 1; i <= 20; i++) await store.plants.createPlant('alice', { id: BigInt(i), name: `a${i}` });
  for (let i = 1; i <= 3; i++) await store.plants.createPlant('bob', { id: BigInt(i), name: `b${i}` });
  const turn = (await claim(store, { limit: 2 })).sort(bySeq);
  assert.deepEqual(turn.map((d) => [d.endpointId, d.user, d.body]), [
    [a1.id, 'alice', '{"id":1,"name":"a1"}'],
    [b.id, 'bob', '{"id":1,"name":"b1"}'],
  ]);
  // Then each user's next two turns: alice's other endpoint's oldest and her first endpoint's next; bob's two.
  const next = (await claim(store, { limit: 4 })).sort(bySeq);
  assert.deepEqual(next.map((d) => [d.endpointId, d.body]), [
    [a2.id, '{"id":1,"name":"a1"}'],
    [a1.id, '{"id":2,"name":"a2"}'],
    [b.id, '{"id":2,"name":"b2"}'],
    [b.id, '{"id":3,"name":"b3"}'],
  ]);
});

test('recordAttempts: delivered, retry, failed, each with its attempt row, newest first', async (t) => {
  const { store } = await setup(t);
  const ep = await addWebhook(store, 'alice');
  await store.plants.createPlant('alice', { id: 1n, name: 'one' });
  await store.plants.createPlant('alice', { id: 2n, name: 'two' });
  await store.plants.createPlant('alice', { id: 3n, name: 'three' });
  const [d1, d2, d3] = (await claim(store)).sort(bySeq);
  assert.ok(d1 && d2 && d3);
  const before = Date.now();
  await store.outbox.recordAttempts('i1', [
    result(d1, 'delivered'),
    result(d2, 'retry', { retryInMs: 60_000, at: new Date(Date.now() + 1) }),
    result(d3, 'failed', { at: new Date(Date.now() + 2), status: null, error: 'refused' }),
  ]);
  assert.deepEqual(await claim(store), [], 'delivered and failed are done; the retry is not due yet');

  const attempts = await store.webhooks.listDeliveryAttempts(ep.id, 'alice', 10);
  assert.ok(attempts);
  assert.deepEqual(attempts.map((a) => [a.eventId, a.plantId, a.attempt, a.status, a.error, a.state]), [
    [d3.eventId, 3n, 1, null, 'refused', 'failed'],
    [d2.eventId, 2n, 1, 500, 'receiver failed', 'pending'],
    [d1.eventId, 1n, 1, 200, null, 'delivered'],
  ]);
  const retry = attempts[1]?.nextAttemptAt?.getTime() ?? 0;
  assert.ok(retry >= before + 59_000 && retry <= Date.now() + 61_000, `next attempt in about a minute: ${retry - before}`);
  assert.equal(attempts[0]?.nextAttemptAt, null);
  assert.equal(attempts[2]?.nextAttemptAt, null);
  assert.deepEqual((await store.webhooks.listDeliveryAttempts(ep.id, null, 1))?.map((a) => a.eventId), [d3.eventId], 'limit');
  assert.equal(await store.webhooks.listDeliveryAttempts(ep.id, 'bob', 10), null, "not bob's");
  assert.deepEqual(await store.webhooks.listDeliveryAttempts((await addWebhook(store, 'alice')).id, 'alice', 10), [], 'exists, no attempts');

  // A retry due now is claimed again with the next attempt number.
  await store.plants.createPlant('alice', { id: 4n, name: 'four' });
  const [d4] = await claim(store);
  assert.ok(d4);
  await store.outbox.recordAttempts('i1', [result(d4, 'retry')]);
  const [again] = await claim(store);
  assert.equal(again?.eventId, d4.eventId);
  assert.equal(again?.attempt, 2);
});

test('gone: the event fails, the endpoint is disabled, its other pending events fail, and new plants queue nothing for it', async (t) => {
  const { store, queued } = await setup(t);
  const ep = await addWebhook(store, 'alice');
  const other = await addWebhook(store, 'alice');
  await store.plants.createPlant('alice', { id: 1n, name: 'one' });
  await store.plants.createPlant('alice', { id: 2n, name: 'two' });
  const claimed = await claim(store, { perEndpoint: 1 });
  const mine = claimed.find((d) => d.endpointId === ep.id);
  assert.ok(mine);
  await store.outbox.recordAttempts('i1', [result(mine, 'gone')]);
  const disabled = (await store.webhooks.listWebhooks('alice')).find((e) => e.id === ep.id);
  assert.ok(disabled?.disabledAt instanceof Date);
  assert.equal(disabled?.disabledReason, 'the receiver answered 410 Gone');
  assert.equal((await store.webhooks.listWebhooks('alice')).find((e) => e.id === other.id)?.disabledAt, null);
  // The other endpoint's second event is still due; the gone one's is not.
  assert.deepEqual((await claim(store)).map((d) => [d.endpointId, d.plantId]), [[other.id, 2n]]);

  const calls = await queued();
  await store.plants.createPlant('alice', { id: 3n, name: 'three' });
  assert.equal(await queued(), calls + 1, 'the other endpoint still receives');
  assert.deepEqual((await claim(store)).map((d) => d.endpointId), [other.id]);
  // Both of the gone endpoint's events were finished: the sweep removes them (and nothing else).
  assert.equal(await store.outbox.sweepWebhooks(new Date(Date.now() + 1000)), 2);
  // With the disabled endpoint alone left, a new plant queues nothing at all.
  assert.equal(await store.webhooks.deleteWebhook(other.id, null), true);
  const before = await queued();
  assert.equal(await store.plants.createPlant('alice', { id: 4n, name: 'four' }), 'created');
  assert.equal(await queued(), before, 'no event, no listener call');
  assert.deepEqual(await claim(store), []);
});

test('the listener runs after the commit: the events it announces can be claimed from another handle', async (t) => {
  const ts = await testStore(t);
  const other = await ts.reopen();
  await addWebhook(ts.store, 'alice');
  const seen: Promise<ClaimedDelivery[]>[] = [];
  ts.store.outbox.onEventsQueued(() => seen.push(claim(other)));
  await ts.store.plants.createPlant('alice', { id: 1n, name: 'fern' });
  await tick();
  assert.equal(seen.length, 1);
  assert.deepEqual((await seen[0])?.map((d) => d.body), ['{"id":1,"name":"fern"}']);
  // A later call replaces the listener.
  let replaced = 0;
  ts.store.outbox.onEventsQueued(() => { replaced += 1; });
  await ts.store.plants.createPlant('alice', { id: 2n, name: 'moss' });
  await tick();
  assert.equal(seen.length, 1);
  assert.equal(replaced, 1);
});

test('a stale result (the lease ended, another instance claimed the event again) changes nothing', async (t) => {
  const { store } = await setup(t);
  const ep = await addWebhook(store, 'alice');
  await store.plants.createPlant('alice', { id: 1n, name: 'one' });
  const [stale] = await claim(store, { instance: 'i1', leaseMs: 30 });
  assert.ok(stale);
  const [live] = await eventually(async () => {
    const claimed = await claim(store, { instance: 'i2' });
    return claimed.length > 0 ? claimed : undefined;
  }, 'the lease to end');
  assert.equal(live?.attempt, 2);
  assert.ok(live);
  await store.outbox.recordAttempts('i1', [result(stale, 'gone')]);
  await store.outbox.releaseDeliveries('i1', [stale]);
  assert.equal((await store.webhooks.listWebhooks('alice'))[0]?.disabledAt, null, 'a stale 410 does not disable the endpoint');
  // i2's claim still holds: if the stale result had finished or released the event, i2's retry would be ignored.
  await store.outbox.recordAttempts('i2', [result(live, 'retry')]);
  const [third] = await claim(store, { instance: 'i2' });
  assert.equal(third?.attempt, 3);
  await store.outbox.recordAttempts('i2', [result(third!, 'delivered')]);
  const attempts = await store.webhooks.listDeliveryAttempts(ep.id, null, 10);
  assert.deepEqual(attempts?.map((a) => a.attempt), [3, 2, 1], 'the stale attempt was made, so it is listed');
  assert.equal(attempts?.[0]?.state, 'delivered');
});

test('a stale result of the same instance (its lease ended and it claimed the event again) changes nothing', async (t) => {
  const { store } = await setup(t);
  await addWebhook(store, 'alice');
  await store.plants.createPlant('alice', { id: 1n, name: 'one' });
  const [stale] = await claim(store, { leaseMs: 30 });
  assert.ok(stale);
  const [live] = await eventually(async () => {
    const claimed = await claim(store);
    return claimed.length > 0 ? claimed : undefined;
  }, 'the lease to end');
  assert.equal(live?.attempt, 2);
  await store.outbox.recordAttempts('i1', [result(stale, 'delivered')]);
  await store.outbox.releaseDeliveries('i1', [stale]);
  assert.deepEqual(await claim(store), [], 'attempt 2 is still claimed: neither delivered nor released by attempt 1');
  await store.outbox.recordAttempts('i1', [result(live!, 'retry')]);
  assert.equal((await claim(store))[0]?.attempt, 3);
});

test('releaseDeliveries gives claims back due now with the attempt count as before; only the claiming instance may', async (t) => {
  const { store } = await setup(t);
  await addWebhook(store, 'alice');
  await store.plants.createPlant('alice', { id: 1n, name: 'one' });
  const [d] = await claim(store);
  assert.ok(d);
  await store.outbox.releaseDeliveries('i2', [d]);
  assert.deepEqual(await claim(store), [], 'another instance cannot release it');
  await store.outbox.releaseDeliveries('i1', [d]);
  const [again] = await claim(store, { instance: 'i2' });
  assert.equal(again?.eventId, d.eventId);
  assert.equal(again?.attempt, 1);
});

test('sweepWebhooks removes finished events and attempts older than the cut, never pending ones', async (t) => {
  const { store } = await setup(t);
  const ep = await addWebhook(store, 'alice');
  for (let i = 1; i <= 3; i++) await store.plants.createPlant('alice', { id: BigInt(i), name: `p${i}` });
  const [d1, d2, d3] = (await claim(store)).sort(bySeq);
  assert.ok(d1 && d2 && d3);
  await store.outbox.recordAttempts('i1', [result(d1, 'delivered'), result(d2, 'failed'), result(d3, 'retry', { retryInMs: 60_000 })]);
  assert.equal(await store.outbox.sweepWebhooks(new Date(Date.now() - 60_000)), 0, 'nothing that old');
  assert.equal((await store.webhooks.listDeliveryAttempts(ep.id, null, 10))?.length, 3);
  assert.equal(await store.outbox.sweepWebhooks(new Date(Date.now() + 1000)), 2);
  assert.deepEqual(await store.webhooks.listDeliveryAttempts(ep.id, null, 10), []);
  assert.equal(await store.outbox.sweepWebhooks(new Date(Date.now() + 1000)), 0);
  // The pending event is still there: releasing nothing, it comes due after its retry... made due now by a new claim cycle.
  await store.plants.createPlant('alice', { id: 4n, name: 'p4' });
  assert.deepEqual((await claim(store)).map((d) => d.plantId), [4n]);
});
