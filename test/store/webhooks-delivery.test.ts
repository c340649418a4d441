import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newWebhookSecret, webhookBody } from '../../src/domain/webhook.js';
import { Sender } from '../../src/webhooks/sender.js';
import { issueToken } from '../helpers/tokens.js';
import { testStore } from '../helpers/app.js';
import { add, attempts, dispatcher, drained, register, verify } from '../helpers/webhook-dispatch.js';
import { eventually } from '../helpers/eventually.js';
import { freePort, receiver, sleep } from '../helpers/webhook-receiver.js';

test('a new plant is POSTed signed, with its exact body and the Standard Webhooks headers', async (t) => {
  const { store } = await testStore(t);
  const rx = await receiver(t);
  const { endpoint, secret } = await register(store, rx.url);
  const d = dispatcher(t, store);
  const plant = { id: 9007199254740993n, name: 'Monstera "deliciosa" 🌿', tag: 'ü' };
  await add(store, 'alice', plant);
  const [request] = await rx.waitFor(1);
  assert.ok(request);
  assert.equal(request.body, webhookBody(plant));
  assert.match(request.body, /^\{"id":9007199254740993,/);
  assert.equal(request.headers['content-type'], 'application/json');
  assert.equal(request.headers['user-agent'], 'plantstore/test');
  const timestamp = Number(request.headers['webhook-timestamp']);
  assert.ok(Math.abs(timestamp - Date.now() / 1000) < 60);
  verify(secret, request); // throws unless the signature is valid
  assert.throws(() => verify(newWebhookSecret(), request), /signature/i);
  const [attempt] = await attempts(store, endpoint.id, (n) => n >= 1);
  assert.equal(attempt?.state, 'delivered');
  assert.equal(attempt?.status, 200);
  assert.equal(attempt?.error, null);
  assert.equal(attempt?.plantId, plant.id);
  assert.equal(attempt?.eventId, request.headers['webhook-id']);
  await d.stop(Date.now() + 1000);
});

test('500s then 200: retried on the schedule with the same webhook-id, each attempt signed', async (t) => {
  const { store } = await testStore(t);
  const rx = await receiver(t, (_r, n) => (n <= 2 ? 500 : 200));
  const { endpoint, secret } = await register(store, rx.url);
  const d = dispatcher(t, store);
  await add(store, 'alice', { id: 1n, name: 'fern' });
  const got = await rx.waitFor(3);
  const ids = new Set(got.map((r) => r.headers['webhook-id']));
  assert.equal(ids.size, 1);
  for (const r of got) verify(secret, r);
  const list = await attempts(store, endpoint.id, (n) => n >= 3);
  assert.deepEqual(list.map((a) => [a.attempt, a.status, a.error, a.state]), [
    [3, 200, null, 'delivered'],
    [2, 500, 'HTTP 500', 'pending'],
    [1, 500, 'HTTP 500', 'pending'],
  ]);
  // The schedule (200 ms, up to 10% jitter) was kept between attempts.
  assert.ok(got[1]!.at - got[0]!.at >= 190, `retried after ${got[1]!.at - got[0]!.at} ms`);
  await drained(store, d);
  assert.equal(rx.received.length, 3);
  await d.stop(Date.now() + 1000);
});

test('a receiver that is down, then up, gets the event', async (t) => {
  const { store } = await testStore(t);
  const port = await freePort();
  const { endpoint } = await register(store, `http://127.0.0.1:${port}/hook`);
  const d = dispatcher(t, store, { webhookRetryScheduleMs: [300, 300, 300, 300, 300, 300, 300, 300] });
  await add(store, 'alice', { id: 2n, name: 'ivy' });
  const failed = await attempts(store, endpoint.id, (n) => n >= 1);
  assert.equal(failed[0]?.status, null);
  assert.equal(failed[0]?.error, 'connection refused');
  assert.equal(failed[0]?.state, 'pending');
  assert.ok(failed[0]?.nextAttemptAt);
  const rx = await receiver(t, () => 200, port);
  const [request] = await rx.waitFor(1);
  assert.equal(request?.body, '{"id":2,"name":"ivy"}');
  const list = await eventually(async () => {
    const all = await store.webhooks.listDeliveryAttempts(endpoint.id, null, 100);
    return all?.[0]?.state === 'delivered' ? all : undefined;
  });
  assert.ok(list.length >= 2);
  assert.equal(list[0]?.status, 200);
  for (const earlier of list.slice(1)) assert.deepEqual([earlier.error, earlier.state], ['connection refused', 'pending']);
  await d.stop(Date.now() + 1000);
});

test('a receiver slower than the timeout has failed; the attempt is retried', async (t) => {
  const { store } = await testStore(t);
  const rx = await receiver(t, (_r, n) => (n === 1 ? 'hang' : 200));
  const { endpoint } = await register(store, rx.url);
  const d = dispatcher(t, store, { webhookTimeoutMs: 1000 });
  await add(store, 'alice', { id: 3n, name: 'cactus' });
  const got = await rx.waitFor(2);
  assert.equal(got[0]?.headers['webhook-id'], got[1]?.headers['webhook-id']);
  const list = await attempts(store, endpoint.id, (n) => n >= 2);
  assert.deepEqual(list.map((a) => [a.attempt, a.status, a.error, a.state]), [
    [2, 200, null, 'delivered'],
    [1, null, 'timed out after 1s', 'pending'],
  ]);
  await d.stop(Date.now() + 1000);
});

test('410 Gone disables the endpoint: nothing more is queued or sent to it', async (t) => {
  const { store } = await testStore(t);
  const rx = await receiver(t, () => 410);
  const control = await receiver(t);
  const { endpoint } = await register(store, rx.url);
  await register(store, control.url);
  const d = dispatcher(t, store);
  await add(store, 'alice', { id: 4n, name: 'a' });
  await rx.waitFor(1);
  const [attempt] = await attempts(store, endpoint.id, (n) => n >= 1);
  assert.deepEqual([attempt?.status, attempt?.state], [410, 'failed']);
  const [listed] = (await store.webhooks.listWebhooks('alice')).filter((e) => e.id === endpoint.id);
  assert.ok(listed?.disabledAt instanceof Date);
  await add(store, 'alice', { id: 5n, name: 'b' });
  await control.waitFor(2);
  await drained(store, d);
  assert.equal(rx.received.length, 1);
  await d.stop(Date.now() + 1000);
});

test('a redirect is not followed and counts as a failure', async (t) => {
  const { store } = await testStore(t);
  const rx = await receiver(t, (r) => (r.url === '/hook' ? 302 : 200));
  const { endpoint } = await register(store, rx.url);
  const d = dispatcher(t, store, { webhookRetryScheduleMs: [] });
  await add(store, 'alice', { id: 6n, name: 'a' });
  const [attempt] = await attempts(store, endpoint.id, (n) => n >= 1);
  assert.deepEqual([attempt?.status, attempt?.error, attempt?.state], [302, 'redirect not followed', 'failed']);
  await drained(store, d);
  assert.deepEqual(rx.received.map((r) => r.url), ['/hook']);
  await d.stop(Date.now() + 1000);
});

test('with private destinations refused, a loopback name or address is not called, and its event fails at once', async (t) => {
  const { store } = await testStore(t);
  const rx = await receiver(t);
  // Registration refuses these; an endpoint registered while private destinations were allowed (or a
  // name rebound to 127.0.0.1 since) is refused at delivery. A retry would be refused the same way, so
  // the event is failed after its first attempt instead of waiting out a (here long) retry schedule.
  const { endpoint } = await register(store, `http://localhost:${rx.port}/hook`);
  const literal = await register(store, rx.url);
  const d = dispatcher(t, store, { webhookAllowPrivate: false, webhookRetryScheduleMs: [3_600_000, 3_600_000] });
  await add(store, 'alice', { id: 7n, name: 'a' });
  const [byName] = await attempts(store, endpoint.id, (n) => n >= 1);
  assert.deepEqual(
    [byName?.status, byName?.error, byName?.state, byName?.nextAttemptAt],
    [null, 'destination not allowed: localhost is a private address', 'failed', null],
  );
  const [byAddress] = await attempts(store, literal.endpoint.id, (n) => n >= 1);
  assert.deepEqual(
    [byAddress?.error, byAddress?.state, byAddress?.nextAttemptAt],
    ['destination not allowed: 127.0.0.1 is a private address', 'failed', null],
  );
  assert.deepEqual(await store.outbox.webhookBacklog(100), { pending: 0, capped: false, oldest: null }, 'nothing left to retry');
  assert.equal(rx.received.length, 0);
  await d.stop(Date.now() + 1000);
});

test('the sender checks the resolved address on every attempt, not only at registration', async (t) => {
  const rx = await receiver(t);
  const sender = new Sender({ timeoutMs: 1000, allowPrivate: false, userAgent: 'plantstore/test', connectionsPerOrigin: 1 });
  t.after(() => sender.close());
  const delivery = {
    seq: 1, eventId: 'msg_x', endpointId: 'ep_x', user: 'alice', secret: newWebhookSecret(), previousSecret: null, previousSecretExpiresAt: null,
    plantId: 1n, body: '{"id":1,"name":"a"}', attempt: 1, roundStart: 0, test: false,
  };
  const urls = [
    `http://localhost:${rx.port}/`, `http://localhost.:${rx.port}/`, `http://127.0.0.1:${rx.port}/`, `http://[::ffff:127.0.0.1]:${rx.port}/`,
    // What registration refuses, checked again when sending (an endpoint registered while WEBHOOK_ALLOW_PRIVATE was on).
    `http://[::127.0.0.1]:${rx.port}/`, `http://[::ffff:0:7f00:1]:${rx.port}/`, `http://[2002:7f00:1::]:${rx.port}/`,
  ];
  for (const url of urls) {
    const result = await sender.send({ ...delivery, url });
    assert.equal(result.status, null, url);
    assert.match(result.error ?? '', /^destination not allowed: .* is a private address$/, url);
  }
  assert.equal(rx.received.length, 0);
  // A public-looking name is checked on what it resolves to, every address of it; the refusal says the event
  // cannot be retried usefully (the dispatcher fails it at once).
  const answers: Record<string, string[]> = {
    'rebound.example': ['127.0.0.1'],
    'mixed.example': ['93.184.215.14', '::7f00:1'],
  };
  const resolving = new Sender({
    timeoutMs: 1000, allowPrivate: false, userAgent: 'plantstore/test', connectionsPerOrigin: 1,
    resolve: (hostname, _options, callback) =>
      callback(null, (answers[hostname] ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))),
  });
  t.after(() => resolving.close());
  for (const [host, address] of [['rebound.example', '127.0.0.1'], ['mixed.example', '::7f00:1']]) {
    assert.deepEqual(
      await resolving.send({ ...delivery, url: `http://${host}:${rx.port}/` }),
      { status: null, error: `destination not allowed: ${address} is a private address`, forbidden: true },
    );
  }
  const allowed = new Sender({ timeoutMs: 1000, allowPrivate: true, userAgent: 'plantstore/test', connectionsPerOrigin: 1 });
  t.after(() => allowed.close());
  assert.deepEqual(await allowed.send({ ...delivery, url: `http://localhost:${rx.port}/` }), { status: 200, error: null });
});

