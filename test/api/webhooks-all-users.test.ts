import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import type { ClaimedDelivery } from '../../src/domain/webhook.js';
import type { Store } from '../../src/store/store.js';
import { generateToken, hashToken } from '../../src/domain/token.js';
import { issueToken } from '../helpers/tokens.js';
import { BACKEND, bearer, create, testApp } from '../helpers/app.js';
import { AUDIENCE, sign, signingKey, TestProvider } from '../helpers/jwt-provider.js';
import { eventually } from '../helpers/eventually.js';

// An all-users endpoint belongs to one user but reaches every user's plants: it does so only while that
// user holds an active admin token. Tests drive the API and play the dispatcher's part on the store
// (claim what is due, record how it went), so that what was queued is seen exactly.

const register = async (app: FastifyInstance, token: string, url = 'https://ops.example/hook'): Promise<string> => {
  const res = await app.inject({
    method: 'POST', url: '/webhooks', headers: { ...bearer(token), 'content-type': 'application/json' }, payload: JSON.stringify({ url }),
  });
  assert.equal(res.statusCode, 201, res.body);
  return (res.json() as { id: string }).id;
};

/** GET /webhooks as [id, allUsers] pairs. */
const listed = async (app: FastifyInstance, token: string) => {
  const res = await app.inject({ method: 'GET', url: '/webhooks', headers: bearer(token) });
  assert.equal(res.statusCode, 200, res.body);
  return (res.json() as Array<{ id: string; allUsers: boolean }>).map((e) => [e.id, e.allUsers]);
};

/** GET /webhooks/{id}/deliveries as the plant ids shown, sorted. */
const historyOf = async (app: FastifyInstance, token: string, id: string) => {
  const res = await app.inject({ method: 'GET', url: `/webhooks/${id}/deliveries`, headers: bearer(token) });
  assert.equal(res.statusCode, 200, res.body);
  return (res.json() as Array<{ plantId: number }>).map((a) => a.plantId).sort((a, b) => a - b);
};

const revoke = async (app: FastifyInstance, token: string, id: number) => {
  const res = await app.inject({ method: 'DELETE', url: `/tokens/${id}`, headers: bearer(token) });
  assert.equal(res.statusCode, 204, res.body);
};

const plant = async (app: FastifyInstance, token: string, id: number) => {
  assert.equal((await create(app, token, { id, name: `plant ${id}` })).statusCode, 200);
};

/** What the dispatcher would claim now: every due event. */
const claimAll = (store: Store) => store.outbox.claimDeliveries({ instance: 'test', limit: 1000, perEndpoint: 1000, busy: [], leaseMs: 60_000 });

/** Records each claimed event as delivered, or as failed and due again at once. */
async function settle(store: Store, claimed: readonly ClaimedDelivery[], outcome: 'delivered' | 'retry'): Promise<void> {
  await store.outbox.recordAttempts('test', claimed.map((delivery) => ({
    delivery, outcome, status: outcome === 'delivered' ? 200 : 500, error: outcome === 'delivered' ? null : 'HTTP 500',
    at: new Date(), retryInMs: outcome === 'retry' ? 0 : null,
  })));
}

const plantIds = (claimed: readonly ClaimedDelivery[]) => claimed.map((d) => Number(d.plantId)).sort((a, b) => a - b);

test('an all-users endpoint gets other users\' plants only while its user holds an active admin token; its own always', async (t) => {
  const { app, store } = await testApp(t);
  const admin = await issueToken(store, { user: 'root', admin: true });
  const root = (await issueToken(store, { user: 'root' })).secret;
  const alice = (await issueToken(store, { user: 'alice' })).secret;
  const id = await register(app, admin.secret);
  assert.deepEqual(await listed(app, root), [[id, true]]);
  await plant(app, alice, 1);
  assert.deepEqual(plantIds(await claimAll(store)), [1]);

  // The user's last admin token revoked (here with one of its other tokens): its own plants only.
  await revoke(app, root, admin.record.id);
  assert.deepEqual(await listed(app, root), [[id, false]]);
  await plant(app, alice, 2);
  await plant(app, root, 3);
  assert.deepEqual(plantIds(await claimAll(store)), [3]);

  // A new admin token gives the reach back; an expired one does not count.
  const again = await issueToken(store, { user: 'root', admin: true });
  assert.deepEqual(await listed(app, root), [[id, true]]);
  await plant(app, alice, 4);
  assert.deepEqual(plantIds(await claimAll(store)), [4]);
  await revoke(app, root, again.record.id);
  await store.tokens.createToken({
    hash: hashToken(generateToken()), user: 'root', scopes: ['webhooks:manage'], admin: true, name: null,
    createdAt: new Date(Date.now() - 60_000), expiresAt: new Date(Date.now() - 1000),
  });
  assert.deepEqual(await listed(app, root), [[id, false]]);
  await plant(app, alice, 5);
  assert.deepEqual(await claimAll(store), []);
});

