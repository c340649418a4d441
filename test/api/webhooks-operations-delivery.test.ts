import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import type { FastifyInstance } from 'fastify';
import { bearer, create, testApp } from '../helpers/app.js';
import { dispatcher } from '../helpers/webhook-dispatch.js';
import { eventually } from '../helpers/eventually.js';
import { receiver, type Received } from '../helpers/webhook-receiver.js';

// The webhook operations end to end: the API on one side, a real dispatcher and real receivers on
// loopback on the other, every request checked with the Standard Webhooks library.

function call(app: FastifyInstance, token: string, method: 'PATCH' | 'POST' | 'GET', url: string, body?: object) {
  return app.inject({
    method, url, headers: { ...bearer(token), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}

/** An app delivering its webhooks (retries as `schedule`), a user's token, and an endpoint for `url`. */
async function delivering(t: TestContext, url: string, schedule: number[] = [200, 200]) {
  const fixture = await testApp(t, { webhookAllowPrivate: true });
  const worker = dispatcher(t, fixture.store, { webhookRetryScheduleMs: schedule });
  const alice = await fixture.token('alice');
  const res = await call(fixture.app, alice, 'POST', '/webhooks', { url });
  assert.equal(res.statusCode, 201, res.body);
  const { id, secret } = res.json() as { id: string; secret: string };
  const deliveries = async () => (await call(fixture.app, alice, 'GET', `/webhooks/${id}/deliveries?limit=1000`)).json() as {
    eventId: string; attempt: number; state: string; plantId: number; test?: true; status: number | null;
  }[];
  return { ...fixture, worker, alice, id, secret, deliveries };
}

const verifies = (secret: string, r: Received): boolean => {
  try {
    new Webhook(secret).verify(r.body, r.headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
};

test('during the overlap every delivery carries both signatures, each verifying; after it, only the new one', async (t) => {
  const rx = await receiver(t);
  const { app, alice, id, secret: old, worker } = await delivering(t, rx.url);
  const res = await call(app, alice, 'POST', `/webhooks/${id}/rotate-secret`, { overlap: '2s' });
  assert.equal(res.statusCode, 200, res.body);
  const { secret: next, previousSecretExpiresAt } = res.json() as { secret: string; previousSecretExpiresAt: string };
  assert.equal((await create(app, alice, { id: 1, name: 'during' })).statusCode, 200);
  const [during] = await rx.waitFor(1);
  assert.ok(during);
  const signatures = String(during.headers['webhook-signature']).split(' ');
  assert.equal(signatures.length, 2, String(during.headers['webhook-signature']));
  assert.ok(signatures.every((s) => s.startsWith('v1,')));
  assert.ok(verifies(next, during), 'the new secret verifies');
  assert.ok(verifies(old, during), 'the old secret verifies');
  // Once the overlap has ended (by the clock: no sweep needed), the old secret signs nothing.
  await eventually(() => (Date.now() > Date.parse(previousSecretExpiresAt) ? true : undefined), 'the overlap to end');
  assert.equal((await create(app, alice, { id: 2, name: 'after' })).statusCode, 200);
  const after = (await rx.waitFor(2))[1] as Received;
  assert.equal(String(after.headers['webhook-signature']).split(' ').length, 1);
  assert.ok(verifies(next, after));
  assert.ok(!verifies(old, after), 'the old secret no longer verifies');
  await worker.stop(Date.now() + 1000);
});

test('resend: a delivered and a failed event are sent again with the same webhook-id; every attempt stays listed', async (t) => {
  let failing = true;
  const rx = await receiver(t, (r) => (failing && r.body.includes('"id":2') ? 500 : 200));
  const { app, alice, id, secret, worker, deliveries } = await delivering(t, rx.url, []);
  await create(app, alice, { id: 1, name: 'delivered' });
  await create(app, alice, { id: 2, name: 'failed' });
  await rx.waitFor(2);
  const first = await eventually(async () => {
    const list = await deliveries();
    return list.length === 2 ? list : undefined;
  });
  assert.deepEqual(first.map((d) => [d.plantId, d.state]).sort(), [[1, 'delivered'], [2, 'failed']]);
  failing = false;
  for (const d of first) {
    const res = await call(app, alice, 'POST', `/webhooks/${id}/deliveries/${d.eventId}/resend`);
    assert.equal(res.statusCode, 202, res.body);
    assert.deepEqual(res.json(), { eventId: d.eventId });
  }
  await rx.waitFor(4);
  const ids = rx.received.map((r) => r.headers['webhook-id']);
  for (const d of first) assert.equal(ids.filter((i) => i === d.eventId).length, 2, `${d.eventId} sent twice, the same id`);
  assert.ok(rx.received.every((r) => verifies(secret, r)));
  const all = await eventually(async () => {
    const list = await deliveries();
    return list.length === 4 ? list : undefined;
  });
  assert.deepEqual(all.map((d) => [d.plantId, d.attempt, d.state]).sort(), [[1, 1, 'delivered'], [1, 2, 'delivered'], [2, 1, 'failed'], [2, 2, 'delivered']]);
  await worker.stop(Date.now() + 1000);
});

test('recover after a receiver outage: every event that failed meanwhile arrives, each with its own webhook-id once', async (t) => {
  const rx = await receiver(t);
  await rx.close();
  const { app, alice, id, secret, worker, deliveries } = await delivering(t, rx.url, [50]);
  const outage = new Date(Date.now() - 1000).toISOString();
  const EVENTS = 40;
  for (let i = 1; i <= EVENTS; i++) assert.equal((await create(app, alice, { id: i, name: `p${i}` })).statusCode, 200);
  const failed = await eventually(async () => {
    const list = (await deliveries()).filter((d) => d.state === 'failed');
    return list.length === EVENTS ? list : undefined;
  }, 'every event to fail');
  await rx.reopen();
  const res = await call(app, alice, 'POST', `/webhooks/${id}/recover`, { since: outage });
  assert.equal(res.statusCode, 202, res.body);
  assert.deepEqual(res.json(), { queued: EVENTS });
  await rx.waitFor(EVENTS);
  const received = rx.received.map((r) => String(r.headers['webhook-id']));
  assert.deepEqual([...new Set(received)].sort(), failed.map((d) => d.eventId).sort());
  assert.ok(rx.received.every((r) => verifies(secret, r)));
  // A second recover finds nothing failed: they were delivered.
  await eventually(async () => ((await deliveries()).filter((d) => d.state === 'delivered').length === EVENTS ? true : undefined));
  assert.deepEqual((await call(app, alice, 'POST', `/webhooks/${id}/recover`, { since: outage })).json(), { queued: 0 });
  assert.equal(rx.received.length, EVENTS);
  await worker.stop(Date.now() + 1000);
});

test('an endpoint disabled by a 410 gets nothing until enabled again (PATCH enabled: true), then its new plants', async (t) => {
  let gone = true;
  const rx = await receiver(t, () => (gone ? 410 : 204));
  const { app, alice, id, worker } = await delivering(t, rx.url);
  await create(app, alice, { id: 1, name: 'gone' });
  await rx.waitFor(1);
  const listed = await eventually(async () => {
    const [e] = (await call(app, alice, 'GET', '/webhooks')).json();
    return e.disabledAt ? e : undefined;
  });
  assert.equal(listed.disabledReason, 'the receiver answered 410 Gone');
  gone = false;
  await create(app, alice, { id: 2, name: 'while disabled' });
  const enabled = await call(app, alice, 'PATCH', `/webhooks/${id}`, { enabled: true });
  assert.equal(enabled.statusCode, 200);
  assert.equal(enabled.json().disabledAt, undefined);
  await create(app, alice, { id: 3, name: 'after' });
  const [, next] = await rx.waitFor(2);
  assert.equal(next?.body, '{"id":3,"name":"after"}', 'the plant created while disabled was never queued');
  await worker.stop(Date.now() + 1000);
});

test('disabled by hand, an endpoint gets nothing more while another endpoint goes on receiving', async (t) => {
  const rx = await receiver(t);
  const witness = await receiver(t);
  const { app, alice, id, worker } = await delivering(t, rx.url);
  assert.equal((await call(app, alice, 'POST', '/webhooks', { url: witness.url })).statusCode, 201);
  await create(app, alice, { id: 1, name: 'before' });
  await rx.waitFor(1);
  await witness.waitFor(1);
  assert.equal((await call(app, alice, 'PATCH', `/webhooks/${id}`, { enabled: false })).json().disabledReason, 'disabled by alice');
  await create(app, alice, { id: 2, name: 'after' });
  // The other endpoint's event for the same plant arrives; by then this one's would have too.
  await witness.waitFor(2);
  await create(app, alice, { id: 3, name: 'later' });
  await witness.waitFor(3);
  assert.equal(rx.received.length, 1);
  await worker.stop(Date.now() + 1000);
});

test('a test event goes to that endpoint alone, signed, with webhook-test: true, and shows in its deliveries', async (t) => {
  const rx = await receiver(t);
  const other = await receiver(t);
  const { app, alice, id, secret, worker, deliveries } = await delivering(t, rx.url);
  assert.equal((await call(app, alice, 'POST', '/webhooks', { url: other.url })).statusCode, 201);
  const res = await call(app, alice, 'POST', `/webhooks/${id}/test`);
  assert.equal(res.statusCode, 202, res.body);
  const { eventId } = res.json() as { eventId: string };
  const [got] = await rx.waitFor(1);
  assert.ok(got);
  assert.equal(got.body, '{"id":0,"name":"plantstore test event","tag":"test"}');
  assert.equal(got.headers['webhook-test'], 'true');
  assert.equal(got.headers['webhook-id'], eventId);
  assert.ok(verifies(secret, got));
  // A plant's event reaches the other endpoint after the test event would have: it got no test event.
  await create(app, alice, { id: 1, name: 'real' });
  await other.waitFor(1);
  await rx.waitFor(2);
  assert.deepEqual(other.received.map((r) => r.body), ['{"id":1,"name":"real"}']);
  assert.equal(rx.received[1]?.headers['webhook-test'], undefined, 'a plant\'s event is no test');
  const listed = await eventually(async () => {
    const list = await deliveries();
    return list.length === 2 ? list : undefined;
  });
  assert.deepEqual(listed.map((d) => [d.eventId === eventId, d.plantId, d.test]).sort(), [[false, 1, undefined], [true, 0, true]]);
  // No plant was created by it.
  assert.deepEqual((await app.inject({ method: 'GET', url: '/plants', headers: bearer(alice) })).json(), [{ name: 'real' }]);
  await worker.stop(Date.now() + 1000);
});

test('a URL change applies to the next attempts: later events go to the new receiver', async (t) => {
  const before = await receiver(t);
  const after = await receiver(t);
  const { app, alice, id, secret, worker } = await delivering(t, before.url);
  await create(app, alice, { id: 1, name: 'one' });
  await before.waitFor(1);
  assert.equal((await call(app, alice, 'PATCH', `/webhooks/${id}`, { url: after.url })).json().url, after.url);
  await create(app, alice, { id: 2, name: 'two' });
  const [moved] = await after.waitFor(1);
  assert.equal(moved?.body, '{"id":2,"name":"two"}');
  assert.ok(moved && verifies(secret, moved), 'the same secret signs');
  assert.equal(before.received.length, 1);
  await worker.stop(Date.now() + 1000);
});
