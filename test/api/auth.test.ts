import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { TOKEN_CACHE_TTL_MS } from '../../src/http/auth/index.js';
import { hashToken } from '../../src/domain/token.js';
import { bearer, create, errorBody, list, testApp } from '../helpers/app.js';

const ROUTES = [
  { method: 'GET', url: '/plants' },
  { method: 'POST', url: '/plants', payload: { id: 1, name: 'x' } },
  { method: 'DELETE', url: '/plants/1' },
] as const;

function call(app: FastifyInstance, route: (typeof ROUTES)[number], authorization?: string) {
  return app.inject({
    method: route.method,
    url: route.url,
    headers: authorization === undefined ? {} : { authorization },
    ...('payload' in route ? { payload: route.payload } : {}),
  });
}

test('no Authorization header: 401 40100 with a bare Bearer challenge, on every route', async (t) => {
  const { app } = await testApp(t);
  for (const route of ROUTES) {
    const res = await call(app, route);
    assert.equal(res.statusCode, 401, route.method);
    assert.equal(errorBody(res).error, 40100);
    assert.equal(res.headers['www-authenticate'], 'Bearer realm="plantstore"');
  }
});

test('another scheme is not a bearer credential: 401 40100', async (t) => {
  const { app, token } = await testApp(t);
  const secret = await token('alice');
  for (const header of [`Basic ${Buffer.from('alice:pw').toString('base64')}`, `Token ${secret}`, `Bearer${secret}`, '']) {
    const res = await call(app, ROUTES[0], header);
    assert.equal(res.statusCode, 401, header);
    assert.equal(errorBody(res).error, 40100, header);
  }
});

test('the scheme is case-insensitive', async (t) => {
  const { app, token } = await testApp(t);
  const secret = await token('alice');
  for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
    assert.equal((await call(app, ROUTES[0], `${scheme} ${secret}`)).statusCode, 200, scheme);
  }
});

test('a token accepted before is known only as itself: its usual spelling at once, any other through the full checks', async (t) => {
  const { app, token } = await testApp(t);
  const secret = await token('alice');
  // Remembered from here on (authenticate's shortcut for "Bearer " and a known token).
  assert.equal((await list(app, secret)).statusCode, 200);
  for (const header of [`Bearer ${secret}`, `bearer ${secret}`, `Bearer  ${secret}`, `Bearer ${secret}  `]) {
    assert.equal((await call(app, ROUTES[0], header)).statusCode, 200, JSON.stringify(header));
  }
  // The known token followed by more is another credential (or none): never the known one.
  for (const header of [`Bearer ${secret}x`, `Bearer ${secret}=`, `Bearer ${secret} x`, `Bearer ${secret},`, `Bearer ${secret}\u00e9`]) {
    const res = await call(app, ROUTES[0], header);
    assert.equal(res.statusCode, 401, JSON.stringify(header));
    assert.equal(errorBody(res).error, 40101, JSON.stringify(header));
  }
});

test('unknown or malformed tokens: 401 40101 with error="invalid_token"', async (t) => {
  const { app, token } = await testApp(t);
  const secret = await token('alice');
  const challenge = 'Bearer realm="plantstore", error="invalid_token", error_description="The bearer token is unknown, expired or revoked"';
  for (const bad of [`${secret}x`, secret.slice(0, -1), 'pst_unknown', 'Bearer', 'two words', '"quoted"', hashToken(secret)]) {
    for (const route of ROUTES) {
      const res = await call(app, route, `Bearer ${bad}`);
      assert.equal(res.statusCode, 401, bad);
      assert.equal(errorBody(res).error, 40101, bad);
      assert.equal(res.headers['www-authenticate'], challenge);
    }
  }
});

test('an expired token is refused with 40101', async (t) => {
  const { app, token } = await testApp(t);
  // The clock is the test's: the token's lifetime passes when the test moves it, however slow the machine.
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  const secret = await token('alice', { expiresInMs: 2000 });
  assert.equal((await list(app, secret)).statusCode, 200);
  t.mock.timers.tick(2100);
  const res = await list(app, secret);
  assert.equal(res.statusCode, 401);
  assert.equal(errorBody(res).error, 40101);
});

test('a revoked token is refused, by another handle on the store, within the cache lifetime', async (t) => {
  const { app, token, store, reopen } = await testApp(t);
  // The cache's lifetime passes on the test's clock.
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  const secret = await token('alice');
  assert.equal((await list(app, secret)).statusCode, 200);
  const record = await store.tokens.findTokenByHash(hashToken(secret));
  assert.ok(record);
  // Revoke through a second handle, as `plantstore token revoke` in another process does.
  const other = await reopen();
  assert.equal(await other.tokens.revokeToken(record.id), true);
  assert.equal(await other.tokens.revokeToken(record.id), false, 'revoking twice reports nothing to revoke');
  t.mock.timers.tick(TOKEN_CACHE_TTL_MS + 100);
  const res = await list(app, secret);
  assert.equal(res.statusCode, 401);
  assert.equal(errorBody(res).error, 40101);
  assert.ok(TOKEN_CACHE_TTL_MS <= 5000, 'revocation must take effect within 5 seconds');
});

test('a token revoked before its first use is refused at once', async (t) => {
  const { app, token, store } = await testApp(t);
  const secret = await token('alice');
  const record = await store.tokens.findTokenByHash(hashToken(secret));
  assert.ok(record);
  await store.tokens.revokeToken(record.id);
  assert.equal((await list(app, secret)).statusCode, 401);
});

test('scopes: plants:read lists, plants:write creates and deletes; otherwise 403 40300', async (t) => {
  const { app, token } = await testApp(t);
  const reader = await token('alice', { scopes: ['plants:read'] });
  const writer = await token('alice', { scopes: ['plants:write'] });
  const both = await token('alice');

  assert.equal((await create(app, writer, { id: 1, name: 'w' })).statusCode, 200);
  assert.equal((await list(app, reader)).statusCode, 200);
  for (const [secret, route, scope] of [
    [reader, ROUTES[1], 'plants:write'],
    [reader, ROUTES[2], 'plants:write'],
    [writer, ROUTES[0], 'plants:read'],
  ] as const) {
    const res = await call(app, route, `Bearer ${secret}`);
    assert.equal(res.statusCode, 403, `${route.method} with ${scope} missing`);
    assert.equal(errorBody(res).error, 40300);
    assert.equal(res.headers['www-authenticate'], `Bearer realm="plantstore", error="insufficient_scope", scope="${scope}"`);
  }
  assert.equal((await app.inject({ method: 'DELETE', url: '/plants/1', headers: bearer(writer) })).statusCode, 204);
  assert.equal((await list(app, both)).body, '[]');
});

test('authentication is checked before the body: an unauthenticated bad body is 401, not 400 or 413', async (t) => {
  const { app } = await testApp(t);
  const res = await app.inject({
    method: 'POST',
    url: '/plants',
    headers: { 'content-type': 'application/json' },
    payload: '{'.repeat(70_000),
  });
  assert.equal(res.statusCode, 401);
});

test('the token store keeps only a hash of each secret', async (t) => {
  const { token, store } = await testApp(t);
  const secret = await token('alice');
  assert.match(secret, /^pst_[A-Za-z0-9_-]{43}$/, '256 random bits, base64url');
  const record = await store.tokens.findTokenByHash(hashToken(secret));
  assert.ok(record);
  assert.ok(!JSON.stringify(await store.tokens.listTokens()).includes(secret));
  assert.equal(await store.tokens.findTokenByHash(secret), null, 'the secret itself is not a key');
});
