import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { AttemptResult, ClaimedDelivery } from '../../src/domain/webhook.js';
import type { Store } from '../../src/store/store.js';
import { assertError, bearer, create, errorBody, testApp, type TestAppOptions } from '../helpers/app.js';

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const ENDPOINT_ID = /^ep_[A-Za-z0-9_-]{22}$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

function register(app: FastifyInstance, token: string, body: string | object): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: '/webhooks',
    headers: { ...bearer(token), 'content-type': 'application/json' },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const listWebhooks = (app: FastifyInstance, token: string) => app.inject({ method: 'GET', url: '/webhooks', headers: bearer(token) });
const remove = (app: FastifyInstance, token: string, id: string) =>
  app.inject({ method: 'DELETE', url: `/webhooks/${id}`, headers: bearer(token) });
const deliveries = (app: FastifyInstance, token: string, id: string, query = '') =>
  app.inject({ method: 'GET', url: `/webhooks/${id}/deliveries${query}`, headers: bearer(token) });

/** An app whose webhooks may point at loopback (as local development and tests run them) unless told otherwise. */
async function webhookApp(t: TestContext, options: TestAppOptions = {}) {
  return testApp(t, { webhookAllowPrivate: true, ...options });
}

test('POST /webhooks registers an endpoint: 201 with an opaque id, the url, the description and a secret shown once', async (t) => {
  const { app, token } = await webhookApp(t);
  const alice = await token('alice');
  const res = await register(app, alice, { url: 'https://hooks.example/plants', description: 'garden sync 🌱' });
  assert.equal(res.statusCode, 201, res.body);
  assert.match(String(res.headers['content-type']), /^application\/json/);
  assert.equal(res.headers['cache-control'], 'no-store');
  const body = res.json();
  assert.deepEqual(Object.keys(body).sort(), ['createdAt', 'description', 'id', 'secret', 'url']);
  assert.match(body.id, ENDPOINT_ID);
  assert.match(body.secret, SECRET);
  assert.ok(Buffer.from(body.secret.slice('whsec_'.length), 'base64').length >= 24);
  assert.equal(body.url, 'https://hooks.example/plants');
  assert.equal(body.description, 'garden sync 🌱');
  assert.match(body.createdAt, ISO);
  assert.ok(Math.abs(Date.parse(body.createdAt) - Date.now()) < 60_000);

  // Without a description, none is shown (never null); unknown fields are ignored, as in a NewPlant.
  const plain = await register(app, alice, { url: 'http://hooks.example/other', extra: 1 });
  assert.equal(plain.statusCode, 201, plain.body);
  assert.deepEqual(Object.keys(plain.json()).sort(), ['createdAt', 'id', 'secret', 'url']);
  assert.notEqual(plain.json().secret, body.secret);
  assert.notEqual(plain.json().id, body.id);
});

test('GET /webhooks lists the caller\'s endpoints in order, each with its user, never a secret', async (t) => {
  const { app, token } = await webhookApp(t);
  const alice = await token('alice');
  const bob = await token('bob');
  const a1 = (await register(app, alice, { url: 'https://a.example/1', description: 'one' })).json();
  const b1 = (await register(app, bob, { url: 'https://b.example/1' })).json();
  const a2 = (await register(app, alice, { url: 'https://a.example/2' })).json();

  const res = await listWebhooks(app, alice);
  assert.equal(res.statusCode, 200);
  for (const secret of [a1.secret, a2.secret, b1.secret]) assert.ok(!res.body.includes(secret), 'no secret in GET /webhooks');
  assert.ok(!res.body.includes('whsec_'));
  assert.deepEqual(res.json(), [
    { id: a1.id, user: 'alice', allUsers: false, url: 'https://a.example/1', description: 'one', createdAt: a1.createdAt },
    { id: a2.id, user: 'alice', allUsers: false, url: 'https://a.example/2', createdAt: a2.createdAt },
  ]);
  assert.deepEqual((await listWebhooks(app, bob)).json().map((e: { id: string }) => e.id), [b1.id]);
  assert.deepEqual((await listWebhooks(app, await token('carol'))).json(), []);
});

