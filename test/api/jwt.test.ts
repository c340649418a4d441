import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test, type TestContext } from 'node:test';
import { CompactSign, SignJWT, UnsecuredJWT } from 'jose';
import { ConfigError } from '../../src/config/error.js';
import { loadConfig } from '../../src/config/load.js';
import { KEY_REFETCH_COOLDOWN_MS, refreshPeriodOf } from '../../src/http/auth/jwks.js';
import { bearer, create, errorBody, list, testApp, type TestAppOptions } from '../helpers/app.js';
import { AUDIENCE, closedPort, sign, signingKey, TestProvider } from '../helpers/jwt-provider.js';

/** An app that accepts the provider's JWTs (found by discovery from its issuer), beside opaque tokens. */
function jwtApp(t: TestContext, provider: TestProvider, options: TestAppOptions = {}) {
  return testApp(t, { jwtIssuer: provider.issuer, jwtAudience: AUDIENCE, ...options });
}

const challengeOf = (description: string) =>
  `Bearer realm="plantstore", error="invalid_token", error_description="${description}"`;

test('a valid JWT of each algorithm (RS256, PS256, ES256, EdDSA) lists and creates as its user; keys are fetched once', async (t) => {
  const keys = await Promise.all((['RS256', 'PS256', 'ES256', 'EdDSA'] as const).map((alg) => signingKey(alg, `k-${alg}`)));
  const provider = await TestProvider.start(t, keys);
  const { app } = await jwtApp(t, provider);
  for (const [i, key] of keys.entries()) {
    const jwt = await sign(provider, { sub: 'alice', scope: 'plants:read plants:write' }, { key });
    const created = await create(app, jwt, { id: i + 1, name: `plant ${key.alg}` });
    assert.equal(created.statusCode, 200, `${key.alg}: ${created.body}`);
    const listed = await list(app, jwt);
    assert.equal(listed.statusCode, 200, key.alg);
    assert.equal((listed.json() as unknown[]).length, i + 1, key.alg);
  }
  assert.equal(provider.jwksRequests, 1, 'one key-set fetch served every token');
});