test('a deleted endpoint gets nothing more', async (t) => {
  const { store } = await testStore(t);
  const rx = await receiver(t);
  const control = await receiver(t);
  const { endpoint } = await register(store, rx.url);
  await register(store, control.url);
  const d = dispatcher(t, store);
  await add(store, 'alice', { id: 8n, name: 'a' });
  await rx.waitFor(1);
  assert.equal(await store.webhooks.deleteWebhook(endpoint.id, 'alice'), true);
  await add(store, 'alice', { id: 9n, name: 'b' });
  await control.waitFor(2);
  await drained(store, d);
  assert.equal(rx.received.length, 1);
  await d.stop(Date.now() + 1000);
});

test('events claimed and waiting here are dropped when the endpoint is deleted (DELETE /webhooks tells the dispatcher)', async (t) => {
  const { store } = await testStore(t);
  // The first request hangs, so that the endpoint's other events wait here, claimed, behind it.
  const rx = await receiver(t, (_request, n) => (n === 1 ? 'hang' : 200));
  const { endpoint } = await register(store, rx.url);
  const d = dispatcher(t, store, { webhookEndpointConcurrency: 1 });
  for (let i = 0; i < 5; i++) await add(store, 'alice', { id: BigInt(100 + i), name: `p${i}` });
  await rx.waitFor(1);
  // A moment for the other events to be claimed and queued here: they wait inside the worker, where no
  // event shows them (were they not yet claimed, the test would prove less, never fail wrongly).
  await sleep(300);
  assert.equal(await store.webhooks.deleteWebhook(endpoint.id, 'alice'), true);
  d.endpointDeleted(endpoint.id); // what the DELETE route tells the app's worker once the store has deleted it
  rx.answerHanging(200);
  await drained(store, d);
  assert.equal(rx.received.length, 1, 'no attempt started after the deletion');
  await d.stop(Date.now() + 1000);
});

