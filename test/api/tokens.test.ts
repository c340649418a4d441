import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { TOKEN_CACHE_TTL_MS } from '../../src/http/auth/index.js';
import { generateToken, hashToken, REVOCATION_WITHIN_MS } from '../../src/domain/token.js';
import { assertError, bearer, create, errorBody, list, testApp } from '../helpers/app.js';

const SECRET = /^pst_[A-Za-z0-9_-]{43}$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const RECORD_KEYS = ['admin', 'createdAt', 'id', 'scopes', 'status', 'user'];

function createToken(app: FastifyInstance, token: string, body: string | object): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: '/tokens',
    headers: { ...bearer(token), 'content-type': 'application/json' },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}
const listTokens = (app: FastifyInstance, token: string) => app.inject({ method: 'GET', url: '/tokens', headers: bearer(token) });
const revoke = (app: FastifyInstance, token: string, id: number | string) =>
  app.inject({ method: 'DELETE', url: `/tokens/${id}`, headers: bearer(token) });

test('POST /tokens with an admin token: 201, the record and a secret shown once that works at once for the scopes given', async (t) => {
  const { app, token, store } = await testApp(t);
  const root = await token('root', { admin: true });
  const res = await createToken(app, root, { user: 'alice', scopes: ['plants:read'], name: 'dashboard', expiresIn: '30d' });
  assert.equal(res.statusCode, 201, res.body);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  assert.equal(res.headers['cache-control'], 'no-store');
  const body = res.json();
  assert.deepEqual(Object.keys(body).sort(), [...RECORD_KEYS, 'expiresAt', 'name', 'secret'].sort());
  assert.match(body.secret, SECRET);
  assert.ok(Number.isInteger(body.id) && body.id > 0);
  assert.equal(body.user, 'alice');
  assert.deepEqual(body.scopes, ['plants:read']);
  assert.equal(body.admin, false);
  assert.equal(body.name, 'dashboard');
  assert.equal(body.status, 'active');
  assert.match(body.createdAt, ISO);
  assert.match(body.expiresAt, ISO);
  const lifetime = Date.parse(body.expiresAt) - Date.parse(body.createdAt);
  assert.ok(Math.abs(lifetime - 30 * 86_400_000) < 60_000, `expires 30 days after creation, not ${lifetime} ms`);

  // The secret is a token of that user with those scopes, at once; the store keeps its hash only.
  assert.equal((await list(app, body.secret)).statusCode, 200);
  assertError(await create(app, body.secret, { id: 1, name: 'a' }), 403, 40300, /plants:write/);
  const stored = await store.tokens.findTokenByHash(hashToken(body.secret));
  assert.equal(stored?.id, body.id);
  assert.equal(stored?.user, 'alice');

  // Defaults: every scope, not admin, no expiry, no name (absent, never null).
  const plain = await createToken(app, root, { user: 'bob' });
  assert.equal(plain.statusCode, 201, plain.body);
  assert.deepEqual(Object.keys(plain.json()).sort(), [...RECORD_KEYS, 'secret'].sort());
  assert.deepEqual(plain.json().scopes, ['plants:read', 'plants:write', 'webhooks:manage']);
  assert.notEqual(plain.json().secret, body.secret);
  assert.equal((await create(app, plain.json().secret, { id: 1, name: 'fern' })).statusCode, 200);

  // The longest lifetime the form allows is stored and read back exactly on either backend.
  const longest = await createToken(app, root, { user: 'bob', expiresIn: '999999d' });
  assert.equal(longest.statusCode, 201, longest.body);
  assert.equal(Date.parse(longest.json().expiresAt) - Date.parse(longest.json().createdAt), 999_999 * 86_400_000);
  assert.equal((await listTokens(app, root)).json().find((r: { id: number }) => r.id === longest.json().id).expiresAt, longest.json().expiresAt);

  // A zero lifetime, with any unit or none, is the one duration grammar's zero: a token expired from the
  // start, which its own request is refused with (a client trying its handling of an expired token).
  for (const expiresIn of ['0', '0s', '0m', '0h', '0d']) {
    const expired = await createToken(app, root, { user: 'bob', expiresIn });
    assert.equal(expired.statusCode, 201, `${expiresIn}: ${expired.body}`);
    assert.equal(expired.json().expiresAt, expired.json().createdAt, expiresIn);
    assert.equal(expired.json().status, 'expired', expiresIn);
    assertError(await list(app, expired.json().secret), 401, 40101);
  }

  // An admin makes admin tokens too (it is the operator); the new one makes tokens in turn.
  const admin = await createToken(app, root, { user: 'ops', admin: true, scopes: ['plants:read', 'plants:read'] });
  assert.equal(admin.statusCode, 201, admin.body);
  assert.equal(admin.json().admin, true);
  assert.deepEqual(admin.json().scopes, ['plants:read'], 'a repeated scope counts once');
  assert.equal((await createToken(app, admin.json().secret, { user: 'carol' })).statusCode, 201);
  // The user is the one of `token create --user`: its plants are the ones bob's token created.
  const bobAgain = await createToken(app, root, { user: 'bob', scopes: ['plants:read'] });
  assert.deepEqual((await list(app, bobAgain.json().secret)).json(), [{ name: 'fern' }]);
});