test('an admin token registers an endpoint for every user\'s plants and lists every user\'s endpoints', async (t) => {
  const { app, token } = await webhookApp(t);
  const alice = await token('alice');
  const root = await token('root', { admin: true });
  const mine = (await register(app, alice, { url: 'https://a.example/' })).json();
  const all = (await register(app, root, { url: 'https://ops.example/' })).json();
  const listed = (await listWebhooks(app, root)).json();
  assert.deepEqual(
    listed.map((e: { id: string; user: string; allUsers: boolean }) => [e.id, e.user, e.allUsers]),
    [[mine.id, 'alice', false], [all.id, 'root', true]],
  );
  assert.ok(!JSON.stringify(listed).includes('whsec_'));
  // alice does not see the admin's endpoint, though it receives her plants.
  assert.deepEqual((await listWebhooks(app, alice)).json().map((e: { id: string }) => e.id), [mine.id]);
});

test('DELETE /webhooks/{id}: 204 for the caller\'s own; another user\'s, a removed one or an unknown id is 404 40402', async (t) => {
  const { app, token } = await webhookApp(t);
  const alice = await token('alice');
  const bob = await token('bob');
  const a = (await register(app, alice, { url: 'https://a.example/' })).json();
  const b = (await register(app, bob, { url: 'https://b.example/' })).json();

  assertError(await remove(app, bob, a.id), 404, 40402, /no webhook endpoint with this id/);
  assert.equal((await listWebhooks(app, alice)).json().length, 1, 'bob could not remove alice\'s endpoint');
  for (const id of ['ep_AAAAAAAAAAAAAAAAAAAAAA', 'nope', '%00', 'ep_%F0%9F%8C%B1', 'x'.repeat(90)]) {
    assertError(await remove(app, alice, id), 404, 40402);
  }

  const removed = await remove(app, alice, a.id);
  assert.equal(removed.statusCode, 204);
  assert.equal(removed.body, '');
  assert.deepEqual((await listWebhooks(app, alice)).json(), []);
  assertError(await remove(app, alice, a.id), 404, 40402);
  assert.equal((await listWebhooks(app, bob)).json().length, 1);
  // An empty body with a JSON content type is accepted on DELETE, as for plants.
  const withHeader = await app.inject({
    method: 'DELETE', url: `/webhooks/${b.id}`, headers: { ...bearer(bob), 'content-type': 'application/json' },
  });
  assert.equal(withHeader.statusCode, 204);
});

test('an admin token removes and reads any user\'s endpoint (it lists them all)', async (t) => {
  const { app, token } = await webhookApp(t);
  const alice = await token('alice');
  const root = await token('root', { admin: true });
  const a = (await register(app, alice, { url: 'https://a.example/' })).json();
  const read = await deliveries(app, root, a.id);
  assert.equal(read.statusCode, 200, read.body);
  assert.deepEqual(read.json(), []);
  assert.equal((await remove(app, root, a.id)).statusCode, 204);
  assert.deepEqual((await listWebhooks(app, alice)).json(), []);
});

test('every /webhooks route needs a token (401) with the webhooks:manage scope (403)', async (t) => {
  const { app, token } = await webhookApp(t);
  const full = await token('alice');
  const id = (await register(app, full, { url: 'https://a.example/' })).json().id;
  // A token made before the scope existed keeps its scopes: plants only.
  const plantsOnly = await token('alice', { scopes: ['plants:read', 'plants:write'] });
  const admin = await token('root', { admin: true, scopes: ['plants:read', 'plants:write'] });
  const calls = [
    (t: string | undefined) => app.inject({
      method: 'POST', url: '/webhooks', payload: '{"url":"https://a.example/"}',
      headers: { 'content-type': 'application/json', ...(t ? bearer(t) : {}) },
    }),
    (t: string | undefined) => app.inject({ method: 'GET', url: '/webhooks', headers: t ? bearer(t) : {} }),
    (t: string | undefined) => app.inject({ method: 'DELETE', url: `/webhooks/${id}`, headers: t ? bearer(t) : {} }),
    (t: string | undefined) => app.inject({ method: 'GET', url: `/webhooks/${id}/deliveries`, headers: t ? bearer(t) : {} }),
  ];
  for (const call of calls) {
    const anonymous = await call(undefined);
    assertError(anonymous, 401, 40100);
    assert.equal(anonymous.headers['www-authenticate'], 'Bearer realm="plantstore"');
    assertError(await call('pst_unknown'), 401, 40101);
    for (const weak of [plantsOnly, admin]) {
      const res = await call(weak);
      assertError(res, 403, 40300, /webhooks:manage/);
      assert.match(String(res.headers['www-authenticate']), /error="insufficient_scope", scope="webhooks:manage"/);
    }
  }
  // The plants-only token still does what it did.
  assert.equal((await create(app, plantsOnly, { id: 1, name: 'Fern' })).statusCode, 200);
  // A token with webhooks:manage alone manages webhooks and nothing else.
  const hooksOnly = await token('alice', { scopes: ['webhooks:manage'] });
  assert.equal((await listWebhooks(app, hooksOnly)).statusCode, 200);
  assertError(await app.inject({ method: 'GET', url: '/plants', headers: bearer(hooksOnly) }), 403, 40300, /plants:read/);
  // Nothing above removed the endpoint.
  assert.equal((await listWebhooks(app, full)).json().length, 1);
});

