import assert from 'node:assert/strict';
import { test } from 'node:test';
import { errorBody, testApp } from '../helpers/app.js';

test('/healthz and /readyz answer without a token while the store is up', async (t) => {
  const { app } = await testApp(t);
  const health = await app.inject({ method: 'GET', url: '/healthz' });
  assert.equal(health.statusCode, 200);
  assert.equal(health.body, '{"status":"ok"}');
  const ready = await app.inject({ method: 'GET', url: '/readyz' });
  assert.equal(ready.statusCode, 200);
  assert.equal(ready.body, '{"status":"ready"}');
});

test('/readyz is 503 50300 when the store cannot serve; /healthz stays 200', async (t) => {
  const { app, store } = await testApp(t);
  await store.close();
  const ready = await app.inject({ method: 'GET', url: '/readyz' });
  assert.equal(ready.statusCode, 503);
  assert.equal(errorBody(ready).error, 50300);
  assert.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
});
