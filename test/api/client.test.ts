import assert from 'node:assert/strict';
import { test } from 'node:test';
// The package as its users import it (see helpers/client.ts).
import { PlantStore } from '@plantstore/client';
import { ERRORS } from '../../src/http/errors.js';
import { all, apiError, MAX, MIN, nothingListening, served } from '../helpers/client.js';
import { standIn } from '../helpers/http-stand-in.js';

test('create and list through the client; the int64 ends are stored, listed and deleted by their exact ids', async (t) => {
  const { client, token, store } = await served(t);
  const alice = client(await token('alice'));
  assert.deepEqual(await alice.create({ id: MAX, name: 'Max', tag: 'edge' }), { name: 'Max', tag: 'edge' });
  assert.deepEqual(await alice.create({ id: MIN, name: 'Min' }), { name: 'Min' });
  // Stored at exactly those ids: the same ids are taken, their neighbours (the same double) are not.
  assert.equal(await store.plants.createPlant('alice', { id: MAX, name: 'other' }), 'conflict');
  assert.equal(await store.plants.createPlant('alice', { id: MIN, name: 'other' }), 'conflict');
  assert.equal(await store.plants.createPlant('alice', { id: MAX - 1n, name: 'Below max' }), 'created');
  assert.equal(await store.plants.createPlant('alice', { id: MIN + 1n, name: 'Above min' }), 'created');
  assert.deepEqual(await all(alice.list()), [{ name: 'Max', tag: 'edge' }, { name: 'Min' }, { name: 'Below max' }, { name: 'Above min' }]);

  await alice.delete(MAX);
  await alice.delete('-9223372036854775808');
  assert.equal(await store.plants.deletePlant('alice', MAX), false, 'deleted: exactly 2^63 - 1');
  assert.equal(await store.plants.deletePlant('alice', MIN), false, 'deleted: exactly -2^63');
  assert.equal(await store.plants.deletePlant('alice', MAX - 1n), true, 'its neighbour was left alone');
  assert.equal(await store.plants.deletePlant('alice', MIN + 1n), true, 'its neighbour was left alone');
});

test('ids may be safe-integer numbers or decimal strings; anything else is refused before a request is made', async (t) => {
  const { client, token, store } = await served(t);
  const alice = client(await token('alice'));
  await alice.create({ id: 42, name: 'number' });
  await alice.create({ id: '9007199254740993', name: 'string past 2^53' });
  await alice.create({ id: '-7', name: 'negative string' });
  assert.equal(await store.plants.createPlant('alice', { id: 9007199254740993n, name: 'other' }), 'conflict');
  assert.equal(await store.plants.createPlant('alice', { id: 9007199254740992n, name: 'other' }), 'created', '2^53 + 1 was not rounded to 2^53');
  await alice.delete('42');
  await alice.delete(-7);
  assert.equal(await store.plants.deletePlant('alice', 42n), false);
  assert.equal(await store.plants.deletePlant('alice', -7n), false);

  const nothing = await standIn(t, { then: { status: 500 } });
  const offline = new PlantStore({ baseUrl: nothing.url, token: 'pst_x' });
  const unsafe = [2 ** 53 + 1, 2 ** 63, 1.5, Number.NaN, Infinity, '9223372036854775808', '-9223372036854775809', MAX + 1n, MIN - 1n,
    '1.5', '1e3', ' 1', '+1', '0x10', '', '-', '123456789012345678901'];
  for (const id of unsafe) {
    await assert.rejects(offline.create({ id, name: 'x' }), RangeError, String(id));
    await assert.rejects(offline.delete(id), RangeError, String(id));
  }
  // A JavaScript caller is not held by the types.
  await assert.rejects(offline.delete(null as unknown as string), TypeError);
  assert.equal(nothing.seen.length, 0, 'no request was sent for a bad id');
});

test('list follows Link rel="next" pages (limit is the page size), filters by tag, and keeps a base path prefix', async (t) => {
  const { client, token, url, responses } = await served(t);
  const alice = client(await token('alice'));
  const tags = ['a b+c', undefined, 'a b+c', 'other', 'a b+c'];
  for (const [i, tag] of tags.entries()) await alice.create({ id: i + 1, name: `p${i + 1}`, tag });
  const before = responses('GET').length;
  assert.deepEqual((await all(alice.list({ limit: 2 }))).map((p) => p.name), ['p1', 'p2', 'p3', 'p4', 'p5']);
  assert.equal(responses('GET').length - before, 3, '5 plants in pages of 2');
  assert.deepEqual(await all(alice.list({ limit: 2, tag: 'a b+c' })), [
    { name: 'p1', tag: 'a b+c' }, { name: 'p3', tag: 'a b+c' }, { name: 'p5', tag: 'a b+c' },
  ]);
  assert.deepEqual(await all(alice.list({ tag: 'none such' })), []);

  const beforeBreak = responses('GET').length;
  for await (const plant of alice.list({ limit: 2 })) {
    assert.equal(plant.name, 'p1');
    break;
  }
  assert.equal(responses('GET').length - beforeBreak, 1, 'a page is fetched only when the previous one is used up');

  // Behind a reverse proxy at /api/, the server's "</plants?…>" links are followed under /api/.
  const proxy = await standIn(t, { target: url, prefix: '/api' });
  const proxied = new PlantStore({ baseUrl: proxy.url, token: await token('alice') });
  assert.equal((await all(proxied.list({ limit: 2 }))).length, 5);
  assert.deepEqual(proxy.seen.map((s) => s.url.replace(/cursor=[^&]+/, 'cursor=…')), [
    '/api/plants?limit=2', '/api/plants?limit=2&cursor=…', '/api/plants?limit=2&cursor=…',
  ]);
});

