import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bearer, create, errorBody, list, testApp } from '../helpers/app.js';

const del = (app: Parameters<typeof create>[0], token: string, id: string) =>
  app.inject({ method: 'DELETE', url: `/plants/${id}`, headers: bearer(token) });

test('delete answers 204 with no body, then 404 40401 for the same id', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  await create(app, alice, { id: 1, name: 'a' });
  await create(app, alice, { id: 2, name: 'b' });
  const res = await del(app, alice, '1');
  assert.equal(res.statusCode, 204);
  assert.equal(res.body, '');
  assert.equal((await list(app, alice)).body, '[{"name":"b"}]');
  const again = await del(app, alice, '1');
  assert.equal(again.statusCode, 404);
  assert.equal(errorBody(again).error, 40401);
});

test('a deleted id can be created again, with any content, at the end of the order', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  await create(app, alice, { id: 1, name: 'first' });
  await create(app, alice, { id: 2, name: 'second' });
  assert.equal((await del(app, alice, '1')).statusCode, 204);
  assert.equal((await create(app, alice, { id: 1, name: 'reborn' })).statusCode, 200);
  assert.deepEqual((await list(app, alice)).json(), [{ name: 'second' }, { name: 'reborn' }]);
});

test('nobody deletes another user\'s plant, not even an admin', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  const bob = await token('bob');
  const admin = await token('root', { admin: true });
  await create(app, alice, { id: 1, name: 'alice plant' });
  assert.equal((await del(app, bob, '1')).statusCode, 404);
  assert.equal((await del(app, admin, '1')).statusCode, 404);
  assert.equal((await list(app, alice)).body, '[{"name":"alice plant"}]');
});

test('a path id that is not a decimal int64 is 400 40004', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  for (const id of ['abc', '1.5', '1e3', '9223372036854775808', '-9223372036854775809', '%20', '123456789012345678901']) {
    const res = await del(app, alice, id);
    assert.equal(res.statusCode, 400, id);
    assert.equal(errorBody(res).error, 40004, id);
  }
});

test('a DELETE with Content-Type: application/json and no body is answered as usual: 204, then 404', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  await create(app, alice, { id: 1, name: 'a' });
  await create(app, alice, { id: 2, name: 'b' });
  // Many clients send the header on every request; without a body there is nothing for it to describe.
  const json = { ...bearer(alice), 'content-type': 'application/json' };
  const first = await app.inject({ method: 'DELETE', url: '/plants/1', headers: json });
  assert.equal(first.statusCode, 204, first.body);
  const again = await app.inject({ method: 'DELETE', url: '/plants/1', headers: { ...json, 'content-length': '0' } });
  assert.equal(again.statusCode, 404, again.body);
  assert.equal(errorBody(again).error, 40401);
  const charset = await app.inject({ method: 'DELETE', url: '/plants/2', headers: { ...json, 'content-type': 'application/json; charset=utf-8', 'content-length': '0' } });
  assert.equal(charset.statusCode, 204, charset.body);
  assert.equal((await list(app, alice)).body, '[]');
  // A body that is there is still checked: it must be JSON, even though a DELETE ignores it.
  assert.equal(errorBody(await app.inject({ method: 'DELETE', url: '/plants/3', headers: json, payload: '{' })).error, 40001);
});