test('POST /tokens refuses every invalid field with 400 (40007), naming it; nothing is created', async (t) => {
  const { app, token, store } = await testApp(t);
  const root = await token('root', { admin: true });
  const cases: Array<[string | object, RegExp]> = [
    [{}, /user/],
    [{ user: '' }, /user must not be empty/],
    [{ user: 'al\u0007ice' }, /control characters/],
    [{ user: ' alice' }, /whitespace/],
    [{ user: 'x'.repeat(129) }, /user must NOT have more than 128 characters/],
    [{ user: 7 }, /user/],
    [{ user: 'alice', scopes: ['plants:grow'] }, /scopes\.0 must be one of plants:read, plants:write, webhooks:manage$/],
    [{ user: 'alice', scopes: ['plants:admin'] }, /scopes/],
    [{ user: 'alice', scopes: [] }, /scopes/],
    [{ user: 'alice', scopes: 'plants:read' }, /scopes/],
    [{ user: 'alice', admin: 'yes' }, /admin/],
    [{ user: 'alice', expiresIn: '30' }, /expiresIn must look like 30d, 12h, 15m or 90s/],
    [{ user: 'alice', expiresIn: '00d' }, /expiresIn/],
    [{ user: 'alice', expiresIn: '01h' }, /expiresIn/],
    [{ user: 'alice', expiresIn: '1w' }, /expiresIn/],
    [{ user: 'alice', expiresIn: 3600 }, /expiresIn/],
    [{ user: 'alice', expiresIn: '-5m' }, /expiresIn/],
    [{ user: 'alice', name: '' }, /name must not be empty/],
    [{ user: 'alice', name: 'x'.repeat(129) }, /name must NOT have more than 128 characters/],
    [{ user: 'alice', name: 'bad\nname' }, /token name must not contain control characters/],
    [{ user: 'alice', name: 5 }, /name/],
    [{ user: 'alice', scope: ['plants:read'] }, /unknown field "scope"/],
    ['[]', /body/],
    ['"alice"', /body/],
  ];
  for (const [body, message] of cases) {
    const res = await createToken(app, root, body);
    assertError(res, 400, 40007, message);
    assert.match(errorBody(res).message, /^The request body is not a valid token request/, JSON.stringify(body));
  }
  assertError(await createToken(app, root, '{"user":'), 400, 40001);
  assert.equal((await store.tokens.listTokens()).length, 1, 'only the admin token exists');
});

/**
 * Characters Unicode's identifier guidance keeps out of names: bidirectional embeddings, overrides,
 * isolates and marks; zero-width and other invisible format characters; line and paragraph separators;
 * a C1 control. Each would make a name display as another (U+202E shows x\u202Ey as y\u202Ex).
 */
const INVISIBLE = [
  '\u202A', '\u202B', '\u202C', '\u202D', '\u202E', '\u2066', '\u2067', '\u2068', '\u2069', '\u200E', '\u200F',
  '\u200B', '\u200C', '\u200D', '\u2060', '\uFEFF', '\u00AD', '\u{E0041}', '\u2028', '\u2029', '\u0085',
];
const codePoint = (c: string) => `U+${(c.codePointAt(0) as number).toString(16).toUpperCase().padStart(4, '0')}`;