test('other users\' events still pending when the last admin token is revoked are failed, not delivered; its own still are', async (t) => {
  const { app, store } = await testApp(t);
  const first = await issueToken(store, { user: 'root', admin: true });
  const second = await issueToken(store, { user: 'root', admin: true });
  const alice = (await issueToken(store, { user: 'alice' })).secret;
  await register(app, first.secret);
  await plant(app, alice, 10);
  await plant(app, alice, 11);
  await plant(app, second.secret, 12);
  // Every attempt fails and is due again at once, so each claim sees what is still pending.
  await settle(store, await claimAll(store), 'retry');

  await revoke(app, second.secret, first.record.id);
  const stillAdmin = await claimAll(store);
  assert.deepEqual(plantIds(stillAdmin), [10, 11, 12], 'another admin token of the user is active');
  await settle(store, stillAdmin, 'retry');

  await revoke(app, second.secret, second.record.id);
  const own = await claimAll(store);
  assert.deepEqual(plantIds(own), [12]);
  await settle(store, own, 'delivered');
  assert.equal((await store.outbox.webhookBacklog(100)).pending, 0, 'alice\'s events are failed, not left pending');
});

test('an admin token that expires: other users\' pending events are failed by the next sweep', async (t) => {
  const { app, store, sql } = await testApp(t);
  const expiring = await issueToken(store, { user: 'root', admin: true, expiresInMs: 3_600_000 });
  const alice = (await issueToken(store, { user: 'alice' })).secret;
  await register(app, expiring.secret);
  await plant(app, alice, 20);
  await store.outbox.sweepWebhooks(new Date(0));
  assert.equal((await store.outbox.webhookBacklog(100)).pending, 1, 'the sweep leaves the event alone while the admin token holds');
  // The token's expiry moved into the past, as the clock would have moved past it: the test, not the
  // machine's speed, decides when the token expires.
  const past = BACKEND === 'postgres' ? "'1970-01-01T00:00:01Z'" : '1000';
  await sql(`UPDATE tokens SET expires_at = ${past} WHERE id = ${expiring.record.id}`);
  await eventually(async () => {
    await store.outbox.sweepWebhooks(new Date(0));
    return (await store.outbox.webhookBacklog(100)).pending === 0 ? true : undefined;
  }, 'the event failed once the admin token expired');
  assert.deepEqual(await claimAll(store), []);
});

test('a caller that is not admin reads only its own plants\' events in an all-users endpoint\'s history; an admin reads all', async (t) => {
  const { app, store } = await testApp(t);
  const admin = (await issueToken(store, { user: 'root', admin: true })).secret;
  const root = (await issueToken(store, { user: 'root' })).secret;
  const ops = (await issueToken(store, { user: 'ops', admin: true })).secret;
  const alice = (await issueToken(store, { user: 'alice' })).secret;
  const id = await register(app, admin);
  await plant(app, alice, 30);
  await plant(app, root, 31);
  await settle(store, await claimAll(store), 'delivered');
  assert.deepEqual(await historyOf(app, root, id), [31], 'alice\'s plant id is not shown to a token that cannot list her plants');
  assert.deepEqual(await historyOf(app, admin, id), [30, 31]);
  assert.deepEqual(await historyOf(app, ops, id), [30, 31]);
});

test('an admin JWT\'s all-users endpoint reaches other users\' plants only while its user holds an admin token of plantstore\'s', async (t) => {
  const key = await signingKey('RS256', 'main');
  const provider = await TestProvider.start(t, [key]);
  const { app, store } = await testApp(t, { jwtIssuer: provider.issuer, jwtAudience: AUDIENCE });
  const adminJwt = await sign(provider, { sub: 'carol', scope: 'webhooks:manage plants:admin' }, { key });
  const carolJwt = await sign(provider, { sub: 'carol', scope: 'webhooks:manage' }, { key });
  const alice = (await issueToken(store, { user: 'alice' })).secret;
  const id = await register(app, adminJwt);
  // The store cannot see the provider's grant: without an admin token of carol's, her own plants only.
  assert.deepEqual(await listed(app, adminJwt), [[id, false]]);
  await plant(app, alice, 40);
  assert.deepEqual(await claimAll(store), []);

  await issueToken(store, { user: 'carol', admin: true });
  assert.deepEqual(await listed(app, carolJwt), [[id, true]]);
  await plant(app, alice, 41);
  await settle(store, await claimAll(store), 'delivered');
  // Reading the history, the caller's own admin-ness counts, whichever verifier made it.
  assert.deepEqual(await historyOf(app, adminJwt, id), [41]);
  assert.deepEqual(await historyOf(app, carolJwt, id), []);
});
