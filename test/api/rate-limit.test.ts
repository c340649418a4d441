import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULTS } from '../../src/config/load.js';
import { bearer, create, errorBody, list, testApp } from '../helpers/app.js';

// Windows are fixed and aligned to the clock; an hour keeps a test from straddling a boundary.
const hour = (limit: number) => ({ limit, windowMs: 3_600_000 });

test('RATE_LIMIT: each token has its budget; past it 429 42900 with Retry-After and RateLimit headers', async (t) => {
  const { app, token, store } = await testApp(t, { rateLimit: hour(3) });
  const alice = await token('alice');
  const bob = await token('bob');
  for (let i = 1; i <= 3; i++) {
    const res = await create(app, alice, { id: i, name: `p${i}` });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['ratelimit-policy'], '"token";q=3;w=3600');
    assert.match(String(res.headers.ratelimit), new RegExp(`^"token";r=${3 - i};t=\\d+$`));
  }
  const refused = await create(app, alice, { id: 4, name: 'p4' });
  assert.equal(refused.statusCode, 429);
  assert.equal(errorBody(refused).error, 42900);
  const retryAfter = Number(refused.headers['retry-after']);
  assert.ok(retryAfter >= 1 && retryAfter <= 3600, String(refused.headers['retry-after']));
  assert.match(String(refused.headers.ratelimit), /^"token";r=0;t=\d+$/);
  assert.equal(refused.headers['ratelimit-policy'], '"token";q=3;w=3600');
  assert.equal((await store.plants.listPlants({ owner: 'alice', limit: 10 })).plants.length, 3, 'the refused create stored nothing');
  assert.equal((await list(app, bob)).statusCode, 200, "bob's budget is his own");
});

test('RATE_LIMIT off (the default): no RateLimit headers, no limit', async (t) => {
  assert.equal(DEFAULTS.rateLimit, null);
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  for (let i = 0; i < 20; i++) {
    const res = await list(app, alice);
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers.ratelimit, undefined);
  }
});

test('AUTH_FAILURE_LIMIT: too many wrong tokens from one address, and that address is refused even a right one', async (t) => {
  const { app, token } = await testApp(t, { authFailureLimit: hour(3) });
  const alice = await token('alice');
  const from = (remoteAddress: string, secret: string) =>
    app.inject({ method: 'GET', url: '/plants', headers: bearer(secret), remoteAddress });
  for (let i = 0; i < 3; i++) assert.equal((await from('192.0.2.1', `pst_guess${i}`)).statusCode, 401);
  // Requests without a token are not guesses, and do not count.
  for (let i = 0; i < 5; i++) assert.equal((await app.inject({ method: 'GET', url: '/plants', remoteAddress: '192.0.2.1' })).statusCode, 401);
  const limited = await from('192.0.2.1', 'pst_guess3');
  assert.equal(limited.statusCode, 429);
  assert.equal(errorBody(limited).error, 42901);
  assert.ok(Number(limited.headers['retry-after']) >= 1);
  assert.equal(limited.headers['ratelimit-policy'], '"failed-auth";q=3;w=3600');
  assert.equal((await from('192.0.2.1', alice)).statusCode, 429, 'a right token from a blocked address is refused too');
  assert.equal((await from('192.0.2.2', alice)).statusCode, 200, 'other addresses are not affected');
});

test('the default failed-authentication limit leaves room for a legitimate client\'s mistakes (60 a minute)', async (t) => {
  assert.deepEqual(DEFAULTS.authFailureLimit, { limit: 60, windowMs: 60_000 });
  const { app } = await testApp(t, { authFailureLimit: hour(60) }); // the default count, away from a minute boundary
  for (let i = 0; i < 60; i++) {
    assert.equal((await app.inject({ method: 'GET', url: '/plants', headers: bearer(`pst_typo${i}`), remoteAddress: '198.51.100.9' })).statusCode, 401);
  }
  assert.equal((await app.inject({ method: 'GET', url: '/plants', headers: bearer('pst_typo60'), remoteAddress: '198.51.100.9' })).statusCode, 429);
});

