import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BACKEND, bearer, list, testApp } from '../helpers/app.js';

if (BACKEND !== 'postgres') throw new Error('test/postgres/* needs PLANTSTORE_TEST_DATABASE_URL (npm test sets it)');

// Windows are fixed and aligned to the clock; an hour keeps a test from straddling a boundary.
const hour = (limit: number) => ({ limit, windowMs: 3_600_000 });

test('instances on one database share a token\'s budget and an address\'s failure count', async (t) => {
  const limits = { rateLimit: hour(4), authFailureLimit: hour(2) };
  const a = await testApp(t, limits);
  const b = await testApp(t, limits, { ...a, store: await a.reopen() });
  const alice = await a.token('alice');
  const statuses = [];
  for (let i = 0; i < 6; i++) statuses.push((await list(i % 2 ? b.app : a.app, alice)).statusCode);
  assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429]);

  const guess = (app: typeof a.app, secret: string) =>
    app.inject({ method: 'GET', url: '/plants', headers: bearer(secret), remoteAddress: '192.0.2.50' });
  assert.equal((await guess(a.app, 'pst_1')).statusCode, 401);
  assert.equal((await guess(b.app, 'pst_2')).statusCode, 401);
  assert.equal((await guess(a.app, 'pst_3')).statusCode, 429, 'the third failure, counted across both instances');
  assert.equal((await guess(b.app, 'pst_4')).statusCode, 429);
});