test('a body that is not a valid endpoint is 400 40005, saying what is wrong; nothing is stored', async (t) => {
  const { app, token } = await webhookApp(t);
  const alice = await token('alice');
  const cases: Array<[string | object, RegExp]> = [
    [{}, /url/],
    [[], /body must be object/],
    ['"https://a.example/"', /body must be object/],
    [{ url: 5 }, /url must be string/],
    [{ url: null }, /url must be string/],
    [{ url: '' }, /url must not be empty/],
    [{ url: 'not a url' }, /url must be an absolute http: or https: URL without spaces, control characters or unpaired surrogates/],
    [{ url: '/relative/path' }, /url must be an absolute http: or https: URL/],
    [{ url: 'ftp://files.example/' }, /url must be an absolute http: or https: URL without spaces, control characters or unpaired surrogates/],
    [{ url: 'javascript:alert(1)' }, /url must be an absolute http: or https: URL without spaces, control characters or unpaired surrogates/],
    [{ url: 'file:///etc/passwd' }, /url must be an absolute http: or https: URL without spaces, control characters or unpaired surrogates/],
    [{ url: 'https://user:pass@hooks.example/' }, /url must not contain credentials/],
    [{ url: 'https://user@hooks.example/' }, /url must not contain credentials/],
    [{ url: `https://hooks.example/${'a'.repeat(2049 - 'https://hooks.example/'.length)}` }, /url must NOT have more than 2048 characters/],
    [{ url: 'https://hooks.example/\npath' }, /url must be an absolute http: or https: URL without spaces, control characters or unpaired surrogates/],
    [{ url: ' https://hooks.example/' }, /url must be an absolute http: or https: URL without spaces, control characters or unpaired surrogates/],
    [{ url: 'https://hooks.example/\u0000' }, /url must be an absolute http: or https: URL without spaces, control characters or unpaired surrogates/],
    ['{"url":"https://hooks.example/\\ud800"}', /url must be an absolute http: or https: URL without spaces, control characters or unpaired surrogates/],
    [{ url: 'https://' }, /url must be an absolute http: or https: URL$/],
    [{ url: 'http:/' }, /url must name a host|url must be an absolute/],
    [{ url: 'https://hooks.example/', description: 5 }, /description must be string/],
    [{ url: 'https://hooks.example/', description: null }, /description must be string/],
    [{ url: 'https://hooks.example/', description: 'x'.repeat(501) }, /description must NOT have more than 500 characters/],
    [{ url: 'https://hooks.example/', description: 'a\u0000b' }, /description must not contain U\+0000 or unpaired surrogates/],
    ['{"url":"https://hooks.example/","description":"\\ud800"}', /description must not contain U\+0000 or unpaired surrogates/],
  ];
  for (const [body, message] of cases) {
    const res = await register(app, alice, body);
    assertError(res, 400, 40005, message);
    assert.match(errorBody(res).message, /^The request body is not a valid webhook endpoint/, JSON.stringify(body));
  }
  // Exactly at the limits is fine: 2048 characters of URL, 500 of description (emoji count as one).
  const longest = `https://hooks.example/${'a'.repeat(2048 - 'https://hooks.example/'.length)}`;
  const ok = await register(app, alice, { url: longest, description: '🌱'.repeat(500) });
  assert.equal(ok.statusCode, 201, ok.body);
  assert.equal(ok.json().url, longest);
  assert.equal((await listWebhooks(app, alice)).json().length, 1);
  // Malformed JSON is still 40001, and the plant routes keep their own row.
  assertError(await register(app, alice, '{"url":'), 400, 40001);
  assertError(await create(app, alice, { id: 1 }), 400, 40002);
});

