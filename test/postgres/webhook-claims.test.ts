import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import {
  newEndpointId, newWebhookSecret, webhookBody, type AttemptResult, type ClaimedDelivery, type ClaimRequest,
} from '../../src/domain/webhook.js';
import type { NewPlant } from '../../src/domain/plant.js';
import type { Store } from '../../src/store/store.js';
import { issueToken } from '../helpers/tokens.js';
import { adminSql, BACKEND, testStore } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';

if (BACKEND !== 'postgres') throw new Error('test/postgres/* needs PLANTSTORE_TEST_DATABASE_URL (npm test sets it)');

/** Two handles with their own pools on one schema: two instances of the service. */
async function twoInstances(t: Parameters<typeof testStore>[0]) {
  const db = await testStore(t);
  return { db, a: db.store, b: await db.reopen() };
}

async function addEndpoint(store: Store, user: string, allUsers = false) {
  const endpoint = await store.webhooks.createWebhook(
    { id: newEndpointId(), user, allUsers, url: 'https://receiver.example/hook', description: null, secret: newWebhookSecret() },
    100,
  );
  assert.notEqual(endpoint, 'limit');
  return endpoint as Exclude<typeof endpoint, 'limit'>;
}

function claim(store: Store, instance: string, overrides: Partial<ClaimRequest> = {}): Promise<ClaimedDelivery[]> {
  return store.outbox.claimDeliveries({ instance, limit: 50, perEndpoint: 50, busy: [], leaseMs: 60_000, ...overrides });
}

function result(delivery: ClaimedDelivery, outcome: AttemptResult['outcome'], retryInMs: number | null = null): AttemptResult {
  const status = outcome === 'delivered' ? 204 : outcome === 'gone' ? 410 : 500;
  return { delivery, outcome, status, error: outcome === 'delivered' ? null : `HTTP ${status}`, at: new Date(), retryInMs };
}

test('two instances claiming at once over thousands of events: each event is claimed exactly once', async (t) => {
  const { a, b, db } = await twoInstances(t);
  await issueToken(a, { user: 'admin', admin: true }); // an all-users endpoint reaches others' plants through it
  const endpoints = [await addEndpoint(a, 'alice'), await addEndpoint(a, 'bob'), await addEndpoint(a, 'admin', true)];
  const plants = 1500;
  await Promise.all(Array.from({ length: plants }, (_, i) =>
    (i % 2 ? a : b).plants.createPlant(i % 3 ? 'alice' : 'bob', { id: BigInt(i), name: `p${i}` })));
  // alice's plants go to alice's and admin's endpoints, bob's to bob's and admin's: two events each.
  const expected = plants * 2;

  const seen = new Map<string, string>();
  const claimLoop = async (store: Store, instance: string) => {
    for (let empty = 0; empty < 3;) {
      const claimed = await claim(store, instance, { limit: 37, perEndpoint: 20 });
      if (claimed.length === 0) {
        empty++;
        // Nothing more may come: three empty claims a moment apart, not one, end an instance's loop.
        await sleep(5);
        continue;
      }
      empty = 0;
      const perEndpoint = new Map<string, number>();
      for (const d of claimed) {
        assert.equal(seen.get(d.eventId), undefined, `event ${d.eventId} claimed by ${seen.get(d.eventId)} and ${instance}`);
        seen.set(d.eventId, instance);
        assert.equal(d.attempt, 1);
        perEndpoint.set(d.endpointId, (perEndpoint.get(d.endpointId) ?? 0) + 1);
      }
      assert.ok(Math.max(...perEndpoint.values()) <= 20);
      // Half recorded delivered, half left under their live lease: neither may be claimed again.
      await store.outbox.recordAttempts(instance, claimed.filter((_, i) => i % 2 === 0).map((d) => result(d, 'delivered')));
    }
  };
  await Promise.all([claimLoop(a, 'a'), claimLoop(b, 'b'), claimLoop(a, 'a2'), claimLoop(b, 'b2')]);
  assert.equal(seen.size, expected);
  assert.ok([...seen.values()].includes('a') && [...seen.values()].includes('b'), 'both instances claimed some');
  const counts = await adminSql(db.url, 'SELECT count(*)::int AS n, count(DISTINCT event_id)::int AS events FROM webhook_deliveries');
  assert.deepEqual(counts[0]?.rows[0], { n: expected, events: expected });
  for (const e of endpoints) {
    const attempts = await a.webhooks.listDeliveryAttempts(e.id, null, 10_000);
    assert.ok(attempts);
    assert.ok(attempts.every((x) => x.state === 'delivered' && x.attempt === 1));
  }
});

