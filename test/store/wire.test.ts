import assert from 'node:assert/strict';
import { test } from 'node:test';
import fastJson from 'fast-json-stringify';
import { plantJson, plantOf, plantsJson, PlantSchema, type NewPlant } from '../../src/domain/plant.js';
import { EVENT_ID_PATTERN, newEndpointId, newWebhookSecret, webhookBody } from '../../src/domain/webhook.js';
import { testStore } from '../helpers/app.js';

// The wire objects written both in JavaScript and in each backend's SQL (domain/wire.ts, store/sql/wire.ts):
// a store's bytes must be the JavaScript's, for every value a plant may hold.

const AWKWARD = [
  'plain',
  'a "quoted" name',
  'back\\slash and \\" both',
  "it's",
  'controls \u0001\b\f\n\r\t\u001f\u007f end',
  'line\u2028and paragraph\u2029separators',
  'non-ASCII: é ß 日本 ✓',
  'emoji 🌱🪴 (surrogate pairs)',
  '</script><!-- & -->',
  ' spaced ',
];

/** Where ids start: past 2^53 (a double would lose digits), near both ends of int64, and small. */
const BASES = [2n ** 53n + 1n, 2n ** 63n - 100n, -(2n ** 63n), 0n];

function plants(): NewPlant[] {
  return AWKWARD.flatMap((text, i) => {
    const base = BASES[i % BASES.length]! + BigInt(i * 3);
    return [
      { id: base, name: text },
      { id: base + 1n, name: `n${i}`, tag: text },
      { id: base + 2n, name: text, tag: '' },
    ];
  }).concat([{ id: 2n ** 63n - 1n, name: 'the largest id' }]);
}

test('a Plant\'s JSON is what the route\'s schema serializes, and a list page\'s text is plantsJson of its plants, byte for byte', async (t) => {
  const serialize = fastJson(PlantSchema);
  for (const p of plants()) {
    assert.equal(plantJson(plantOf(p)), serialize(plantOf(p)));
    assert.equal(plantJson(plantOf(p)), JSON.stringify(plantOf(p)));
  }
  const { store } = await testStore(t);
  const made = plants();
  for (const p of made) assert.equal(await store.plants.createPlant('wire', p), 'created');
  const page = await store.plants.listPlants({ owner: 'wire', limit: 1000 });
  const expected = made.map(plantOf);
  assert.deepEqual(page.plants, expected);
  assert.equal(page.json, plantsJson(expected));
  const all = await store.plants.listPlants({ owner: null, tag: '', limit: 1000 });
  assert.equal(all.json, plantsJson(expected.filter((p) => p.tag === '')));
});

test('a queued event\'s body is webhookBody of the plant, and its id has the EVENT_ID form', async (t) => {
  const { store } = await testStore(t);
  const endpoint = await store.webhooks.createWebhook(
    { id: newEndpointId(), user: 'wire', allUsers: false, url: 'https://hooks.example/wire', description: null, secret: newWebhookSecret() },
    10,
  );
  assert.notEqual(endpoint, 'limit');
  const made = plants();
  for (const p of made) assert.equal(await store.plants.createPlant('wire', p), 'created');
  const claimed = await store.outbox.claimDeliveries({ instance: 'i1', limit: 1000, perEndpoint: 1000, busy: [], leaseMs: 60_000 });
  assert.equal(claimed.length, made.length);
  const byId = new Map(claimed.map((d) => [d.plantId, d]));
  for (const p of made) {
    const delivery = byId.get(p.id);
    assert.ok(delivery, `plant ${p.id}`);
    assert.equal(delivery.body, webhookBody(p), `plant ${p.id}`);
    assert.deepEqual(JSON.parse(delivery.body), { ...plantOf(p), id: JSON.parse(p.id.toString()) as number });
    assert.match(delivery.eventId, EVENT_ID_PATTERN);
  }
  assert.equal(new Set(claimed.map((d) => d.eventId)).size, claimed.length, 'every event its own id');
});