const PRIVATE_URLS = [
  'http://127.0.0.1:8080/hook',
  'http://[::1]/hook',
  'http://10.1.2.3/hook',
  'http://169.254.169.254/latest/meta-data/',
  'http://0x7f.1/hook', // 127.0.0.1, as the URL parser reads it
  'http://2130706433/hook', // 127.0.0.1 too
  'http://192.168.1.1/',
  'http://172.16.0.1/',
  'http://[fe80::1]/',
  'http://[::ffff:127.0.0.1]/',
  'http://0.0.0.0/',
  'http://224.0.0.1/',
  'http://localhost:3000/hook',
];

test('private destinations are refused with 400 40006 unless WEBHOOK_ALLOW_PRIVATE is on', async (t) => {
  const strict = await testApp(t, { webhookAllowPrivate: false });
  const alice = await strict.token('alice');
  for (const url of PRIVATE_URLS) assertError(await register(strict.app, alice, { url }), 400, 40006, /WEBHOOK_ALLOW_PRIVATE/);
  assert.deepEqual((await listWebhooks(strict.app, alice)).json(), []);
  // Public addresses and names pass (a name is checked again at every delivery, after resolving it).
  for (const url of ['https://93.184.215.14/hook', 'https://hooks.example/', 'http://[2606:4700::1111]/']) {
    assert.equal((await register(strict.app, alice, { url })).statusCode, 201, url);
  }
  // A URL that is malformed and private is malformed first.
  assertError(await register(strict.app, alice, { url: 'http://user:pw@127.0.0.1/' }), 400, 40005);

  const open = await webhookApp(t, { webhookMaxPerUser: PRIVATE_URLS.length });
  const bob = await open.token('bob');
  for (const url of PRIVATE_URLS) assert.equal((await register(open.app, bob, { url })).statusCode, 201, url);
});

/** Spellings of internal addresses that a check of the plain forms misses; each is refused at registration. */
const DISGUISED_URLS = [
  'http://localhost./hook', // a fully qualified name: the trailing dot is the DNS root
  'http://LOCALHOST../hook',
  'http://foo.localhost./hook',
  'http://127.0.0.1../hook', // a name to the URL parser; a resolver may read it as the address
  'http://[::127.0.0.1]/hook', // IPv4-compatible, ::7f00:1
  'http://[::ffff:0:7f00:1]/hook', // IPv4-translated 127.0.0.1
  'http://[0:0:0:0:0:ffff:7f00:1]/hook', // IPv4-mapped, in full
  'http://[2002:7f00:1::]/hook', // 6to4 of 127.0.0.1
  'http://[2002:a9fe:a9fe::1]/hook', // 6to4 of 169.254.169.254
  'http://[64:ff9b::10.0.0.1]/hook', // NAT64 of 10.0.0.1
  'http://[64:ff9b:1::1]/hook', // local-use NAT64
  'http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook', // Teredo, client 127.0.0.1
];

test('loopback and private addresses are refused at registration in every spelling: trailing dots, IPv4 inside IPv6', async (t) => {
  const { app, token } = await testApp(t, { webhookAllowPrivate: false });
  const alice = await token('alice');
  for (const url of DISGUISED_URLS) assertError(await register(app, alice, { url }), 400, 40006, /WEBHOOK_ALLOW_PRIVATE/);
  assert.deepEqual((await listWebhooks(app, alice)).json(), []);
  // The same forms around a public IPv4 address, and public names with a trailing dot, are accepted.
  const publicUrls = [
    'https://[64:ff9b::93.184.215.14]/hook', 'https://[2002:5db8:d70e::1]/hook', 'https://[::ffff:93.184.215.14]/hook',
    'https://hooks.example./hook', 'https://localhost.example/hook',
  ];
  for (const url of publicUrls) assert.equal((await register(app, alice, { url })).statusCode, 201, url);
});