test('while one instance\'s claim runs, it holds only the events it takes: another instance claims the rest', async (t) => {
  const { a, b, db } = await twoInstances(t);
  const e1 = await addEndpoint(a, 'alice');
  const e2 = await addEndpoint(a, 'bob');
  for (let i = 0; i < 10; i++) {
    await a.plants.createPlant('alice', { id: BigInt(i), name: 'a' });
    await a.plants.createPlant('bob', { id: BigInt(i), name: 'b' });
  }
  // Instance a's claim stops halfway, in this test's own schema: a trigger that sleeps while the claim
  // leases its events for 'a', after it has locked whatever it locks. Instance b claims meanwhile.
  await db.sql(`CREATE FUNCTION hold_claim() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.leased_by = 'a' THEN PERFORM pg_sleep(0.6); END IF; RETURN NEW; END $$`);
  await db.sql('CREATE TRIGGER hold_claim BEFORE UPDATE ON webhook_deliveries FOR EACH ROW EXECUTE FUNCTION hold_claim()');
  const first = claim(a, 'a', { limit: 1, perEndpoint: 50 });
  const schema = new URL(db.url).searchParams.get('options')?.split('=')[1];
  await eventually(async () => {
    const [res] = await adminSql(db.url, `SELECT 1 FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
      JOIN pg_class c ON c.oid = l.relation JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE a.wait_event = 'PgSleep' AND c.relname = 'webhook_deliveries' AND n.nspname = '${schema}'`);
    return res?.rowCount ? true : undefined;
  }, 'instance a\'s claim under way');
  const second = await claim(b, 'b', { limit: 50, perEndpoint: 50 });
  const taken = await first;
  assert.equal(taken?.length, 1);
  // Everything due except the one event a took: none of a's candidates was hidden from b.
  assert.equal(second.length, 19);
  assert.ok(!second.some((d) => d.seq === taken[0]!.seq));
  assert.deepEqual(new Set(second.map((d) => d.endpointId)), new Set([e1.id, e2.id]));
});

test('an expired lease is claimed by the other instance, and the first one\'s late result changes nothing', async (t) => {
  const { a, b } = await twoInstances(t);
  const endpoint = await addEndpoint(a, 'alice');
  assert.equal(await a.plants.createPlant('alice', { id: 7n, name: 'Fern' }), 'created');

  const [first] = await claim(a, 'a', { leaseMs: 300 });
  assert.ok(first);
  assert.equal(first.attempt, 1);
  assert.deepEqual(await claim(b, 'b'), [], 'a live lease is not claimed');
  // The database's clock ends the lease: b claims it as soon as it has ended.
  const second = await eventually(async () => (await claim(b, 'b', { leaseMs: 60_000 }))[0], 'the expired lease claimed by the other instance');
  assert.equal(second.eventId, first.eventId);
  assert.equal(second.attempt, 2);

  // a's result arrives late: it is recorded as an attempt, but does not finish b's claim.
  await a.outbox.recordAttempts('a', [result(first, 'delivered')]);
  // a cannot release b's claim either.
  await a.outbox.releaseDeliveries('a', [second]);
  assert.deepEqual(await claim(a, 'a'), [], 'b still holds the event');

  await b.outbox.recordAttempts('b', [result(second, 'retry', 0)]);
  const [third] = await claim(a, 'a');
  assert.ok(third, 'b\'s retry made the event due again');
  assert.equal(third.attempt, 3);
  await a.outbox.recordAttempts('a', [result(third, 'delivered')]);
  // A moment in which nothing may become due: a delivered event is never claimed again.
  await sleep(10);
  assert.deepEqual(await claim(b, 'b'), []);

  const attempts = await b.webhooks.listDeliveryAttempts(endpoint.id, 'alice', 10);
  assert.deepEqual(attempts?.map((x) => [x.attempt, x.state]), [[3, 'delivered'], [2, 'pending'], [1, 'delivered']]);
  assert.equal(attempts?.[0]?.plantId, 7n);
  assert.equal(attempts?.[1]?.eventId, first.eventId);
});

test('a released claim is due at once with its attempt count as before', async (t) => {
  const { a, b } = await twoInstances(t);
  await addEndpoint(a, 'alice');
  await a.plants.createPlant('alice', { id: 1n, name: 'x' });
  const claimed = await claim(a, 'a');
  assert.equal(claimed.length, 1);
  await a.outbox.releaseDeliveries('a', claimed);
  const again = await claim(b, 'b');
  assert.deepEqual(again.map((d) => [d.eventId, d.attempt]), claimed.map((d) => [d.eventId, 1]));
});

test('the queued body is exactly webhookBody of the stored plant, for hostile text and extreme ids', async (t) => {
  const { a } = await twoInstances(t);
  await addEndpoint(a, 'alice');
  const control = Array.from({ length: 31 }, (_, i) => String.fromCharCode(i + 1)).join('');
  const plants: NewPlant[] = [
    { id: -(2n ** 63n), name: 'a"b\\c/d</script>', tag: '' },
    { id: 2n ** 63n - 1n, name: control },
    { id: 0n, name: '\u2028\u2029 é 中 😀 \x7f\u00a0\ufeff', tag: 'tag "quoted" \\u0041' },
    { id: 42n, name: '', tag: '\n' },
  ];
  for (const p of plants) assert.equal(await a.plants.createPlant('alice', p), 'created');
  // A replay and a conflict queue nothing.
  assert.equal(await a.plants.createPlant('alice', plants[3] as NewPlant), 'replayed');
  assert.equal(await a.plants.createPlant('alice', { id: 42n, name: 'other' }), 'conflict');
  const claimed = await claim(a, 'a');
  assert.equal(claimed.length, plants.length);
  const byId = new Map(claimed.map((d) => [d.plantId, d.body]));
  for (const p of plants) assert.equal(byId.get(p.id), webhookBody(p), `plant ${p.id}`);
});