test('every refusal is 401 invalid_token with a challenge saying which check failed, never the token', async (t) => {
  const key = await signingKey('RS256', 'main');
  const es384 = await signingKey('ES384', 'es384');
  const impostor = await signingKey('RS256', 'main'); // the same kid, another private key
  const provider = await TestProvider.start(t, [key, es384]);
  const { app } = await jwtApp(t, provider);
  const alice = { sub: 'alice', scope: 'plants:read' };
  const hs256 = await new SignJWT(alice).setProtectedHeader({ alg: 'HS256', kid: 'main' }).setIssuer(provider.issuer)
    .setAudience(AUDIENCE).setExpirationTime('10m').sign(new TextEncoder().encode('a shared secret of at least 32 bytes!!'));
  const none = new UnsecuredJWT(alice).setIssuer(provider.issuer).setAudience(AUDIENCE).setExpirationTime('10m').encode();
  const cases: Array<[string, string]> = [
    ['JWT signature verification failed', await sign(provider, alice, { key: impostor })],
    ['JWT issuer (iss) is not the one configured', await sign(provider, alice, { key, issuer: 'https://other.example/realms/test' })],
    ['JWT audience (aud) does not include this API', await sign(provider, alice, { key, audience: 'another-app' })],
    ['JWT has expired (exp)', await sign(provider, alice, { key, expiresIn: -120 })], // beyond the 60 s skew
    ['JWT is not valid yet (nbf)', await sign(provider, alice, { key, notBefore: 300 })],
    ['JWT has no expiry (exp)', await sign(provider, alice, { key, expiresIn: null })],
    // A claim of the wrong type says so: an nbf of "soon" is not "not valid yet", an exp of "tomorrow" not "no expiry".
    ['JWT claim nbf has the wrong type (a number of seconds is expected)', await sign(provider, { ...alice, nbf: 'soon' as unknown as number }, { key })],
    ['JWT claim exp has the wrong type (a number of seconds is expected)', await sign(provider, { ...alice, exp: 'tomorrow' as unknown as number }, { key, expiresIn: null })],
    ['JWT signature algorithm (alg) is not allowed', hs256],
    ['JWT signature algorithm (alg) is not allowed', none],
    ['JWT signature algorithm (alg) is not allowed', await sign(provider, alice, { key: es384 })], // not in JWT_ALGORITHMS
    ['malformed JWT', 'eyJub3QiOiJqc29u.eyJzdWIiOiJhbGljZSJ9.c2ln'],
    ['malformed JWT', await new CompactSign(new TextEncoder().encode('not a claims set')).setProtectedHeader({ alg: 'RS256', kid: 'main' }).sign(key.privateKey)],
    ['JWT user claim is missing or not a valid user name', await sign(provider, { scope: 'plants:read' }, { key })],
    ['JWT user claim is not a valid user name: it must not start or end with whitespace', await sign(provider, { sub: ' alice', scope: 'plants:read' }, { key })],
    // A right-to-left override would show x\u202Ey as y\u202Ex in listings and logs.
    [
      'JWT user claim is not a valid user name: it must not contain control characters, invisible format characters (bidirectional controls, zero-width characters), or line and paragraph separators (found U+202E)',
      await sign(provider, { sub: 'x\u202Ey', scope: 'plants:read' }, { key }),
    ],
    ['JWT user claim is missing or not a valid user name', await sign(provider, { sub: 42 as unknown as string, scope: 'plants:read' }, { key })],
  ];
  for (const [description, jwt] of cases) {
    const res = await list(app, jwt);
    assert.equal(res.statusCode, 401, description);
    assert.equal(errorBody(res).error, 40101, description);
    assert.equal(res.headers['www-authenticate'], challengeOf(description), description);
    assert.equal(errorBody(res).message, `The bearer token is invalid: ${description}`);
    assert.ok(!res.body.includes(jwt.split('.')[1] ?? ''), 'the answer never repeats the token');
  }
  // Within the clock skew (JWT_CLOCK_SKEW, 60 s) an expired or not-yet-valid token is accepted.
  assert.equal((await list(app, await sign(provider, alice, { key, expiresIn: -30 }))).statusCode, 200);
  assert.equal((await list(app, await sign(provider, alice, { key, notBefore: 30 }))).statusCode, 200);
  // Opaque tokens are refused as before, without a JWT's detail.
  const opaque = await list(app, 'pst_unknown');
  assert.equal(opaque.headers['www-authenticate'], challengeOf('The bearer token is unknown, expired or revoked'));
  // The key set held only public keys: no request made it fetch again (unknown kids were none).
  assert.equal(provider.jwksRequests, 1);
});

test('a remembered JWT is not taken for another token that ends as it does: a forged payload with its signature is 401', async (t) => {
  const key = await signingKey('RS256', 'main');
  const provider = await TestProvider.start(t, [key]);
  const { app } = await jwtApp(t, provider);
  const jwt = await sign(provider, { sub: 'alice', scope: 'plants:read' }, { key });
  assert.equal((await list(app, jwt)).statusCode, 200);
  const [header, payload, signature] = jwt.split('.') as [string, string, string];
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
  const forged = `${header}.${Buffer.from(JSON.stringify({ ...claims, sub: 'mallory' })).toString('base64url')}.${signature}`;
  const res = await list(app, forged);
  assert.equal(res.statusCode, 401);
  assert.equal(res.headers['www-authenticate'], challengeOf('JWT signature verification failed'));
  // And the remembered one still works, as itself.
  assert.equal((await list(app, jwt)).statusCode, 200);
});

