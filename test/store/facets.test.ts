import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FACETS, StoreNotOpenError, type Facet } from '../../src/store/store.js';
import { methodsOf } from '../../src/store/wrappers/facets.js';
import { LateStore } from '../../src/store/wrappers/late.js';
import { measureStore } from '../../src/store/wrappers/timing.js';
import { BACKEND, testStore } from '../helpers/app.js';

// The wrappers (store/wrappers/) find a facet's operations on the facet object itself: each backend's
// facets must hold their operations and nothing else by name.

const OPERATIONS: Readonly<Record<Facet, readonly string[]>> = {
  plants: ['createPlant', 'listPlants', 'cachedPage', 'deletePlant'],
  tokens: ['createToken', 'findTokenByHash', 'listTokens', 'revokeToken'],
  counters: ['hit'],
  secrets: ['cursorKey'],
  webhooks: [
    'createWebhook', 'listWebhooks', 'deleteWebhook', 'listDeliveryAttempts', 'updateWebhook', 'rotateWebhookSecret', 'resendWebhookEvent',
    'recoverWebhookEvents', 'queueTestEvent',
  ],
  outbox: ['onEventsQueued', 'claimDeliveries', 'recordAttempts', 'releaseDeliveries', 'sweepWebhooks', 'webhookBacklog'],
  feed: ['feedBounds', 'readFeed', 'sweepFeed', 'onFeedChanged'],
  health: ['ping'],
};

const sorted = (names: Iterable<string>) => [...names].sort();

test('each facet of the store holds exactly its operations', async (t) => {
  const { store } = await testStore(t);
  assert.deepEqual(sorted(FACETS), sorted(Object.keys(OPERATIONS)));
  for (const facet of FACETS) assert.deepEqual(sorted(methodsOf(store[facet]).keys()), sorted(OPERATIONS[facet]), facet);
});

test('the timing wrapper makes one series per promised operation, labelled by its name, and leaves the rest of the store as it is', async (t) => {
  const { store } = await testStore(t);
  const series: string[] = [];
  const observed: string[] = [];
  const measured = measureStore(store, {
    series: ({ operation, backend }) => {
      assert.equal(backend, BACKEND);
      series.push(operation);
      return { observe: () => observed.push(operation) };
    },
  });
  const promised = Object.values(OPERATIONS).flat().filter((name) => name !== 'cachedPage' && name !== 'onEventsQueued' && name !== 'onFeedChanged');
  assert.deepEqual(sorted(new Set(series)), sorted(promised));
  assert.equal(measured.backend, store.backend);
  for (const facet of FACETS) assert.deepEqual(sorted(methodsOf(measured[facet]).keys()), sorted(OPERATIONS[facet]), facet);
  await measured.health.ping();
  assert.equal(await measured.plants.createPlant('alice', { id: 1n, name: 'a' }), 'created');
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(observed, ['ping', 'createPlant']);
});

test('before it opens, the start-up gate\'s store refuses every operation of every facet; once open, its facets are the store\'s own', async (t) => {
  const { store } = await testStore(t);
  const late = new LateStore();
  const early = late.handle.tokens;
  for (const facet of FACETS) {
    for (const name of OPERATIONS[facet]) {
      const method = (late.handle[facet] as unknown as Record<string, (...args: unknown[]) => unknown>)[name];
      assert.equal(typeof method, 'function', `${facet}.${name}`);
      if (name === 'cachedPage') assert.equal(method!({ owner: null, limit: 1 }), undefined);
      else if (name !== 'onEventsQueued' && name !== 'onFeedChanged') await assert.rejects(method!() as Promise<unknown>, StoreNotOpenError, `${facet}.${name}`);
    }
  }
  assert.equal((late.handle.plants as unknown as { then?: unknown }).then, undefined, 'a facet is no promise');
  assert.equal(late.isOpen, false);
  late.open(store);
  assert.equal(late.isOpen, true);
  for (const facet of FACETS) assert.equal(late.handle[facet], store[facet], facet);
  assert.equal(late.handle.backend, store.backend);
  assert.deepEqual(await early.listTokens(), [], 'a facet taken before the open works after it');
});