test('one batch holding two different creates of one id queues the stored plant\'s body once', async (t) => {
  const { a } = await twoInstances(t);
  await addEndpoint(a, 'alice');
  const outcomes = await Promise.all([
    a.plants.createPlant('alice', { id: 5n, name: 'first' }),
    a.plants.createPlant('alice', { id: 5n, name: 'second', tag: 'x' }),
  ]);
  // The batch cannot tell its first copy from a replay (answered 200 either way); the second conflicts.
  assert.deepEqual(outcomes.map((o) => o !== 'conflict'), [true, false]);
  const claimed = await claim(a, 'a');
  assert.deepEqual(claimed.map((d) => d.body), [webhookBody({ id: 5n, name: 'first' })]);
});

test('410 Gone disables the endpoint and gives up its other events, even ones another instance holds', async (t) => {
  const { a, b } = await twoInstances(t);
  const endpoint = await addEndpoint(a, 'alice');
  for (let i = 0; i < 4; i++) await a.plants.createPlant('alice', { id: BigInt(i), name: `p${i}` });
  const mine = await claim(a, 'a', { limit: 1 });
  const theirs = await claim(b, 'b', { limit: 1 });
  assert.equal(mine.length + theirs.length, 2);
  await a.outbox.recordAttempts('a', [result(mine[0] as ClaimedDelivery, 'gone')]);
  const [listed] = await a.webhooks.listWebhooks('alice');
  assert.equal(listed?.disabledReason, 'the receiver answered 410 Gone');
  assert.ok(listed?.disabledAt instanceof Date);
  // b's later result changes nothing; nothing is due; new plants queue nothing for the endpoint.
  await b.outbox.recordAttempts('b', [result(theirs[0] as ClaimedDelivery, 'retry', 0)]);
  await a.plants.createPlant('alice', { id: 99n, name: 'late' });
  assert.deepEqual(await claim(a, 'a'), []);
  const attempts = await a.webhooks.listDeliveryAttempts(endpoint.id, null, 10);
  assert.equal(attempts?.length, 2);
});

test('busy endpoints are skipped and perEndpoint bounds one endpoint\'s share', async (t) => {
  const { a } = await twoInstances(t);
  const e1 = await addEndpoint(a, 'alice');
  const e2 = await addEndpoint(a, 'bob');
  for (let i = 0; i < 10; i++) {
    await a.plants.createPlant('alice', { id: BigInt(i), name: 'a' });
    await a.plants.createPlant('bob', { id: BigInt(i), name: 'b' });
  }
  const skipped = await claim(a, 'a', { busy: [e1.id] });
  assert.ok(skipped.length === 10 && skipped.every((d) => d.endpointId === e2.id));
  const shared = await claim(a, 'a', { perEndpoint: 3 });
  assert.deepEqual(shared.map((d) => d.endpointId), [e1.id, e1.id, e1.id]);
});

test('creates with no endpoint queue nothing; a delete removes the endpoint\'s events and attempts', async (t) => {
  const { a, db } = await twoInstances(t);
  await a.plants.createPlant('alice', { id: 1n, name: 'x' });
  const endpoint = await addEndpoint(a, 'alice');
  await a.plants.createPlant('alice', { id: 2n, name: 'y' });
  await a.plants.createPlant('alice', { id: 3n, name: 'z' });
  const [d] = await claim(a, 'a', { limit: 1 });
  await a.outbox.recordAttempts('a', [result(d as ClaimedDelivery, 'retry', 60_000)]);
  assert.equal(await a.webhooks.deleteWebhook(endpoint.id, 'bob'), false);
  assert.equal(await a.webhooks.deleteWebhook(endpoint.id, 'alice'), true);
  const counts = await adminSql(
    db.url,
    'SELECT (SELECT count(*) FROM webhook_deliveries)::int AS d, (SELECT count(*) FROM webhook_attempts)::int AS a',
  );
  assert.deepEqual(counts[0]?.rows[0], { d: 0, a: 0 });
  assert.equal(await a.webhooks.listDeliveryAttempts(endpoint.id, null, 10), null);
});

test('the per-user limit holds when two instances create endpoints at once', async (t) => {
  const { a, b } = await twoInstances(t);
  const made = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).webhooks.createWebhook(
    { id: newEndpointId(), user: 'alice', allUsers: false, url: `https://r.example/${i}`, description: null, secret: newWebhookSecret() },
    5,
  )));
  assert.equal(made.filter((m) => m !== 'limit').length, 5);
  assert.equal((await a.webhooks.listWebhooks('alice')).length, 5);
  assert.equal((await a.webhooks.listWebhooks(null)).length, 5);
});