test('key rotation at the provider works without a restart; an unknown kid fetches the key set once per cooldown', async (t) => {
  const old = await signingKey('ES256', 'old');
  const provider = await TestProvider.start(t, [old]);
  const cooldownMs = 400;
  // The cooldown is read from Date: a mocked clock passes it at once, and stands still within it however
  // slow the machine.
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  const { app } = await jwtApp(t, provider, { jwtCooldownMs: cooldownMs });
  const claims = { sub: 'alice', scope: 'plants:read' };
  assert.equal((await list(app, await sign(provider, claims, { key: old }))).statusCode, 200);
  assert.equal(provider.jwksRequests, 1);

  const rotated = await signingKey('ES256', 'new');
  provider.published = [rotated, old];
  t.mock.timers.tick(cooldownMs + 50);
  // A token with the new kid: one fetch finds it. Concurrent ones share that fetch.
  const fresh = await Promise.all([1, 2, 3].map(() => sign(provider, claims, { key: rotated })));
  for (const res of await Promise.all(fresh.map((jwt) => list(app, jwt)))) assert.equal(res.statusCode, 200, res.body);
  assert.equal(provider.jwksRequests, 2);

  // Tokens naming kids the provider does not have: the first after the cooldown fetches once, the rest wait.
  t.mock.timers.tick(cooldownMs + 50);
  const stranger = await signingKey('ES256', 'stranger');
  for (let i = 0; i < 5; i++) {
    const res = await list(app, await sign(provider, claims, { key: stranger, kid: `unknown-${i}` }));
    assert.equal(res.statusCode, 401);
    assert.equal(res.headers['www-authenticate'], challengeOf('no key of the identity provider matches the JWT (kid)'));
  }
  assert.equal(provider.jwksRequests, 3, 'five unknown kids within the cooldown: one fetch');
  // Tokens with a known kid never cause a fetch.
  for (let i = 0; i < 3; i++) assert.equal((await list(app, await sign(provider, claims, { key: old }))).statusCode, 200);
  assert.equal(provider.jwksRequests, 3);
});

test('with the default 30 s cooldown, tokens with unknown kids cannot make the server hammer the provider', async (t) => {
  assert.equal(KEY_REFETCH_COOLDOWN_MS, 30_000);
  const key = await signingKey('RS256', 'main');
  const provider = await TestProvider.start(t, [key]);
  const { app } = await jwtApp(t, provider);
  assert.equal((await list(app, await sign(provider, { sub: 'alice', scope: 'plants:read' }, { key }))).statusCode, 200);
  const stranger = await signingKey('RS256', 'stranger');
  for (let i = 0; i < 20; i++) {
    const res = await list(app, await sign(provider, { sub: 'mallory' }, { key: stranger, kid: `k${i}` }));
    assert.equal(res.statusCode, 401);
  }
  assert.equal(provider.jwksRequests, 1);
});

test('provider down: tokens with cached keys keep working, an unknown key is 503 50302 with Retry-After; one log line each way', async (t) => {
  const key = await signingKey('EdDSA', 'main');
  const provider = await TestProvider.start(t, [key]);
  const logs = new PassThrough();
  let logged = '';
  logs.on('data', (d) => (logged += d));
  const cooldownMs = 300;
  // The cooldown is read from Date: a mocked clock passes it at once.
  t.mock.timers.enable({ apis: ['Date'], now: Date.now() });
  const { app } = await jwtApp(t, provider, { jwtCooldownMs: cooldownMs, logStream: logs });
  const claims = { sub: 'alice', scope: 'plants:read' };
  assert.equal((await list(app, await sign(provider, claims, { key }))).statusCode, 200);

  provider.down = true;
  t.mock.timers.tick(cooldownMs + 50);
  // A token never seen before, signed with the cached key: verified with the cached key, no fetch needed.
  assert.equal((await list(app, await sign(provider, { sub: 'bob', scope: 'plants:read' }, { key }))).statusCode, 200);
  const rotated = await signingKey('EdDSA', 'rotated');
  const unknown = await sign(provider, claims, { key: rotated });
  for (let i = 0; i < 3; i++) {
    const res = await list(app, unknown);
    assert.equal(res.statusCode, 503);
    assert.equal(errorBody(res).error, 50302);
    assert.match(errorBody(res).message, /^The identity provider cannot be reached .* \(request id [^)]+\)$/);
    assert.match(String(res.headers['retry-after']), /^[1-9]\d*$/);
    assert.equal(res.headers['www-authenticate'], undefined, 'not an authentication failure');
  }
  const lines = () => logged.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { level: number; msg: string });
  assert.equal(lines().filter((l) => l.msg.startsWith('identity provider cannot be reached')).length, 1, logged);
  assert.equal(lines().filter((l) => l.level >= 50).length, 0, 'a provider outage is not an error per request');

  provider.published = [rotated, key];
  provider.down = false;
  t.mock.timers.tick(cooldownMs + 50);
  assert.equal((await list(app, unknown)).statusCode, 200, 'the key is fetched once the provider is back');
  assert.equal(lines().filter((l) => l.msg.startsWith('identity provider reachable again')).length, 1, logged);
  assert.ok(!logged.includes(unknown.split('.')[2] ?? '-'), 'the token never reaches the log');
});

