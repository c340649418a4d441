import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { assertError, bearer, testApp, type TestAppOptions } from '../helpers/app.js';

// The operations on one webhook endpoint through the API (PATCH, resend, recover, rotate-secret, test): who
// may call them, what they answer, and every error row they add. Deliveries: webhooks-operations-delivery.test.ts.

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const UNKNOWN_EVENT = 'msg_000000000000aaaaaaaaaaaaaaaaaaaa';

function call(app: FastifyInstance, token: string | undefined, method: 'PATCH' | 'POST', url: string, body?: string | object) {
  return app.inject({
    method,
    url,
    headers: { ...(token ? bearer(token) : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
}

async function webhookApp(t: TestContext, options: TestAppOptions = {}) {
  const fixture = await testApp(t, { webhookAllowPrivate: true, ...options });
  const register = async (token: string, url = 'https://hooks.example/plants') => {
    const res = await call(fixture.app, token, 'POST', '/webhooks', { url });
    assert.equal(res.statusCode, 201, res.body);
    return res.json() as { id: string; secret: string };
  };
  return { ...fixture, register };
}

/** Every new operation on endpoint `id`, as a function of the token. */
function operations(app: FastifyInstance, id: string) {
  return {
    patch: (t?: string) => call(app, t, 'PATCH', `/webhooks/${id}`, { description: 'x' }),
    resend: (t?: string) => call(app, t, 'POST', `/webhooks/${id}/deliveries/${UNKNOWN_EVENT}/resend`),
    recover: (t?: string) => call(app, t, 'POST', `/webhooks/${id}/recover`, { since: '2020-01-01T00:00:00Z' }),
    rotate: (t?: string) => call(app, t, 'POST', `/webhooks/${id}/rotate-secret`, {}),
    test: (t?: string) => call(app, t, 'POST', `/webhooks/${id}/test`),
  };
}

test('PATCH /webhooks/{id} changes the URL and description, and answers the endpoint as listed', async (t) => {
  const { app, token, register } = await webhookApp(t);
  const alice = await token('alice');
  const { id } = await register(alice);
  const res = await call(app, alice, 'PATCH', `/webhooks/${id}`, { url: 'https://moved.example/hook', description: 'moved 🌱', extra: 1 });
  assert.equal(res.statusCode, 200, res.body);
  const body = res.json();
  assert.deepEqual({ ...body, createdAt: undefined }, {
    id, user: 'alice', allUsers: false, url: 'https://moved.example/hook', description: 'moved 🌱', createdAt: undefined,
  });
  assert.ok(!res.body.includes('whsec_'));
  const listed = (await app.inject({ method: 'GET', url: '/webhooks', headers: bearer(alice) })).json();
  assert.deepEqual(listed, [body]);
  // An empty change changes nothing.
  const none = await call(app, alice, 'PATCH', `/webhooks/${id}`, {});
  assert.deepEqual(none.json(), body);
});

test('PATCH enabled: false disables by hand ("disabled by <user>"); true enables again and clears both fields', async (t) => {
  const { app, token, register } = await webhookApp(t);
  const alice = await token('alice');
  const { id } = await register(alice);
  const off = await call(app, alice, 'PATCH', `/webhooks/${id}`, { enabled: false });
  assert.equal(off.statusCode, 200, off.body);
  assert.match(off.json().disabledAt, /^\d{4}-\d\d-\d\dT/);
  assert.equal(off.json().disabledReason, 'disabled by alice');
  const on = await call(app, alice, 'PATCH', `/webhooks/${id}`, { enabled: true });
  assert.equal(on.statusCode, 200, on.body);
  assert.deepEqual(Object.keys(on.json()).sort(), ['allUsers', 'createdAt', 'id', 'url', 'user']);
});

test('PATCH checks a new URL as registration does: 400 40005 for a bad one, 40006 for a private one unless allowed', async (t) => {
  const strict = await webhookApp(t, { webhookAllowPrivate: false });
  const alice = await strict.token('alice');
  const { id } = await strict.register(alice);
  for (const url of ['http://127.0.0.1:8080/hook', 'http://localhost./hook', 'http://[::ffff:10.0.0.1]/', 'http://169.254.169.254/latest/meta-data']) {
    assertError(await call(strict.app, alice, 'PATCH', `/webhooks/${id}`, { url }), 400, 40006);
  }
  for (const [url, why] of [['ftp://x.example/', /url must be an absolute http: or https: URL/], ['https://u:p@x.example/', /credentials/],
    ['https://exa mple.com/', /spaces/]] as const) {
    assertError(await call(strict.app, alice, 'PATCH', `/webhooks/${id}`, { url }), 400, 40005, why);
  }
  assertError(await call(strict.app, alice, 'PATCH', `/webhooks/${id}`, { enabled: 'yes' }), 400, 40005, /enabled/);
  assertError(await call(strict.app, alice, 'PATCH', `/webhooks/${id}`, { description: 'x'.repeat(501) }), 400, 40005, /description/);
  assertError(await call(strict.app, alice, 'PATCH', `/webhooks/${id}`, '[1]'), 400, 40005);
  // Nothing was changed by the refusals.
  const [listed] = (await strict.app.inject({ method: 'GET', url: '/webhooks', headers: bearer(alice) })).json();
  assert.equal(listed.url, 'https://hooks.example/plants');
  // With WEBHOOK_ALLOW_PRIVATE on, loopback is accepted (local development).
  const open = await webhookApp(t);
  const bob = await open.token('bob');
  const other = await open.register(bob);
  assert.equal((await call(open.app, bob, 'PATCH', `/webhooks/${other.id}`, { url: 'http://127.0.0.1:9/hook' })).statusCode, 200);
});

test('every new operation on another user\'s endpoint, or an unknown one, is 404 40402; an admin may act on any', async (t) => {
  const { app, token, register } = await webhookApp(t);
  const alice = await token('alice');
  const bob = await token('bob');
  const root = await token('root', { admin: true });
  const { id } = await register(alice);
  for (const [name, op] of Object.entries(operations(app, id))) {
    assertError(await op(bob), 404, 40402, undefined);
    void name;
  }
  for (const unknown of ['ep_AAAAAAAAAAAAAAAAAAAAAA', 'nope', 'ep_%00AAAAAAAAAAAAAAAAAAAAA']) {
    for (const op of Object.values(operations(app, unknown))) assertError(await op(alice), 404, 40402);
  }
  const admin = operations(app, id);
  assert.equal((await admin.patch(root)).statusCode, 200);
  assertError(await admin.resend(root), 404, 40404, /no event with this id/);
  assert.equal((await admin.recover(root)).statusCode, 202);
  assert.equal((await admin.test(root)).statusCode, 202);
  assert.equal((await admin.rotate(root)).statusCode, 200);
});

test('every new operation needs a token (401) with the webhooks:manage scope (403)', async (t) => {
  const { app, token, register } = await webhookApp(t);
  const alice = await token('alice');
  const plantsOnly = await token('alice', { scopes: ['plants:read', 'plants:write'] });
  const { id } = await register(alice);
  for (const op of Object.values(operations(app, id))) {
    assertError(await op(undefined), 401, 40100);
    assertError(await op('pst_unknown'), 401, 40101);
    assertError(await op(plantsOnly), 403, 40300, /webhooks:manage/);
  }
});

test('rotate-secret: a new secret once, the previous one signing for the overlap (24h by default, 0 for none, at most 7d)', async (t) => {
  const { app, token, register } = await webhookApp(t);
  const alice = await token('alice');
  const { id, secret } = await register(alice);
  const rotate = (body?: string | object) => call(app, alice, 'POST', `/webhooks/${id}/rotate-secret`, body);
  for (const [body, overlapMs] of [[undefined, 86_400_000], [{}, 86_400_000], [{ overlap: '2s' }, 2000], [{ overlap: '7d' }, 7 * 86_400_000],
    [{ overlap: '0' }, 0], [{ overlap: '0s' }, 0], [{ overlap: '0m' }, 0], [{ overlap: '0h' }, 0], [{ overlap: '0d' }, 0],
    [{ overlap: '604800s' }, 7 * 86_400_000], [{ overlap: '10080m' }, 7 * 86_400_000], [{ overlap: '168h' }, 7 * 86_400_000]] as const) {
    const before = Date.now();
    const res = await rotate(body);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.deepEqual(Object.keys(res.json()).sort(), ['previousSecretExpiresAt', 'secret']);
    assert.match(res.json().secret, SECRET);
    assert.notEqual(res.json().secret, secret);
    const expires = Date.parse(res.json().previousSecretExpiresAt);
    assert.ok(expires >= before + overlapMs - 1000 && expires <= Date.now() + overlapMs + 1000, `${JSON.stringify(body)}: ${res.body}`);
  }
  for (const overlap of ['8d', '169h', '10081m', '604801s', '999999s', '168h1m', '-1s', '1w', '', '00', '00s', '01s', '1.5h', 3600]) {
    assertError(await rotate({ overlap }), 400, 40008, /overlap/);
  }
  assertError(await rotate('{"overlap":'), 400, 40001);
  // Only a body left out stands for {}: a JSON null (or any non-object) is refused, as recover and PATCH refuse it.
  for (const body of ['null', '[]', '"x"', '0']) {
    assertError(await rotate(body), 400, 40008, /body must be object/);
    assertError(await call(app, alice, 'POST', `/webhooks/${id}/recover`, body), 400, 40008, /body must be object/);
    assertError(await call(app, alice, 'PATCH', `/webhooks/${id}`, body), 400, 40005, /body must be object/);
  }
});

test('resend: 404 40404 for an event the endpoint does not have; recover: since must be an RFC 3339 time (400 40008)', async (t) => {
  const { app, token, register } = await webhookApp(t);
  const alice = await token('alice');
  const { id } = await register(alice);
  for (const eventId of [UNKNOWN_EVENT, 'not-an-event', 'msg_%00']) {
    assertError(await call(app, alice, 'POST', `/webhooks/${id}/deliveries/${eventId}/resend`), 404, 40404);
  }
  for (const since of [
    'yesterday', '2025-01-31', '2025-01-31T09:00:00', '2025-02-30T00:00:00Z', '2025-13-01T00:00:00Z', 1700000000, '0000-00-00T00:00:00Z',
    '2025-00-10T00:00:00Z', '2025-01-00T00:00:00Z', '2025-04-31T00:00:00Z', '2025-02-29T00:00:00Z', '1900-02-29T00:00:00Z',
    '2025-01-01T24:00:00Z', '2025-01-01T23:60:00Z', '2016-12-31T23:59:60Z', '2025-01-01T00:00:00+24:00', '2025-01-01T00:00:00+01:60',
  ]) {
    assertError(await call(app, alice, 'POST', `/webhooks/${id}/recover`, { since }), 400, 40008, /since/);
  }
  assertError(await call(app, alice, 'POST', `/webhooks/${id}/recover`, {}), 400, 40008, /since/);
  for (const since of [
    '2025-01-31T09:00:00Z', '2025-01-31t09:00:00.123456z', '2025-01-31T09:00:00+05:30', '2024-02-29T00:00:00Z', '2000-02-29T23:59:59-23:59',
    '0000-01-01T00:00:00Z',
  ]) {
    const res = await call(app, alice, 'POST', `/webhooks/${id}/recover`, { since });
    assert.equal(res.statusCode, 202, `${since}: ${res.body}`);
    assert.deepEqual(res.json(), { queued: 0 });
  }
});

test('test, resend and recover on a disabled endpoint are 409 40902; rotate and PATCH still work', async (t) => {
  const { app, token, register } = await webhookApp(t);
  const alice = await token('alice');
  const { id } = await register(alice);
  const ops = operations(app, id);
  const sent = await ops.test(alice);
  assert.equal(sent.statusCode, 202, sent.body);
  assert.match(sent.json().eventId, /^msg_[0-9a-f]{32}$/);
  assert.equal((await call(app, alice, 'PATCH', `/webhooks/${id}`, { enabled: false })).statusCode, 200);
  assertError(await ops.test(alice), 409, 40902, /disabled/);
  assertError(await call(app, alice, 'POST', `/webhooks/${id}/deliveries/${sent.json().eventId}/resend`), 409, 40902);
  assertError(await ops.recover(alice), 409, 40902);
  assert.equal((await ops.rotate(alice)).statusCode, 200);
  assert.equal((await ops.patch(alice)).statusCode, 200);
  // The test event queued before is in the deliveries once attempted; resending it (enabled again) is accepted.
  assert.equal((await call(app, alice, 'PATCH', `/webhooks/${id}`, { enabled: true })).statusCode, 200);
  const resent = await call(app, alice, 'POST', `/webhooks/${id}/deliveries/${sent.json().eventId}/resend`);
  assert.equal(resent.statusCode, 202, resent.body);
  assert.deepEqual(resent.json(), { eventId: sent.json().eventId });
});