test('behind a trusted proxy, X-Forwarded-For names the client; otherwise it is ignored', async (t) => {
  const guessFrom = (app: Awaited<ReturnType<typeof testApp>>['app'], forwardedFor: string) =>
    app.inject({ method: 'GET', url: '/plants', headers: { ...bearer('pst_wrong'), 'x-forwarded-for': forwardedFor }, remoteAddress: '10.0.0.5' });

  const behindProxy = await testApp(t, { authFailureLimit: hour(1), trustProxy: '10.0.0.0/8' });
  assert.equal((await guessFrom(behindProxy.app, '203.0.113.1')).statusCode, 401);
  assert.equal((await guessFrom(behindProxy.app, '203.0.113.1')).statusCode, 429);
  assert.equal((await guessFrom(behindProxy.app, '203.0.113.2')).statusCode, 401, 'another client behind the same proxy');

  const direct = await testApp(t, { authFailureLimit: hour(1) });
  assert.equal((await guessFrom(direct.app, '203.0.113.1')).statusCode, 401);
  assert.equal((await guessFrom(direct.app, '203.0.113.2')).statusCode, 429, 'a forged X-Forwarded-For does not dodge the limit');
});

test('AUTH_FAILURE_LIMIT counts an IPv6 client by its /64: failures from two of its addresses add up; another /64 is not limited', async (t) => {
  const { app, token } = await testApp(t, { authFailureLimit: hour(2) });
  const alice = await token('alice');
  const from = (remoteAddress: string, secret: string) =>
    app.inject({ method: 'GET', url: '/plants', headers: bearer(secret), remoteAddress });
  assert.equal((await from('2001:db8:1:2::1', 'pst_guess0')).statusCode, 401);
  assert.equal((await from('2001:db8:1:2:ffff::2', 'pst_guess1')).statusCode, 401);
  const limited = await from('2001:db8:1:2::3', 'pst_guess2');
  assert.equal(limited.statusCode, 429);
  assert.equal(errorBody(limited).error, 42901);
  assert.equal((await from('2001:db8:1:2:abcd::9', alice)).statusCode, 429, 'the whole /64 is blocked, a right token included');
  assert.equal((await from('2001:db8:1:3::1', alice)).statusCode, 200, 'the next /64 is another client');
  assert.equal((await from('2001:db8:1:3::1', 'pst_guess3')).statusCode, 401);
});

test('AUTH_FAILURE_LIMIT counts an IPv4 client the same whether it arrives as IPv4 or IPv4-mapped IPv6', async (t) => {
  const { app } = await testApp(t, { authFailureLimit: hour(1) });
  const from = (remoteAddress: string) => app.inject({ method: 'GET', url: '/plants', headers: bearer('pst_wrong'), remoteAddress });
  assert.equal((await from('192.0.2.44')).statusCode, 401);
  assert.equal((await from('::ffff:192.0.2.44')).statusCode, 429);
  assert.equal((await from('192.0.2.45')).statusCode, 401);
});

test('behind a trusted proxy, IPv6 clients named by X-Forwarded-For are counted by their /64', async (t) => {
  const { app } = await testApp(t, { authFailureLimit: hour(1), trustProxy: '10.0.0.0/8' });
  const guessFrom = (forwardedFor: string) =>
    app.inject({ method: 'GET', url: '/plants', headers: { ...bearer('pst_wrong'), 'x-forwarded-for': forwardedFor }, remoteAddress: '10.0.0.5' });
  assert.equal((await guessFrom('2001:db8:7:7::1')).statusCode, 401);
  assert.equal((await guessFrom('2001:db8:7:7::2')).statusCode, 429, 'another address of the same /64');
  assert.equal((await guessFrom('2001:db8:7:8::1')).statusCode, 401, 'another /64 behind the same proxy');
});