test('start-up and /readyz do not wait for the provider; opaque tokens keep working while it is unreachable', async (t) => {
  const key = await signingKey('RS256', 'main');
  const port = await closedPort();
  const { app, token } = await testApp(t, { jwtJwksUrl: `http://127.0.0.1:${port}/jwks`, jwtAudience: AUDIENCE });
  assert.equal((await app.inject({ url: '/readyz' })).statusCode, 200);
  assert.equal((await list(app, await token('alice'))).statusCode, 200);
  const provider = { issuer: 'https://idp.example/realms/test' } as TestProvider;
  const res = await list(app, await sign(provider, { sub: 'alice', scope: 'plants:read' }, { key }));
  assert.equal(res.statusCode, 503);
  assert.equal(errorBody(res).error, 50302);
});

test('JWT_JWKS_URL names the key set directly; iss is then checked only when JWT_ISSUER is set too', async (t) => {
  const key = await signingKey('RS256', 'main');
  const provider = await TestProvider.start(t, [key]);
  const { app } = await testApp(t, { jwtJwksUrl: provider.jwksUrl, jwtAudience: AUDIENCE });
  const anyIssuer = await sign(provider, { sub: 'alice', scope: 'plants:read' }, { key, issuer: 'https://whoever.example/' });
  assert.equal((await list(app, anyIssuer)).statusCode, 200);
  const both = await testApp(t, { jwtJwksUrl: provider.jwksUrl, jwtIssuer: provider.issuer, jwtAudience: AUDIENCE });
  assert.equal((await list(both.app, anyIssuer)).statusCode, 401);
  assert.equal((await list(both.app, await sign(provider, { sub: 'alice', scope: 'plants:read' }, { key }))).statusCode, 200);
});

test('scopes come from scope and scp (array or string); JWT_DEFAULT_SCOPES applies only when none is plantstore\'s', async (t) => {
  const key = await signingKey('RS256', 'main');
  const provider = await TestProvider.start(t, [key]);
  const { app } = await jwtApp(t, provider);
  const as = (claims: Record<string, unknown>) => sign(provider, { sub: 'alice', ...claims }, { key });
  const expect = async (jwt: string, canList: boolean, canCreate: boolean, label: string) => {
    assert.equal((await list(app, jwt)).statusCode, canList ? 200 : 403, `${label}: list`);
    const created = await create(app, jwt, { id: Math.floor(Math.random() * 1e9) + 1, name: 'p' });
    assert.equal(created.statusCode, canCreate ? 200 : 403, `${label}: create`);
    if (!canCreate) assert.match(String(created.headers['www-authenticate']), /error="insufficient_scope", scope="plants:write"/);
  };
  await expect(await as({ scope: 'openid plants:read profile' }), true, false, 'scope string');
  await expect(await as({ scp: ['plants:write'] }), false, true, 'scp array');
  await expect(await as({ scp: 'plants:read plants:write' }), true, true, 'scp string');
  await expect(await as({ scope: 'plants:read', scp: ['plants:write'] }), true, true, 'both claims');
  await expect(await as({ scope: 'openid email' }), false, false, 'none of plantstore\'s, no defaults');
  await expect(await as({ scope: 'plants:readwrite PLANTS:READ' }), false, false, 'only exact scope names count');

  const defaults = await jwtApp(t, provider, { jwtDefaultScopes: ['plants:read'] });
  assert.equal((await list(defaults.app, await as({ scope: 'openid email' }))).statusCode, 200, 'the default scope');
  assert.equal((await list(defaults.app, await as({}))).statusCode, 200, 'no scope claim at all');
  // A token that carries one of plantstore's scopes gets exactly those, not the defaults as well.
  assert.equal((await list(defaults.app, await as({ scope: 'plants:write' }))).statusCode, 403);
});