test('WEBHOOK_MAX_PER_USER endpoints per user, then 409 40901; per user, and freed by a removal', async (t) => {
  const { app, token } = await webhookApp(t, { webhookMaxPerUser: 2 });
  const alice = await token('alice');
  const aliceToo = await token('alice');
  const first = (await register(app, alice, { url: 'https://a.example/1' })).json();
  assert.equal((await register(app, aliceToo, { url: 'https://a.example/2' })).statusCode, 201);
  const over = await register(app, alice, { url: 'https://a.example/3' });
  assertError(over, 409, 40901, /the limit is 2/);
  assert.equal((await listWebhooks(app, alice)).json().length, 2);
  assert.equal((await register(app, await token('bob'), { url: 'https://b.example/' })).statusCode, 201, 'another user has a limit of their own');
  assert.equal((await remove(app, alice, first.id)).statusCode, 204);
  assert.equal((await register(app, alice, { url: 'https://a.example/3' })).statusCode, 201);
});

test('the default limit is 10 endpoints per user', async (t) => {
  const { app, token } = await webhookApp(t);
  const alice = await token('alice');
  for (let i = 0; i < 10; i++) assert.equal((await register(app, alice, { url: `https://a.example/${i}` })).statusCode, 201);
  assertError(await register(app, alice, { url: 'https://a.example/10' }), 409, 40901);
});

/** Queues events by creating plants, then claims them and records one attempt each, as the dispatcher would. */
async function attempt(store: Store, instance: string, outcome: (d: ClaimedDelivery) => Omit<AttemptResult, 'delivery' | 'at'>, at: Date) {
  const claimed = await store.outbox.claimDeliveries({ instance, limit: 100, perEndpoint: 100, busy: [], leaseMs: 60_000 });
  await store.outbox.recordAttempts(instance, claimed.map((delivery) => ({ delivery, at, ...outcome(delivery) })));
  return claimed;
}

test('GET /webhooks/{id}/deliveries: the latest attempts, newest first, with exact plant ids and each state', async (t) => {
  const { app, token, store } = await webhookApp(t);
  const alice = await token('alice');
  const bob = await token('bob');
  const endpoint = (await register(app, alice, { url: 'https://a.example/' })).json();
  const other = (await register(app, bob, { url: 'https://b.example/' })).json();
  assert.deepEqual((await deliveries(app, alice, endpoint.id)).json(), [], 'no attempt yet');

  const big = '9223372036854775807';
  const negative = '-9007199254740993';
  assert.equal((await create(app, alice, `{"id":${big},"name":"Big"}`)).statusCode, 200);
  assert.equal((await create(app, alice, `{"id":${negative},"name":"Small","tag":"x"}`)).statusCode, 200);
  assert.equal((await create(app, bob, '{"id":7,"name":"Bob\'s"}')).statusCode, 200);

  const t1 = new Date(Date.now() - 3000);
  // First attempt: alice's first event fails with a 500 and is retried; her second is delivered; bob's fails for good.
  const claimed = await attempt(store, 'i1', (d) => {
    if (d.endpointId === other.id) return { outcome: 'failed', status: null, error: 'connection refused', retryInMs: null };
    return d.plantId === BigInt(big)
      ? { outcome: 'retry', status: 500, error: 'HTTP 500', retryInMs: 50 }
      : { outcome: 'delivered', status: 200, error: null, retryInMs: null };
  }, t1);
  assert.equal(claimed.length, 3);
  const eventOf = (plantId: string) => claimed.find((d) => d.plantId === BigInt(plantId))?.eventId;

  const res = await deliveries(app, alice, endpoint.id);
  assert.equal(res.statusCode, 200, res.body);
  // The exact digits of each int64, as JSON numbers (a double would print 9223372036854775808).
  assert.ok(res.body.includes(`"plantId":${big}`), res.body);
  assert.ok(res.body.includes(`"plantId":${negative}`), res.body);
  const rows = JSON.parse(res.body.replace(/"plantId":(-?\d+)/g, '"plantId":"$1"')) as Array<Record<string, unknown>>;
  assert.equal(rows.length, 2);
  const retried = rows.find((r) => r.plantId === big);
  const delivered = rows.find((r) => r.plantId === negative);
  assert.deepEqual(retried && Object.keys(retried).sort(), ['at', 'attempt', 'error', 'eventId', 'nextAttemptAt', 'plantId', 'state', 'status']);
  assert.equal(retried?.eventId, eventOf(big));
  assert.equal(retried?.attempt, 1);
  assert.equal(retried?.status, 500);
  assert.equal(retried?.error, 'HTTP 500');
  assert.equal(retried?.state, 'pending');
  assert.equal(retried?.at, t1.toISOString());
  assert.match(String(retried?.nextAttemptAt), ISO);
  assert.deepEqual(delivered, {
    eventId: eventOf(negative), plantId: negative, attempt: 1, status: 200, at: t1.toISOString(), state: 'delivered',
  });
  // Bob's endpoint shows its failure with a null status; alice cannot read it (404), nor bob hers.
  const bobs = (await deliveries(app, bob, other.id)).json();
  assert.deepEqual(bobs, [{ eventId: eventOf('7'), plantId: 7, attempt: 1, status: null, error: 'connection refused', at: t1.toISOString(), state: 'failed' }]);
  assertError(await deliveries(app, alice, other.id), 404, 40402);
  assertError(await deliveries(app, bob, endpoint.id), 404, 40402);

  // The retry is due 50 ms later; then it is delivered: the newest attempt comes first.
  await new Promise((resolve) => setTimeout(resolve, 100));
  const t2 = new Date();
  const second = await attempt(store, 'i1', () => ({ outcome: 'delivered', status: 204, error: null, retryInMs: null }), t2);
  assert.equal(second.length, 1);
  assert.equal(second[0]?.attempt, 2);
  const after = (await deliveries(app, alice, endpoint.id)).body.replace(/"plantId":(-?\d+)/g, '"plantId":"$1"');
  const latest = JSON.parse(after) as Array<Record<string, unknown>>;
  assert.equal(latest.length, 3);
  assert.deepEqual(latest[0], { eventId: eventOf(big), plantId: big, attempt: 2, status: 204, at: t2.toISOString(), state: 'delivered' });
  // limit=N: the N newest.
  const one = JSON.parse((await deliveries(app, alice, endpoint.id, '?limit=1')).body.replace(/"plantId":(-?\d+)/g, '"plantId":"$1"'));
  assert.deepEqual(one, [latest[0]]);
  assert.equal((await deliveries(app, alice, endpoint.id, '?limit=1000')).json().length, 3);
});

