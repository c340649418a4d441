import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { newEndpointId, newWebhookSecret, type WebhookEndpoint } from '../../src/domain/webhook.js';
import { openStore } from '../../src/store/open.js';
import { issueToken } from '../helpers/tokens.js';
import { silentLogger, testDatabase, type TestDatabase } from '../helpers/app.js';
import { startServer } from '../helpers/process.js';
import { eventually } from '../helpers/eventually.js';
import { receiver } from '../helpers/webhook-receiver.js';

const CLIENTS = 8;
const ROUNDS = 2;

/** Short timeouts and retries; receivers are on loopback. A claim of a killed process ends 2 × 1 s + 30 s later. */
const WEBHOOK_ENV = { WEBHOOK_ALLOW_PRIVATE: 'on', WEBHOOK_TIMEOUT: '1s', WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s,1s,1s,1s,1s,1s,1s,1s' };

/** A token for `user` and an endpoint for `url`, written to the store as the CLI would, before any server runs. */
async function setUp(db: TestDatabase, url: string, user = 'alice'): Promise<{ token: string; endpoint: WebhookEndpoint }> {
  const store = await openStore(db.config, { logger: silentLogger, poolSize: 1, startupTimeoutMs: 5000, server: false });
  try {
    const { secret: token } = await issueToken(store, { user });
    const endpoint = await store.webhooks.createWebhook(
      { id: newEndpointId(), user, allUsers: false, url, description: null, secret: newWebhookSecret() }, 10,
    );
    assert.notEqual(endpoint, 'limit');
    return { token, endpoint: endpoint as WebhookEndpoint };
  } finally {
    await store.close();
  }
}

async function attemptsOf(db: TestDatabase, endpointId: string) {
  const store = await openStore(db.config, { logger: silentLogger, poolSize: 1, startupTimeoutMs: 5000, server: false });
  try {
    return await store.webhooks.listDeliveryAttempts(endpointId, null, 100);
  } finally {
    await store.close();
  }
}

function createPlant(base: string, token: string, id: number, name: string): Promise<Response | undefined> {
  return fetch(`${base}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ id, name }),
  }).catch(() => undefined); // the process is gone: this create was never acknowledged
}

test('kill -9 during a stream of creates: after a restart, every acknowledged plant is delivered', async (t: TestContext) => {
  const db = await testDatabase(t);
  const rx = await receiver(t);
  const { token } = await setUp(db, rx.url);
  const env = { DATABASE_URL: db.url, ...WEBHOOK_ENV };
  const acknowledged: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const server = await startServer(t, env);
    let running = true;
    const client = async (c: number) => {
      for (let n = 0; running; n++) {
        const id = round * 1_000_000 + c * 10_000 + n;
        const res = await createPlant(server.url, token, id, `p${id}`);
        if (!res) return;
        if (res.status === 200) acknowledged.push(id);
        else assert.fail(`create ${id} answered ${res.status}`);
      }
    };
    const clients = Array.from({ length: CLIENTS }, (_, c) => client(c));
    // A random moment, counted in this round's acknowledged creates rather than in time (a loaded machine
    // is slow): at least 60 of them, so that every round creates under load.
    const killAfter = acknowledged.length + 60 + Math.floor(Math.random() * 240);
    await eventually(() => (acknowledged.length >= killAfter ? true : undefined), 'creates acknowledged');
    server.child.kill('SIGKILL');
    running = false;
    await Promise.all(clients);
    assert.equal(await server.exited, null, 'killed, not exited');
  }
  assert.ok(acknowledged.length >= ROUNDS * 60, 'the rounds did create under load');
  const server = await startServer(t, env);
  // Events claimed by a killed process wait for their lease to end (32 s here) before they are retried.
  const delivered = await eventually(() => {
    const ids = new Set(rx.received.map((r) => (JSON.parse(r.body) as { id: number }).id));
    return acknowledged.every((id) => ids.has(id)) ? ids : undefined;
  }, 'every acknowledged plant delivered');
  t.diagnostic(`${ROUNDS} crashes: ${acknowledged.length} creates acknowledged, ${delivered.size} plants delivered in ${rx.received.length} requests`);
  for (const r of rx.received) {
    const { id } = JSON.parse(r.body) as { id: number };
    assert.equal(r.body, `{"id":${id},"name":"p${id}"}`);
  }
  assert.equal(await server.stop(), 0);
});

test('SIGTERM: an attempt still in flight at the drain deadline is released, then delivered after a restart', async (t: TestContext) => {
  const db = await testDatabase(t);
  let hang = true;
  const rx = await receiver(t, () => (hang ? 'hang' : 200));
  const { token, endpoint } = await setUp(db, rx.url);
  const env = { DATABASE_URL: db.url, ...WEBHOOK_ENV, WEBHOOK_TIMEOUT: '60s', DRAIN_TIMEOUT: '1s' };
  const server = await startServer(t, env);
  const res = await createPlant(server.url, token, 42, 'p42');
  assert.equal(res?.status, 200);
  await rx.waitFor(1);
  assert.equal(await server.stop('SIGTERM'), 0);
  // Released, not failed: no attempt recorded, and due again at once (not after a 2-minute lease).
  assert.deepEqual(await attemptsOf(db, endpoint.id), []);
  hang = false;
  const again = await startServer(t, env);
  const got = await rx.waitFor(2, 10_000);
  assert.equal(got[1]?.headers['webhook-id'], got[0]?.headers['webhook-id']);
  assert.equal(got[1]?.body, '{"id":42,"name":"p42"}');
  const attempts = await eventually(async () => {
    const list = await attemptsOf(db, endpoint.id);
    return list?.[0]?.state === 'delivered' ? list : undefined;
  });
  assert.deepEqual(attempts.map((a) => [a.attempt, a.status]), [[1, 200]]);
  assert.equal(await again.stop(), 0);
});

test('SIGTERM: an attempt in flight that the receiver answers within the drain is recorded', async (t: TestContext) => {
  const db = await testDatabase(t);
  const rx = await receiver(t, () => 'hang');
  const { token, endpoint } = await setUp(db, rx.url);
  const server = await startServer(t, { DATABASE_URL: db.url, ...WEBHOOK_ENV, WEBHOOK_TIMEOUT: '60s', DRAIN_TIMEOUT: '5s' });
  assert.equal((await createPlant(server.url, token, 43, 'p43'))?.status, 200);
  await rx.waitFor(1);
  const exited = server.stop('SIGTERM');
  await eventually(() => (server.logs().includes('"msg":"shutting down"') ? true : undefined), 'the drain to begin');
  // The receiver answers now, during the drain: the attempt finishes and is recorded before the store closes.
  rx.answerHanging(200);
  assert.equal(await exited, 0);
  const attempts = await attemptsOf(db, endpoint.id);
  assert.deepEqual(attempts?.map((a) => [a.attempt, a.status, a.state]), [[1, 200, 'delivered']]);
});