test('plants:admin makes a JWT an admin: it lists every user\'s plants, and still creates as its own user', async (t) => {
  const key = await signingKey('PS256', 'main');
  const provider = await TestProvider.start(t, [key]);
  const { app, token } = await jwtApp(t, provider);
  assert.equal((await create(app, await token('bob'), { id: 1, name: 'bob\'s' })).statusCode, 200);
  assert.equal((await create(app, await token('carol'), { id: 2, name: 'carol\'s' })).statusCode, 200);
  const admin = await sign(provider, { sub: 'alice', scope: 'plants:read plants:write plants:admin' }, { key });
  assert.deepEqual((await list(app, admin)).json(), [{ name: 'bob\'s' }, { name: 'carol\'s' }]);
  assert.equal((await create(app, admin, { id: 3, name: 'alice\'s' })).statusCode, 200);
  const plain = await sign(provider, { sub: 'alice', scope: 'plants:read' }, { key });
  assert.deepEqual((await list(app, plain)).json(), [{ name: 'alice\'s' }]);
  // plants:admin alone grants no scope (as `token create --admin` with no plants:read lists nothing).
  assert.equal((await list(app, await sign(provider, { sub: 'alice', scope: 'plants:admin' }, { key }))).statusCode, 403);
});

test('a JWT whose user claim is alice and an opaque token of user alice are the same user', async (t) => {
  const key = await signingKey('ES256', 'main');
  const provider = await TestProvider.start(t, [key]);
  const { app, token } = await jwtApp(t, provider, { jwtUserClaim: 'preferred_username' });
  const jwt = await sign(provider, { sub: 'f81d4fae-7dec-11d0-a765-00a0c91e6bf6', preferred_username: 'alice', scope: 'plants:read plants:write' }, { key });
  const opaque = await token('alice');
  assert.equal((await create(app, jwt, { id: 10, name: 'from the JWT' })).statusCode, 200);
  assert.equal((await create(app, opaque, { id: 11, name: 'from the opaque token' })).statusCode, 200);
  const expected = [{ name: 'from the JWT' }, { name: 'from the opaque token' }];
  assert.deepEqual((await list(app, jwt)).json(), expected);
  assert.deepEqual((await list(app, opaque)).json(), expected);
  // Either one deletes what the other created: one owner.
  assert.equal((await app.inject({ method: 'DELETE', url: '/plants/11', headers: bearer(jwt) })).statusCode, 204);
  assert.deepEqual((await list(app, opaque)).json(), [{ name: 'from the JWT' }]);
  assert.deepEqual((await list(app, await token('bob'))).json(), []);
});

test('RATE_LIMIT counts a JWT user\'s requests together, whichever of their JWTs is used', async (t) => {
  const key = await signingKey('RS256', 'main');
  const provider = await TestProvider.start(t, [key]);
  const { app } = await jwtApp(t, provider, { rateLimit: { limit: 2, windowMs: 3_600_000 } });
  const jwts = await Promise.all([1, 2, 3].map((i) => sign(provider, { sub: 'alice', scope: 'plants:read', jti: `t${i}` }, { key })));
  assert.equal((await list(app, jwts[0] as string)).statusCode, 200);
  assert.equal((await list(app, jwts[1] as string)).statusCode, 200);
  const third = await list(app, jwts[2] as string);
  assert.equal(third.statusCode, 429);
  assert.equal(errorBody(third).error, 42900);
  const bob = await sign(provider, { sub: 'bob', scope: 'plants:read' }, { key });
  assert.equal((await list(app, bob)).statusCode, 200, 'another user has a budget of their own');
});