test('a user endpoint gets its user\'s plants only; an admin endpoint gets everyone\'s', async (t) => {
  const { store } = await testStore(t);
  const [forAlice, forBob, forAdmin] = [await receiver(t), await receiver(t), await receiver(t)];
  await register(store, forAlice.url, 'alice');
  await register(store, forBob.url, 'bob');
  await issueToken(store, { user: 'root', admin: true });
  await register(store, forAdmin.url, 'root', true);
  const d = dispatcher(t, store);
  await add(store, 'alice', { id: 10n, name: 'alice plant' });
  await add(store, 'bob', { id: 11n, name: 'bob plant' });
  const all = await forAdmin.waitFor(2);
  assert.deepEqual(all.map((r) => r.body).sort(), ['{"id":10,"name":"alice plant"}', '{"id":11,"name":"bob plant"}']);
  await forAlice.waitFor(1);
  await forBob.waitFor(1);
  await drained(store, d);
  assert.deepEqual(forAlice.received.map((r) => r.body), ['{"id":10,"name":"alice plant"}']);
  assert.deepEqual(forBob.received.map((r) => r.body), ['{"id":11,"name":"bob plant"}']);
  await d.stop(Date.now() + 1000);
});

test('stop: attempts in flight finish before the deadline; the rest are released and delivered later', async (t) => {
  const { store } = await testStore(t);
  let slow = true;
  const rx = await receiver(t, () => (slow ? 'hang' : 200));
  const { endpoint } = await register(store, rx.url);
  const first = dispatcher(t, store, { webhookTimeoutMs: 60_000 });
  await add(store, 'alice', { id: 20n, name: 'a' });
  await rx.waitFor(1);
  await first.stop(Date.now() + 300);
  // Aborted at the deadline and released: no attempt recorded, due again at once.
  assert.deepEqual(await store.webhooks.listDeliveryAttempts(endpoint.id, null, 10), []);
  slow = false;
  const second = dispatcher(t, store);
  const got = await rx.waitFor(2);
  assert.equal(got[0]?.headers['webhook-id'], got[1]?.headers['webhook-id']);
  const [attempt] = await attempts(store, endpoint.id, (n) => n >= 1);
  assert.deepEqual([attempt?.attempt, attempt?.state], [1, 'delivered']);
  await second.stop(Date.now() + 1000);
});

test('delivered events and their attempts are removed once past WEBHOOK_RETENTION', async (t) => {
  const { store } = await testStore(t);
  const rx = await receiver(t);
  const { endpoint } = await register(store, rx.url);
  const d = dispatcher(t, store, { webhookRetentionMs: 300, sweepIntervalMs: 100 });
  await add(store, 'alice', { id: 30n, name: 'a' });
  await rx.waitFor(1);
  const [attempt] = await attempts(store, endpoint.id, (n) => n >= 1);
  assert.equal(attempt?.state, 'delivered');
  await eventually(async () => ((await store.webhooks.listDeliveryAttempts(endpoint.id, null, 10))?.length === 0 ? true : undefined), 'swept');
  // The endpoint stays; only its history went.
  assert.equal((await store.webhooks.listWebhooks('alice')).length, 1);
  await d.stop(Date.now() + 1000);
});

/**
 * Makes the store unable to write the webhook tables until the returned function is called (another
 * connection holds the lock; the store's operations time out and fail as in an outage).
 */
