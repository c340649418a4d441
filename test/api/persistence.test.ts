import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hashToken } from '../../src/domain/token.js';
import { create, list, testApp } from '../helpers/app.js';

test('plants and tokens survive closing the app and reopening the store', async (t) => {
  const first = await testApp(t);
  const alice = await first.token('alice');
  await create(first.app, alice, { id: 1, name: 'Monstera', tag: 'indoor' });
  await create(first.app, alice, '{"id":9223372036854775807,"name":"max"}');
  await first.app.close();
  await first.store.close();

  const reopened = await first.reopen();
  assert.ok(await reopened.tokens.findTokenByHash(hashToken(alice)));
  const { app } = await testApp(t, {}, { ...first, store: reopened });
  assert.equal((await list(app, alice)).body, '[{"name":"Monstera","tag":"indoor"},{"name":"max"}]');
  // The int64 id survived exactly: the same create is a replay, a neighbour id is a new plant.
  assert.equal((await create(app, alice, '{"id":9223372036854775807,"name":"max"}')).statusCode, 200);
  assert.equal((await create(app, alice, '{"id":9223372036854775806,"name":"max-1"}')).statusCode, 200);
  assert.equal((await list(app, alice)).json().length, 3);
});
