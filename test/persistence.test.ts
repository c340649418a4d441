import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildApp } from '../src/app.js';
import { hashToken } from '../src/tokens.js';
import { create, list, testApp } from './helpers.js';

test('plants and tokens survive closing the app and reopening the store', async (t) => {
  const { app, token, store, reopen } = await testApp(t);
  const alice = await token('alice');
  await create(app, alice, { id: 1, name: 'Monstera', tag: 'indoor' });
  await create(app, alice, '{"id":9223372036854775807,"name":"max"}');
  await app.close();
  await store.close();

  const reopened = await reopen();
  assert.ok(await reopened.findTokenByHash(hashToken(alice)));
  const app2 = await buildApp({ store: reopened, logLevel: 'silent' });
  t.after(() => app2.close());
  assert.equal((await list(app2, alice)).body, '[{"name":"Monstera","tag":"indoor"},{"name":"max"}]');
  // The int64 id survived exactly: the same create is a replay, a neighbour id is a new plant.
  assert.equal((await create(app2, alice, '{"id":9223372036854775807,"name":"max"}')).statusCode, 200);
  assert.equal((await create(app2, alice, '{"id":9223372036854775806,"name":"max-1"}')).statusCode, 200);
  assert.equal((await list(app2, alice)).json().length, 3);
});