test('deliveries: limit must be 1 to 1000 in plain digits (400 40003); unknown endpoints are 404 40402', async (t) => {
  const { app, token } = await webhookApp(t);
  const alice = await token('alice');
  const { id } = (await register(app, alice, { url: 'https://a.example/' })).json();
  for (const query of ['?limit=0', '?limit=1001', '?limit=-1', '?limit=abc', '?limit=1.5', '?limit=', '?limit=0x10', '?limit=1e2', '?limit=%ZZ']) {
    assertError(await deliveries(app, alice, id, query), 400, 40003, /limit|%ZZ/);
  }
  for (const unknown of ['ep_AAAAAAAAAAAAAAAAAAAAAA', 'nope', '%00']) assertError(await deliveries(app, alice, unknown), 404, 40402);
  assert.equal((await deliveries(app, alice, id, '?limit=1000')).statusCode, 200);
});

test('a removed endpoint\'s deliveries are gone with it; other routes answer 405 with Allow', async (t) => {
  const { app, token, store } = await webhookApp(t);
  const alice = await token('alice');
  const { id } = (await register(app, alice, { url: 'https://a.example/' })).json();
  assert.equal((await create(app, alice, { id: 1, name: 'Fern' })).statusCode, 200);
  await attempt(store, 'i1', () => ({ outcome: 'retry', status: 503, error: 'HTTP 503', retryInMs: 60_000 }), new Date());
  assert.equal((await deliveries(app, alice, id)).json().length, 1);
  assert.equal((await remove(app, alice, id)).statusCode, 204);
  assertError(await deliveries(app, alice, id), 404, 40402);

  const put = await app.inject({ method: 'PUT', url: '/webhooks', headers: bearer(alice) });
  assertError(put, 405, 40500);
  assert.equal(put.headers.allow, 'GET, HEAD, POST');
  const get = await app.inject({ method: 'GET', url: `/webhooks/${id}`, headers: bearer(alice) });
  assertError(get, 405, 40500);
  assert.equal(get.headers.allow, 'DELETE, PATCH');
});
