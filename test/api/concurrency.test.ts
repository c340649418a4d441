import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { BACKEND, nextUrl, testApp } from '../helpers/app.js';

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
}

const post = (url: string, token: string, body: object) =>
  fetch(`${url}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

test('300 concurrent creates over real connections are all acknowledged and all stored once', async (t) => {
  // This one process plays 300 clients: fetch opens a connection per request in flight, more than one
  // address may hold by default (MAX_CONNECTIONS_PER_ADDRESS).
  const { app, token, store } = await testApp(t, { maxConnectionsPerAddress: 0 });
  const url = await listen(app);
  const users = await Promise.all(['u1', 'u2', 'u3'].map((u) => token(u)));
  const responses = await Promise.all(
    Array.from({ length: 300 }, (_, i) => post(url, users[i % 3] as string, { id: i, name: `plant ${i}`, tag: `t${i % 7}` })),
  );
  assert.deepEqual(new Set(responses.map((r) => r.status)), new Set([200]));
  const page = await store.plants.listPlants({ owner: null, limit: 1000 });
  assert.equal(page.plants.length, 300);
  assert.equal(new Set(page.plants.map((p) => p.name)).size, 300);
});

test('concurrent identical creates store one plant and all answer 200', async (t) => {
  const { app, token, store } = await testApp(t);
  const url = await listen(app);
  const alice = await token('alice');
  const responses = await Promise.all(Array.from({ length: 50 }, () => post(url, alice, { id: 7, name: 'same' })));
  assert.deepEqual(new Set(responses.map((r) => r.status)), new Set([200]));
  assert.deepEqual((await store.plants.listPlants({ owner: 'alice', limit: 100 })).plants, [{ name: 'same' }]);
});

test('concurrent different creates of one id: one content wins, its senders get 200, the others 409', async (t) => {
  const { app, token, store } = await testApp(t);
  const url = await listen(app);
  const alice = await token('alice');
  const names = Array.from({ length: 40 }, (_, i) => `candidate ${i % 4}`);
  const responses = await Promise.all(names.map((name) => post(url, alice, { id: 7, name })));
  const stored = (await store.plants.listPlants({ owner: 'alice', limit: 100 })).plants;
  assert.equal(stored.length, 1);
  const winner = stored[0]?.name;
  responses.forEach((r, i) => assert.equal(r.status, names[i] === winner ? 200 : 409, names[i]));
});

const get = (url: string, token: string, path: string) => fetch(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } });

test('identical lists asked for together each get their page, as fresh as a read of their own; other lists get theirs', async (t) => {
  const { app, token } = await testApp(t);
  const url = await listen(app);
  const [alice, bob] = await Promise.all([token('alice'), token('bob')]);
  for (let i = 1; i <= 30; i++) assert.equal((await post(url, alice, { id: i, name: `a${i}`, ...(i % 3 === 0 ? { tag: 'herb' } : {}) })).status, 200);
  assert.equal((await post(url, bob, { id: 1, name: 'b1' })).status, 200);
  const plant = (i: number) => (i % 3 === 0 ? { name: `a${i}`, tag: 'herb' } : { name: `a${i}` });
  const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => plant(from + i));

  // Sent together, so that the server reads them in one turn (on PostgreSQL: identical ones read once).
  const asks = [
    ...Array.from({ length: 16 }, () => ({ token: alice, path: '/plants?limit=20', body: range(1, 20), next: true })),
    ...Array.from({ length: 4 }, () => ({ token: alice, path: '/plants?limit=5', body: range(1, 5), next: true })),
    ...Array.from({ length: 4 }, () => ({ token: alice, path: '/plants?tag=herb', body: range(1, 30).filter((p) => p.tag), next: false })),
    ...Array.from({ length: 4 }, () => ({ token: bob, path: '/plants?limit=20', body: [{ name: 'b1' }], next: false })),
  ];
  const answers = await Promise.all(asks.map((a) => get(url, a.token, a.path)));
  const nexts: string[] = [];
  for (const [i, res] of answers.entries()) {
    const ask = asks[i] as (typeof asks)[number];
    assert.equal(res.status, 200, ask.path);
    assert.deepEqual(await res.json(), ask.body, ask.path);
    const next = nextUrl(res.headers.get('link'));
    assert.equal(next !== undefined, ask.next, ask.path);
    if (next !== undefined && ask.path === '/plants?limit=20') nexts.push(next);
  }
  // Every caller's next link continues its listing, for its owner only.
  for (const next of nexts) {
    const res = await get(url, alice, next);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), range(21, 30));
    assert.equal((await get(url, bob, next)).status, 400, 'a cursor of alice\'s listing');
  }

  // A create acknowledged before identical lists are asked for is in every one of them.
  assert.equal((await post(url, alice, { id: 31, name: 'a31' })).status, 200);
  const after = await Promise.all(Array.from({ length: 8 }, () => get(url, alice, '/plants?limit=1000')));
  for (const res of after) assert.deepEqual(await res.json(), [...range(1, 30), { name: 'a31' }]);
});

test('identical lists in one turn are read once on PostgreSQL, each caller given that page; different ones are read apart', async (t) => {
  const { app, token, store } = await testApp(t);
  const alice = await token('alice');
  for (let i = 1; i <= 25; i++) assert.equal((await app.inject({ method: 'POST', url: '/plants', headers: { authorization: `Bearer ${alice}` }, payload: { id: i, name: `p${i}` } })).statusCode, 200);
  // All asked for in one synchronous stretch: one turn of the event loop.
  const same = Array.from({ length: 10 }, () => store.plants.listPlants({ owner: 'alice', limit: 20 }));
  const other = store.plants.listPlants({ owner: 'alice', limit: 10 });
  const pages = await Promise.all(same);
  for (const page of pages) {
    assert.deepEqual(page.plants, Array.from({ length: 20 }, (_, i) => ({ name: `p${i + 1}` })));
    assert.notEqual(page.next, null);
  }
  assert.deepEqual((await other).plants, Array.from({ length: 10 }, (_, i) => ({ name: `p${i + 1}` })));
  const later = store.plants.listPlants({ owner: 'alice', limit: 20, after: pages[0]?.next ?? undefined });
  if (BACKEND === 'postgres') {
    // One read: one page object, handed to every caller (read-only, see PlantPage).
    assert.ok(pages.every((page) => page === pages[0]), 'identical lists of one turn share one read');
  }
  assert.deepEqual((await later).plants, Array.from({ length: 5 }, (_, i) => ({ name: `p${i + 21}` })));
});