test('POST /tokens refuses a user or token name holding a bidirectional control, an invisible format character or a line separator (400 40007, naming it); ordinary names with spaces or emoji are fine', async (t) => {
  const { app, token, store } = await testApp(t);
  const root = await token('root', { admin: true });
  for (const c of INVISIBLE) {
    for (const [field, body] of [['user name', { user: `x${c}y` }], ['token name', { user: 'alice', name: `laptop${c}` }]] as const) {
      const res = await createToken(app, root, body);
      assertError(res, 400, 40007, new RegExp(`${field} must not contain control characters, invisible format characters .*\\(found ${codePoint(c).replace('+', '\\+')}\\)$`));
    }
  }
  assert.equal((await store.tokens.listTokens()).length, 1, 'nothing was created');
  // A joiner where names need it (UAX #31): a Persian name with U+200C, a Devanagari conjunct with U+200D.
  for (const user of ['Ada Lovelace', 'José', '\u{1F335} cactus', '\u5C71\u7530', '\u0639\u0644\u06CC\u200C\u0631\u0636\u0627', '\u0915\u094D\u200D\u0937']) {
    assert.equal((await createToken(app, root, { user })).statusCode, 201, user);
  }
});

test('a token stored with a user name the rule now refuses is refused 401 (40101) saying why, and counts as a failed authentication', async (t) => {
  const { app, store } = await testApp(t, { authFailureLimit: { limit: 1, windowMs: 3_600_000 } });
  const secret = generateToken();
  // As a store written before the rule holds it: straight into the store, past issueToken's check.
  await store.tokens.createToken({ hash: hashToken(secret), user: 'x\u202Ey', scopes: ['plants:read'], admin: false, name: null, expiresAt: null });
  const res = await list(app, secret);
  assertError(res, 401, 40101, /^The bearer token is invalid: the token user name holds characters no longer accepted \(control, format or bidirectional\); ask for a new token$/);
  assert.match(String(res.headers['www-authenticate']), /error="invalid_token", error_description="the token user name holds characters no longer accepted/);
  assert.equal((await list(app, secret)).statusCode, 429, 'the second refusal is over AUTH_FAILURE_LIMIT (1)');
});

test('POST /tokens: 401 without a valid token, 403 (40301) for a token that is not admin, before the body is looked at', async (t) => {
  const { app, token, store } = await testApp(t);
  const alice = await token('alice');
  const missing = await app.inject({ method: 'POST', url: '/tokens', headers: { 'content-type': 'application/json' }, payload: '{"user":"x"}' });
  assertError(missing, 401, 40100);
  assert.equal(missing.headers['www-authenticate'], 'Bearer realm="plantstore"');
  assertError(await createToken(app, 'pst_nope', { user: 'x' }), 401, 40101);
  for (const body of [{ user: 'alice' }, { user: 'mallory', admin: true }, '{"user":', { user: '' }]) {
    const res = await createToken(app, alice, body);
    assertError(res, 403, 40301, /admin token/);
    assert.equal(res.headers['www-authenticate'], 'Bearer realm="plantstore", error="insufficient_scope", scope="plants:admin"');
  }
  assert.equal((await store.tokens.listTokens()).length, 1, 'nothing was created');
});

test('GET /tokens: an admin sees every token, anyone else its own user\'s; never a secret nor a hash', async (t) => {
  const { app, token } = await testApp(t);
  const root = await token('root', { admin: true });
  const alice = await token('alice', { scopes: ['plants:read'] });
  const alice2 = await createToken(app, root, { user: 'alice', name: 'ci', expiresIn: '1h' });
  const bob = await token('bob');
  const secrets = [root, alice, alice2.json().secret, bob];

  const all = await listTokens(app, root);
  assert.equal(all.statusCode, 200, all.body);
  assert.deepEqual(all.json().map((r: { user: string }) => r.user), ['root', 'alice', 'alice', 'bob'], 'every user\'s, in creation order');
  const own = await listTokens(app, alice);
  assert.equal(own.statusCode, 200, own.body);
  assert.deepEqual(own.json().map((r: { user: string; name?: string }) => `${r.user}:${r.name ?? '-'}`), ['alice:-', 'alice:ci']);
  assert.deepEqual(own.json()[1], {
    id: alice2.json().id, user: 'alice', scopes: ['plants:read', 'plants:write', 'webhooks:manage'], admin: false, name: 'ci',
    createdAt: alice2.json().createdAt, expiresAt: alice2.json().expiresAt, status: 'active',
  });
  assert.deepEqual((await listTokens(app, bob)).json().map((r: { user: string }) => r.user), ['bob']);
  for (const res of [all, own]) {
    for (const record of res.json()) assert.deepEqual(Object.keys(record).filter((k) => !['name', 'expiresAt', 'revokedAt'].includes(k)).sort(), RECORD_KEYS);
    for (const secret of secrets) {
      assert.ok(!res.body.includes(secret), 'no secret');
      assert.ok(!res.body.includes(hashToken(secret)), 'no hash');
    }
  }
  assertError(await listTokens(app, 'pst_nope'), 401, 40101);
  assertError(await app.inject({ method: 'GET', url: '/tokens' }), 401, 40100);
});

test('DELETE /tokens/{id}: own 204, another user\'s 404, an admin any; the revoked token is refused within the bound', async (t) => {
  const { app, token, store } = await testApp(t);
  const root = await token('root', { admin: true });
  const alice = await token('alice', { scopes: ['plants:read'] });
  const aliceCi = (await createToken(app, root, { user: 'alice', name: 'ci' })).json();
  const bob = await token('bob');
  const [, aliceId, , bobId] = (await store.tokens.listTokens()).map((r) => r.id);
  assert.ok(aliceId !== undefined && bobId !== undefined);
  // Both tokens are in this app's token cache before they are revoked.
  assert.equal((await list(app, aliceCi.secret)).statusCode, 200);
  assert.equal((await list(app, bob)).statusCode, 200);

  assertError(await revoke(app, alice, bobId), 404, 40403, /no unrevoked token/);
  assert.equal((await list(app, bob)).statusCode, 200, 'bob\'s token still works');

  const revokedAt = Date.now();
  const own = await revoke(app, alice, aliceCi.id);
  assert.equal(own.statusCode, 204, own.body);
  assert.equal(own.body, '');
  assertError(await revoke(app, alice, aliceCi.id), 404, 40403, undefined);
  const listed = (await listTokens(app, alice)).json().find((r: { id: number }) => r.id === aliceCi.id);
  assert.equal(listed.status, 'revoked');
  assert.match(listed.revokedAt, ISO);

  assert.equal((await revoke(app, root, bobId)).statusCode, 204, 'an admin revokes any user\'s token');

  // Refused by this app within the documented bound, though both were cached (TOKEN_CACHE_TTL_MS).
  for (const secret of [aliceCi.secret, bob]) {
    let res = await list(app, secret);
    while (res.statusCode === 200 && Date.now() - revokedAt < REVOCATION_WITHIN_MS) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      res = await list(app, secret);
    }
    assertError(res, 401, 40101);
    assert.ok(Date.now() - revokedAt < REVOCATION_WITHIN_MS, `refused within ${REVOCATION_WITHIN_MS} ms (cache ${TOKEN_CACHE_TTL_MS} ms)`);
  }
  assert.equal((await list(app, alice)).statusCode, 200, 'the other token of the user still works');

  // A token may revoke itself; then it is refused like any other.
  assert.equal((await revoke(app, alice, aliceId)).statusCode, 204);
  assert.equal((await store.tokens.listTokens()).find((r) => r.id === aliceId)?.revokedAt instanceof Date, true);
});

