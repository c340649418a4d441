import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { testApp } from './helpers.js';

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
  const { app, token, store } = await testApp(t);
  const url = await listen(app);
  const users = await Promise.all(['u1', 'u2', 'u3'].map((u) => token(u)));
  const responses = await Promise.all(
    Array.from({ length: 300 }, (_, i) => post(url, users[i % 3] as string, { id: i, name: `plant ${i}`, tag: `t${i % 7}` })),
  );
  assert.deepEqual(new Set(responses.map((r) => r.status)), new Set([200]));
  const page = await store.listPlants({ owner: null, limit: 1000 });
  assert.equal(page.plants.length, 300);
  assert.equal(new Set(page.plants.map((p) => p.name)).size, 300);
});

test('concurrent identical creates store one plant and all answer 200', async (t) => {
  const { app, token, store } = await testApp(t);
  const url = await listen(app);
  const alice = await token('alice');
  const responses = await Promise.all(Array.from({ length: 50 }, () => post(url, alice, { id: 7, name: 'same' })));
  assert.deepEqual(new Set(responses.map((r) => r.status)), new Set([200]));
  assert.deepEqual((await store.listPlants({ owner: 'alice', limit: 100 })).plants, [{ name: 'same' }]);
});

test('concurrent different creates of one id: one content wins, its senders get 200, the others 409', async (t) => {
  const { app, token, store } = await testApp(t);
  const url = await listen(app);
  const alice = await token('alice');
  const names = Array.from({ length: 40 }, (_, i) => `candidate ${i % 4}`);
  const responses = await Promise.all(names.map((name) => post(url, alice, { id: 7, name })));
  const stored = (await store.listPlants({ owner: 'alice', limit: 100 })).plants;
  assert.equal(stored.length, 1);
  const winner = stored[0]?.name;
  responses.forEach((r, i) => assert.equal(r.status, names[i] === winner ? 200 : 409, names[i]));
});