test('configuration: JWT_AUDIENCE is required with a provider; none and HMAC are refused in JWT_ALGORITHMS', () => {
  const refused = (env: Record<string, string>, message: RegExp) =>
    assert.throws(() => loadConfig({}, env, process.cwd()), (e: unknown) => e instanceof ConfigError && message.test(e.message), JSON.stringify(env));
  refused({ JWT_ISSUER: 'https://idp.example/realms/x' }, /JWT_AUDIENCE is required/);
  refused({ JWT_JWKS_URL: 'https://idp.example/jwks' }, /JWT_AUDIENCE is required/);
  for (const alg of ['HS256', 'HS512', 'none']) {
    refused({ JWT_ALGORITHMS: `RS256,${alg}` }, new RegExp(`JWT_ALGORITHMS: ${alg} is never accepted`));
  }
  refused({ JWT_ALGORITHMS: 'RS257' }, /unknown algorithm "RS257"/);
  refused({ JWT_ISSUER: 'http://idp.example/realms/x', JWT_AUDIENCE: 'a' }, /JWT_ISSUER must be an https:\/\/ URL/);
  refused({ JWT_DEFAULT_SCOPES: 'plants:read,plants:admin' }, /must not grant plants:admin/);
  refused({ JWT_DEFAULT_SCOPES: 'plants:everything' }, /unknown scope/);
  const config = loadConfig({}, {
    JWT_ISSUER: 'https://idp.example/realms/x', JWT_AUDIENCE: 'account', JWT_ALGORITHMS: 'ES256, EdDSA',
    JWT_CLOCK_SKEW: '2m', JWT_USER_CLAIM: 'preferred_username', JWT_DEFAULT_SCOPES: 'plants:read plants:write',
  }, process.cwd());
  assert.deepEqual(
    [config.jwtIssuer, config.jwtAudience, config.jwtAlgorithms, config.jwtClockSkewMs, config.jwtUserClaim, config.jwtDefaultScopes],
    ['https://idp.example/realms/x', 'account', ['ES256', 'EdDSA'], 120_000, 'preferred_username', ['plants:read', 'plants:write']],
  );
});

test('the key set is refreshed on the provider\'s Cache-Control max-age, clamped to [1 min, 24 h]', () => {
  assert.equal(refreshPeriodOf('public, max-age=3600'), 3_600_000);
  assert.equal(refreshPeriodOf('max-age=5'), 60_000);
  assert.equal(refreshPeriodOf('max-age=31536000, immutable'), 86_400_000);
  assert.equal(refreshPeriodOf('no-cache'), 60_000);
  assert.equal(refreshPeriodOf(null), 600_000);
});


test('/tokens with JWTs: plants:admin creates tokens, a JWT without it is 403 40301, a JWT user manages its own opaque tokens', async (t) => {
  const key = await signingKey('RS256', 'main');
  const provider = await TestProvider.start(t, [key]);
  const { app, token } = await jwtApp(t, provider);
  const admin = await sign(provider, { sub: 'root', scope: 'plants:admin' }, { key });
  const made = await app.inject({
    method: 'POST', url: '/tokens', headers: bearer(admin), payload: { user: 'alice', scopes: ['plants:read'] },
  });
  assert.equal(made.statusCode, 201);
  const secret = made.json().secret as string;
  assert.equal((await list(app, secret)).statusCode, 200);

  const alice = await sign(provider, { sub: 'alice', scope: 'plants:read plants:write' }, { key });
  const refused = await app.inject({ method: 'POST', url: '/tokens', headers: bearer(alice), payload: { user: 'alice' } });
  assert.equal(refused.statusCode, 403);
  assert.equal(errorBody(refused).error, 40301);

  // The JWT user alice sees and revokes alice's opaque tokens, and no one else's.
  await token('bob');
  const own = await app.inject({ method: 'GET', url: '/tokens', headers: bearer(alice) });
  assert.equal(own.statusCode, 200);
  const ids = (own.json() as Array<{ id: number; user: string }>).map((r) => { assert.equal(r.user, 'alice'); return r.id; });
  assert.ok(ids.includes(made.json().id as number));
  const revoked = await app.inject({ method: 'DELETE', url: `/tokens/${made.json().id}`, headers: bearer(alice) });
  assert.equal(revoked.statusCode, 204);
});
