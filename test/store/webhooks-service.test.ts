import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { createLogger } from '../../src/logger.js';
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