test('every API error is one PlantStoreError with the status, the numeric code and the server\'s message', async (t) => {
  const { client, token } = await served(t);
  const alice = client(await token('alice'));
  await alice.create({ id: 1, name: 'Fern' });
  const readOnly = client(await token('alice', { scopes: ['plants:read'] }));
  const writeOnly = client(await token('alice', { scopes: ['plants:write'] }));
  const cases: Array<[() => Promise<unknown>, { status: number; code: number; message: string }]> = [
    [() => client('pst_unknown').create({ id: 2, name: 'x' }), ERRORS.invalidToken],
    [() => readOnly.create({ id: 2, name: 'x' }), ERRORS.insufficientScope],
    [() => writeOnly.list().next(), ERRORS.insufficientScope],
    [() => alice.delete(2), ERRORS.plantNotFound],
    [() => alice.create({ id: 1, name: 'Not a fern' }), ERRORS.idConflict],
    [() => alice.create({ id: 2, name: '' }), ERRORS.invalidNewPlant],
    [() => alice.list({ limit: 0 }).next(), ERRORS.invalidQuery],
    [() => alice.list({ limit: 1001 }).next(), ERRORS.invalidQuery],
  ];
  for (const [call, row] of cases) {
    const escaped = row.message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    await apiError(call(), { status: row.status, error: row.code, message: new RegExp(`^${escaped}`) });
  }
});

test('answers that are not the API\'s: a proxy\'s HTML 502, a 200 that is not a page, a link elsewhere, no server at all', async (t) => {
  const html = { 'content-type': 'text/html' };
  const proxy = await standIn(t, {
    steps: [
      { status: 502, headers: html, body: '<html><body>Bad Gateway</body></html>' },
      { status: 200, headers: html, body: '<html>maintenance</html>' },
      { status: 200, headers: { 'content-type': 'application/json', link: '<http://127.0.0.2:1/plants?cursor=x>; rel="next"' }, body: '[]' },
    ],
    then: { status: 500 },
  });
  const client = new PlantStore({ baseUrl: proxy.url, token: 'pst_x' });
  await apiError(client.create({ id: 1, name: 'x' }), { status: 502, error: 0, message: /^HTTP 502 Bad Gateway: the answer is not a Plant Store error body$/ });
  await apiError(all(client.list()), { status: 200, error: 0, message: /not an array of Plants/ });
  await apiError(all(client.list()), { status: 200, error: 0, message: /another origin \(http:\/\/127\.0\.0\.2:1\)/ });
  assert.equal(proxy.seen.length, 3, 'the link to another origin was not followed (it would carry the token)');

  // A port nothing listens on: a network failure, retried (retries: 1), then status 0 with its cause.
  const unreachable = new PlantStore({ baseUrl: await nothingListening(), token: 'pst_x', retries: 1 });
  const failure = await apiError(unreachable.create({ id: 1, name: 'x' }), { status: 0, error: 0, message: /^network failure: fetch failed \(ECONNREFUSED\)$/ });
  assert.ok(failure.cause instanceof Error);
});

test('the constructor refuses what no request could carry', () => {
  assert.throws(() => new PlantStore({ baseUrl: 'not a url', token: 't' }), TypeError);
  assert.throws(() => new PlantStore({ baseUrl: 'ftp://127.0.0.1/', token: 't' }), TypeError);
  assert.throws(() => new PlantStore({ baseUrl: 'http://user:pw@127.0.0.1/', token: 't' }), TypeError);
  assert.throws(() => new PlantStore({ baseUrl: 'http://127.0.0.1/', token: '' }), TypeError);
  assert.throws(() => new PlantStore({ baseUrl: 'http://127.0.0.1/', token: 'pst_a\r\nx-injected: 1' }), TypeError);
  assert.throws(() => new PlantStore({ baseUrl: 'http://127.0.0.1/', token: 't', retries: -1 }), RangeError);
  assert.throws(() => new PlantStore({ baseUrl: 'http://127.0.0.1/', token: 't', maxRetryDelayMs: Number.NaN }), RangeError);
});
