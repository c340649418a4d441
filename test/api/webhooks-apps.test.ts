import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { Store } from '../../src/store/store.js';
import { webhookService, type WebhookService } from '../../src/webhooks/service.js';
import { bearer, silentLogger, testApp, testStore } from '../helpers/app.js';
import { add, register, SETTINGS } from '../helpers/webhook-dispatch.js';
import { eventually } from '../helpers/eventually.js';
import { receiver } from '../helpers/webhook-receiver.js';

// Each app is told of its own deletions only (PluginOptions.onWebhookDeleted), as server.ts wires its
// webhook worker: two apps in one process (tests, embedders) share no listener.

const remove = (app: FastifyInstance, token: string, id: string) =>
  app.inject({ method: 'DELETE', url: `/webhooks/${id}`, headers: bearer(token) });

/** A worker of its own, not started, with what it was told of; stopped when the test ends. */
function worker(t: TestContext, store: Store, attempted: () => void) {
  // One attempt per endpoint at a time: an endpoint's other events wait, claimed, in the worker. A
  // hanging attempt is not cut short by its timeout within the test.
  const settings = { ...SETTINGS, webhookTimeoutMs: 60_000, webhookEndpointConcurrency: 1, observer: { attempted } };
  const service = webhookService(store, settings, silentLogger);
  t.after(() => service.stop(Date.now() + 1000));
  const told: string[] = [];
  const onWebhookDeleted = (id: string): void => {
    told.push(id);
    service.endpointDeleted(id);
  };
  return { service, told, onWebhookDeleted };
}

test('two apps in one process, each with its own webhook worker: a deletion is told to its own app\'s worker only', async (t) => {
  const ts = await testStore(t);
  let attempts = 0;
  const a = worker(t, ts.store, () => attempts++);
  const b = worker(t, ts.store, () => attempts++);
  // Two apps on one store, as two server instances would be, here in one process.
  const appA = await testApp(t, { webhookAllowPrivate: true, onWebhookDeleted: a.onWebhookDeleted }, ts);
  const appB = await testApp(t, { webhookAllowPrivate: true, onWebhookDeleted: b.onWebhookDeleted }, ts);

  const toAlice = await receiver(t, (_r, n) => (n === 1 ? 'hang' : 200));
  const toBob = await receiver(t, (_r, n) => (n === 1 ? 'hang' : 200));
  const control = await receiver(t);
  const alices = await register(ts.store, toAlice.url, 'alice');
  const bobs = await register(ts.store, toBob.url, 'bob');
  await register(ts.store, control.url, 'carol');
  for (let i = 1; i <= 3; i++) {
    await add(ts.store, 'alice', { id: BigInt(i), name: `a${i}` });
    await add(ts.store, 'bob', { id: BigInt(10 + i), name: `b${i}` });
  }
  // B's worker alone claims all six, in one claim: per endpoint, one attempt hangs and two events wait.
  b.service.start();
  await toAlice.waitFor(1);
  await toBob.waitFor(1);
  a.service.start();

  // Deleted through app A: A's worker is told, B's is not (a listener set shared by every app in the
  // process told both). B still holds alice's events, and starts them as the hanging attempt ends.
  assert.equal((await remove(appA.app, await appA.token('alice'), alices.endpoint.id)).statusCode, 204);
  assert.deepEqual([a.told, b.told], [[alices.endpoint.id], []]);
  toAlice.answerHanging(200);
  await toAlice.waitFor(3);

  // Deleted through app B: its worker drops the events of bob's it holds; none starts after the answer.
  assert.equal((await remove(appB.app, await appB.token('bob'), bobs.endpoint.id)).statusCode, 204);
  assert.deepEqual([a.told, b.told], [[alices.endpoint.id], [bobs.endpoint.id]]);
  toBob.answerHanging(200);
  // Bob's hanging attempt has ended once four attempts have (alice's three): a waiting event of his
  // would have been started then, before the control event below is even queued.
  await eventually(() => (attempts >= 4 ? true : undefined), 'four attempts ended');
  await add(ts.store, 'carol', { id: 100n, name: 'c' });
  await control.waitFor(1);
  assert.equal(toBob.received.length, 1, 'no attempt started after the deletion through app B');
  assert.equal(toAlice.received.length, 3);
  await Promise.all([a.service.stop(Date.now() + 1000), b.service.stop(Date.now() + 1000)]);
});