test('DELETE /tokens/{id}: an unknown, malformed or out-of-range id is 404 (40403); an expired token can still be revoked', async (t) => {
  const { app, token, store } = await testApp(t);
  const root = await token('root', { admin: true });
  await token('old', { expiresInMs: 1 });
  await new Promise((resolve) => setTimeout(resolve, 5));
  const oldId = (await store.tokens.listTokens())[1]?.id;
  assert.equal((await listTokens(app, root)).json()[1].status, 'expired');
  for (const id of ['999', '0', '-1', '1.0', 'abc', '01', '99999999999999999999', '%20']) assertError(await revoke(app, root, id), 404, 40403);
  assert.equal((await revoke(app, root, String(oldId))).statusCode, 204);
  assert.equal((await listTokens(app, root)).json()[1].status, 'revoked', 'revoked wins over expired');
  assertError(await app.inject({ method: 'DELETE', url: '/tokens/1' }), 401, 40100);
  assertError(await app.inject({ method: 'PUT', url: '/tokens/1', headers: bearer(root) }), 405, 40500);
  assert.equal((await app.inject({ method: 'PATCH', url: '/tokens', headers: bearer(root) })).headers.allow, 'GET, HEAD, POST');
});

test('the store lists one user\'s tokens and revokes only the given user\'s, in one statement, on every handle', async (t) => {
  const { token, store, reopen } = await testApp(t);
  await token('alice');
  await token('bob');
  await token('alice', { scopes: ['plants:read'] });
  const other = await reopen();
  for (const handle of [store, other]) {
    assert.deepEqual((await handle.tokens.listTokens('alice')).map((r) => r.user), ['alice', 'alice']);
    assert.deepEqual((await handle.tokens.listTokens('nobody')), []);
    assert.deepEqual((await handle.tokens.listTokens()).map((r) => r.user), ['alice', 'bob', 'alice']);
  }
  const [a1, b1, a2] = (await store.tokens.listTokens()).map((r) => r.id);
  assert.ok(a1 !== undefined && b1 !== undefined && a2 !== undefined);
  assert.equal(await other.tokens.revokeToken(b1, 'alice'), false, 'not alice\'s');
  assert.equal((await store.tokens.listTokens('bob'))[0]?.revokedAt, null);
  assert.equal(await other.tokens.revokeToken(a2, 'alice'), true);
  assert.equal(await store.tokens.revokeToken(a2, 'alice'), false, 'already revoked');
  assert.equal(await store.tokens.revokeToken(a2), false, 'already revoked, whoever asks');
  assert.ok((await store.tokens.listTokens('alice'))[1]?.revokedAt instanceof Date);
  assert.equal((await store.tokens.listTokens('alice'))[0]?.revokedAt, null);
});

