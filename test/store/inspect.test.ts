import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newEndpointId, newWebhookSecret } from '../../src/domain/webhook.js';
import { inspectStore } from '../../src/store/inspect.js';
import { loadMigrations, migrationName } from '../../src/store/sql/migrations.js';
import { BACKEND, testDatabase, testStore } from '../helpers/app.js';

// What doctor reads of a store (store/inspect.ts), on every backend, without opening it as a server does.

const OPTIONS = { connectTimeoutMs: 5000 };

test('inspectStore: an empty database holds no store, and inspecting it makes none', async (t) => {
  const db = await testDatabase(t);
  const empty = await inspectStore(db.config, OPTIONS);
  assert.deepEqual(empty, {
    backend: BACKEND,
    exists: false,
    serverVersion: empty.serverVersion,
    schemaVersion: null,
    pendingMigrations: loadMigrations(BACKEND).map(migrationName),
    unknownMigrations: [],
    webhooks: null,
  });
  assert.equal(BACKEND === 'postgres' ? /^\d+/.test(empty.serverVersion ?? '') : empty.serverVersion === null, true);
  assert.equal((await inspectStore(db.config, OPTIONS)).exists, false, 'still none');
});

test('inspectStore: schema version, pending and unknown migrations, webhook events waiting and failed, endpoints disabled', async (t) => {
  const { store, config, sql } = await testStore(t);
  const latest = Math.max(...loadMigrations(BACKEND).map((m) => m.version));
  const fresh = await inspectStore(config, OPTIONS);
  assert.equal(fresh.exists, true);
  assert.equal(fresh.schemaVersion, latest);
  assert.deepEqual([fresh.pendingMigrations, fresh.unknownMigrations], [[], []]);
  assert.deepEqual(fresh.webhooks, { pending: 0, oldestPending: null, failed: 0, disabledEndpoints: [] });

  const id = newEndpointId();
  assert.notEqual(await store.webhooks.createWebhook({ id, user: 'alice', allUsers: false, url: 'https://hooks.example/a', description: null, secret: newWebhookSecret() }, 10), 'limit');
  const before = Date.now();
  for (const [i, name] of ['a', 'b', 'c'].entries()) assert.equal(await store.plants.createPlant('alice', { id: BigInt(i + 1), name }), 'created');
  const disabledAt = BACKEND === 'postgres' ? "'2026-01-02T03:04:05Z'" : String(Date.parse('2026-01-02T03:04:05Z'));
  await sql(`UPDATE webhook_endpoints SET disabled_at = ${disabledAt}, disabled_reason = 'gone' WHERE id = '${id}'`);
  await sql(`UPDATE webhook_deliveries SET state = 'failed' WHERE seq = (SELECT max(seq) FROM webhook_deliveries)`);
  await sql(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'from_the_future', ${BACKEND === 'postgres' ? 'now()' : '0'})`);
  await sql(`DELETE FROM schema_migrations WHERE version = ${latest}`);

  const seen = await inspectStore(config, OPTIONS);
  assert.equal(seen.schemaVersion, 999);
  assert.deepEqual(seen.pendingMigrations, [migrationName(loadMigrations(BACKEND).at(-1)!)]);
  assert.deepEqual(seen.unknownMigrations, [999]);
  assert.equal(seen.webhooks?.pending, 2);
  assert.equal(seen.webhooks?.failed, 1);
  assert.ok((seen.webhooks?.oldestPending?.getTime() ?? 0) >= before - 1000, String(seen.webhooks?.oldestPending));
  assert.deepEqual(seen.webhooks?.disabledEndpoints, [{ id, disabledAt: new Date('2026-01-02T03:04:05Z'), reason: 'gone' }]);
});
