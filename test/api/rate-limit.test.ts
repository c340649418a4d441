import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
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

test('behind a trusted proxy, one client is counted once however X-Forwarded-For spells it: ports and brackets do not make new clients', async (t) => {
  const { app, token } = await testApp(t, { authFailureLimit: hour(3), trustProxy: '10.0.0.0/8' });
  const alice = await token('alice');
  const from = (forwardedFor: string, secret = 'pst_wrong') =>
    app.inject({ method: 'GET', url: '/plants', headers: { ...bearer(secret), 'x-forwarded-for': forwardedFor }, remoteAddress: '10.0.0.5' });
  const statuses = [];
  for (let port = 40001; port <= 40012; port++) statuses.push((await from(`192.0.2.50:${port}`)).statusCode);
  assert.deepEqual(statuses, [401, 401, 401, ...Array<number>(9).fill(429)]);
  assert.equal((await from('192.0.2.50', alice)).statusCode, 429, 'the bare address is the same client');
  assert.equal((await from('::ffff:192.0.2.50', alice)).statusCode, 429, 'and so is its IPv4-mapped spelling');
  assert.equal((await from('192.0.2.51:40001', alice)).statusCode, 200, 'another client behind the same proxy');

  for (const spelling of ['[2001:db8:9:9::1]', '[2001:db8:9:9::1]:443', '2001:DB8:9:9:0:0:0:1']) assert.equal((await from(spelling)).statusCode, 401, spelling);
  assert.equal((await from('[2001:db8:9:9::2]:8443')).statusCode, 429);
  assert.equal((await from('[2001:db8:9:a::1]:8443', alice)).statusCode, 200, 'another /64');
});

test('behind a trusted proxy, an unreadable X-Forwarded-For entry counts as the proxy that wrote it', async (t) => {
  const { app, token } = await testApp(t, { authFailureLimit: hour(3), trustProxy: '10.0.0.0/8' });
  const alice = await token('alice');
  const from = (remoteAddress: string, forwardedFor: string | undefined, secret = 'pst_wrong') =>
    app.inject({ method: 'GET', url: '/plants', headers: { ...bearer(secret), ...(forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor }) }, remoteAddress });
  // Leading zeros are unreadable, not octal nor decimal: 192.000.002.050 is not 192.0.2.50.
  assert.equal((await from('10.0.0.5', '192.000.002.050')).statusCode, 401);
  assert.equal((await from('10.0.0.5', 'unknown')).statusCode, 401);
  assert.equal((await from('10.0.0.5', 'anything at all')).statusCode, 401);
  assert.equal((await from('10.0.0.5', '192.000.002.051')).statusCode, 429, 'every unreadable entry is the same client: the proxy');
  assert.equal((await from('10.0.0.5', undefined, alice)).statusCode, 429, "the proxy's own requests share that count");
  assert.equal((await from('10.0.0.6', 'unknown', alice)).statusCode, 200, 'another proxy is another count');
  assert.equal((await from('10.0.0.5', '192.0.2.50', alice)).statusCode, 200, 'a readable client behind the proxy is not affected');
  // A chain: the proxy 10.0.0.7, trusted although written with a port, wrote the unreadable entry.
  assert.equal((await from('10.0.0.6', 'garbage, 10.0.0.7:5000')).statusCode, 401);
  assert.equal((await from('10.0.0.6', '010.0.0.1, 10.0.0.7')).statusCode, 401);
  assert.equal((await from('10.0.0.6', '10.0.0.7:1')).statusCode, 401);
  assert.equal((await from('10.0.0.8', 'x, 10.0.0.7')).statusCode, 429, 'the proxy 10.0.0.7 is over its count');
  assert.equal((await from('10.0.0.8', '10.0.0.7:9', alice)).statusCode, 429, 'and blocked, a right token included');
});

test('the access log shows the client address as it was counted', async (t) => {
  const logs = new PassThrough();
  let logged = '';
  logs.on('data', (d) => (logged += d));
  const { app } = await testApp(t, { logStream: logs, accessLog: true, trustProxy: '10.0.0.0/8' });
  const forwarded = ['192.0.2.50:40001', '[2001:DB8::1]:443', 'unknown', '012.0.0.1, 10.0.0.7:80'];
  for (const forwardedFor of forwarded) await app.inject({ method: 'GET', url: '/healthz', headers: { 'x-forwarded-for': forwardedFor }, remoteAddress: '10.0.0.5' });
  await app.inject({ method: 'GET', url: '/healthz', remoteAddress: '::ffff:192.0.2.9' });
  const remotes = logged.split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((l) => l.msg === 'request').map((l) => l.remote);
  assert.deepEqual(remotes, ['192.0.2.50', '2001:db8::1', '10.0.0.5', '10.0.0.7', '192.0.2.9']);
});