test('a token revoked over HTTP on one instance is refused by another instance on the same store within the bound', async (t) => {
  const first = await testApp(t);
  const second = await testApp(t, {}, first);
  const root = await first.token('root', { admin: true });
  const victim = (await createToken(first.app, root, { user: 'alice' })).json();
  assert.equal((await list(second.app, victim.secret)).statusCode, 200, 'cached by the second instance');
  const revokedAt = Date.now();
  assert.equal((await revoke(first.app, root, victim.id)).statusCode, 204);
  let res = await list(second.app, victim.secret);
  while (res.statusCode === 200 && Date.now() - revokedAt < REVOCATION_WITHIN_MS) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    res = await list(second.app, victim.secret);
  }
  assertError(res, 401, 40101);
  assert.ok(Date.now() - revokedAt < REVOCATION_WITHIN_MS, `refused within ${REVOCATION_WITHIN_MS} ms`);
});

test('a created token\'s secret and its hash never reach the log, nor the admin token that made it', async (t) => {
  const logs = new PassThrough();
  let logged = '';
  logs.on('data', (d) => (logged += d));
  const { app, token } = await testApp(t, { logStream: logs, accessLog: true });
  const root = await token('root', { admin: true });
  const created = (await createToken(app, root, { user: 'alice', name: 'ci' })).json();
  assert.equal((await listTokens(app, created.secret)).statusCode, 200);
  assert.equal((await revoke(app, created.secret, created.id)).statusCode, 204);
  assert.match(logged, /"url":"\/tokens"/, 'the requests were logged');
  for (const secret of [created.secret, root]) {
    assert.ok(!logged.includes(secret), 'no secret in the log');
    assert.ok(!logged.includes(hashToken(secret)), 'no hash in the log');
  }
});
