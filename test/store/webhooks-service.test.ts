import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { createLogger } from '../../src/logger.js';
import type { OutboxStore } from '../../src/store/store.js';
import { withFacets } from '../../src/store/wrappers/facets.js';
import { webhookService } from '../../src/webhooks/service.js';
import { testStore } from '../helpers/app.js';
import { add, attempts, register, SETTINGS } from '../helpers/webhook-dispatch.js';
import { receiver, sleep } from '../helpers/webhook-receiver.js';

// The webhook worker as a unit (src/webhooks/service.ts): started and stopped once, told of deletions.

test('stop() called twice returns the first call\'s promise: the worker stops once, by the first deadline', async (t) => {
  const { store } = await testStore(t);
  const rx = await receiver(t, () => 'hang');
  const { endpoint } = await register(store, rx.url);
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const service = webhookService(store, { ...SETTINGS, webhookTimeoutMs: 60_000 }, createLogger('info', stream));
  t.after(() => service.stop(Date.now()));
  service.start();
  await add(store, 'alice', { id: 1n, name: 'a' });
  await rx.waitFor(1);
  const first = service.stop(Date.now() + 30_000);
  // A second stop with its deadline already past would abort the attempt in flight at once.
  const second = service.stop(Date.now());
  assert.equal(second, first);
  await sleep(100);
  assert.deepEqual(lines.filter((l) => l.includes('aborting')), []);
  rx.answerHanging(200);
  await first;
  // The attempt in flight finished and was recorded before the worker stopped: it was not aborted.
  const [attempt] = await attempts(store, endpoint.id, (n) => n >= 1);
  assert.equal(attempt?.state, 'delivered');
  assert.equal(attempt?.status, 200);
  assert.equal(rx.received.length, 1);
});

test('a claim under way when the endpoint is deleted through the app brings back none of its events to send', async (t) => {
  const { store } = await testStore(t);
  const rx = await receiver(t);
  const control = await receiver(t);
  const { endpoint } = await register(store, rx.url, 'alice');
  await register(store, control.url, 'bob');
  // The real store, with the first claim that finds an event held back until the test lets it answer.
  let claimStarted!: () => void;
  const started = new Promise<void>((resolve) => (claimStarted = resolve));
  let answer!: () => void;
  const gate = new Promise<void>((resolve) => (answer = resolve));
  let held = false;
  // Only the outbox facet is held back; the rest of the store is its own (wrappers/facets.ts).
  const slowOutbox = new Proxy(store.outbox, {
    get(target, key) {
      if (key === 'claimDeliveries') {
        return async (...args: Parameters<OutboxStore['claimDeliveries']>) => {
          const claimed = await target.claimDeliveries(...args);
          if (claimed.length > 0 && !held) {
            held = true;
            claimStarted();
            await gate;
          }
          return claimed;
        };
      }
      const value = Reflect.get(target, key) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const slow = withFacets(store, { outbox: slowOutbox });
  const service = webhookService(slow, SETTINGS, createLogger('silent'));
  t.after(() => service.stop(Date.now() + 1000));
  service.start();
  await add(store, 'alice', { id: 1n, name: 'a' });
  await started;
  // What DELETE /webhooks/{id} does: the store removes the endpoint, then the app's worker is told.
  assert.equal(await store.webhooks.deleteWebhook(endpoint.id, 'alice'), true);
  service.endpointDeleted(endpoint.id);
  answer();
  // One claim at a time: this event is claimed after the held claim's events were started, if any were.
  await add(store, 'bob', { id: 2n, name: 'b' });
  await control.waitFor(1);
  assert.equal(rx.received.length, 0, 'no attempt started after the deletion');
  await service.stop(Date.now() + 1000);
});
