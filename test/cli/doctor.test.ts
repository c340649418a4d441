import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newEndpointId, newWebhookSecret } from '../../src/domain/webhook.js';
import { BACKEND, testDatabase, testStore } from '../helpers/app.js';
import { AUDIENCE, closedPort, signingKey, TestProvider, weakRsaKey } from '../helpers/jwt-provider.js';
import { cli } from '../helpers/cli.js';

// plantstore doctor as an operator runs it, in-process, on each backend: one line per finding, exit 0 or 1, --json.

interface Report {
  ok: boolean;
  findings: Array<{ check: string; status: string; message: string }>;
  settingsFile: string | null;
  settings: Array<{ name: string; value: string; source: string }>;
  store: { backend: string; location: string; exists: boolean; schemaVersion: number | null; pendingMigrations: string[]; serverVersion: string | null } | null;
  webhooks: { pending: number; failed: number; oldestPending: string | null; disabledEndpoints: Array<{ id: string; reason: string | null }> } | null;
  identityProvider: { reachable: boolean; usableKeys: number } | null;
}

const doctorJson = async (env: Record<string, string | undefined>): Promise<{ code: number | null; report: Report }> => {
  const res = await cli(['doctor', '--json'], { env });
  return { code: res.code, report: JSON.parse(res.stdout) as Report };
};

/** The applied migrations, read beside the store. */
async function appliedVersions(db: Awaited<ReturnType<typeof testDatabase>>): Promise<number> {
  const res = await cli(['doctor', '--json'], { env: { DATABASE_URL: db.url } });
  return (JSON.parse(res.stdout) as Report).store?.schemaVersion ?? -1;
}

test('doctor on a healthy store: every line ok or note, exit 0; --json has the documented shape', async (t) => {
  const db = await testDatabase(t);
  const env = { DATABASE_URL: db.url, JWT_ISSUER: undefined, JWT_JWKS_URL: undefined, PORT: '9000', PLANTSTORE_CONFIG: undefined };
  assert.equal((await cli(['migrate'], { env })).code, 0);
  const res = await cli(['doctor'], { env });
  assert.equal(res.code, 0, res.stdout + res.stderr);
  assert.match(res.stdout, /^ok {8}store: \S+ (opens|accepts connections \(PostgreSQL \d+)/m);
  assert.match(res.stdout, /^ok {8}schema: version \d+, no pending migrations$/m);
  assert.match(res.stdout, /^ok {8}webhooks: no events waiting for delivery$/m);
  assert.match(res.stdout, /^note {6}setting: PORT=9000 \(from environment\)$/m);
  assert.match(res.stdout, /^note {6}identity provider: none set/m);
  assert.match(res.stdout, /^All is well\.$/m);
  assert.equal(res.stderr, '');

  const { code, report } = await doctorJson(env);
  assert.equal(code, 0);
  assert.deepEqual(Object.keys(report).sort(), ['findings', 'identityProvider', 'ok', 'settings', 'settingsFile', 'store', 'webhooks']);
  assert.equal(report.ok, true);
  assert.deepEqual(report.settings.find((s) => s.name === 'PORT'), { name: 'PORT', value: '9000', source: 'env' });
  assert.equal(report.store?.backend, BACKEND);
  assert.equal(report.store?.exists, true);
  assert.deepEqual(report.store?.pendingMigrations, []);
  assert.equal(BACKEND === 'postgres' ? typeof report.store?.serverVersion : report.store?.serverVersion, BACKEND === 'postgres' ? 'string' : null);
  assert.deepEqual(report.webhooks, { pending: 0, oldestPending: null, failed: 0, disabledEndpoints: [] });
});

test('doctor on a store with pending migrations says which, exit 1, and applies none', async (t) => {
  const db = await testDatabase(t);
  const env = { DATABASE_URL: db.url };
  assert.equal((await cli(['migrate'], { env })).code, 0);
  const latest = await appliedVersions(db);
  await db.sql(`DELETE FROM schema_migrations WHERE version = ${latest}`);
  const res = await cli(['doctor'], { env });
  assert.equal(res.code, 1);
  assert.match(res.stdout, new RegExp(`^attention schema: version ${latest - 1}; pending: ${String(latest).padStart(3, '0')}_\\w+ \\(serve applies them at start, or run "plantstore migrate"\\)$`, 'm'));
  assert.match(res.stdout, /^1 finding needs attention\.$/m);
  assert.equal(await appliedVersions(db), latest - 1, 'doctor wrote no schema row');

  await db.sql(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'from_the_future', ${BACKEND === 'postgres' ? 'now()' : '0'})`);
  const newer = await cli(['doctor'], { env });
  assert.equal(newer.code, 1);
  assert.match(newer.stdout, /^attention schema: version 999: migrations 999 are unknown to this plantstore; a newer plantstore migrated the store, run that one$/m);
});

test('doctor on an empty database says it holds no store yet, exit 1, and makes none', async (t) => {
  const db = await testDatabase(t);
  const res = await cli(['doctor'], { env: { DATABASE_URL: db.url } });
  assert.equal(res.code, 1);
  assert.match(res.stdout, BACKEND === 'postgres'
    ? /^attention store: postgres:\S+ holds no plantstore store yet: serve or "plantstore migrate" creates its tables$/m
    : /^attention store: no store at sqlite:\S+: serve or "plantstore migrate" would create a new, empty one \(is DATABASE_URL the server's\?\)$/m);
  assert.equal((await doctorJson({ DATABASE_URL: db.url })).report.store?.exists, false, 'still none');
});

test('doctor on webhook events waiting for an hour and failed: each needs attention', async (t) => {
  const { store, url, sql } = await testStore(t);
  assert.notEqual(await store.webhooks.createWebhook({ id: newEndpointId(), user: 'alice', allUsers: false, url: 'https://hooks.example/a', description: null, secret: newWebhookSecret() }, 10), 'limit');
  for (const [i, name] of ['a', 'b'].entries()) assert.equal(await store.plants.createPlant('alice', { id: BigInt(i + 1), name }), 'created');
  const fresh = await cli(['doctor'], { env: { DATABASE_URL: url } });
  assert.equal(fresh.code, 0, fresh.stdout);
  assert.match(fresh.stdout, /^ok {8}webhooks: 2 events waiting for delivery, the oldest queued at \S+Z$/m);
  const hoursAgo = BACKEND === 'postgres' ? "now() - interval '2 hours'" : String(Date.now() - 7_200_000);
  await sql(`UPDATE webhook_deliveries SET created_at = ${hoursAgo} WHERE seq = (SELECT min(seq) FROM webhook_deliveries)`);
  await sql(`UPDATE webhook_deliveries SET state = 'failed' WHERE seq = (SELECT max(seq) FROM webhook_deliveries)`);
  const res = await cli(['doctor'], { env: { DATABASE_URL: url } });
  assert.equal(res.code, 1);
  assert.match(res.stdout, /^attention webhooks: 1 event waiting for delivery, the oldest queued at \S+Z$/m);
  assert.match(res.stdout, /^attention webhooks: 1 event failed after the last retry \(kept for WEBHOOK_RETENTION\); "plantstore webhook deliveries ID" shows why$/m);
  assert.match(res.stdout, /^2 findings need attention\.$/m);
});

test('doctor on a store with a disabled webhook endpoint names it, exit 1', async (t) => {
  const db = await testDatabase(t);
  const env = { DATABASE_URL: db.url };
  const added = await cli(['webhook', 'add', '--user', 'alice', '--url', 'https://hooks.example/plants'], { env });
  assert.equal(added.code, 0, added.stderr);
  const id = /(ep_[A-Za-z0-9_-]{22})/.exec(added.stderr)?.[1] ?? '';
  const at = BACKEND === 'postgres' ? "'2026-01-02T03:04:05Z'" : String(Date.parse('2026-01-02T03:04:05Z'));
  await db.sql(`UPDATE webhook_endpoints SET disabled_at = ${at}, disabled_reason = 'the receiver answered 410 Gone' WHERE id = '${id}'`);
  const res = await cli(['doctor'], { env });
  assert.equal(res.code, 1);
  assert.match(res.stdout, new RegExp(`^attention webhooks: endpoint ${id} is disabled since 2026-01-02T03:04:05\\.000Z: the receiver answered 410 Gone$`, 'm'));
  const { report } = await doctorJson(env);
  assert.deepEqual(report.webhooks?.disabledEndpoints, [{ id, disabledAt: '2026-01-02T03:04:05.000Z', reason: 'the receiver answered 410 Gone' }]);
});

test('doctor checks the identity provider: usable keys are ok, an unreachable key set needs attention', async (t) => {
  const db = await testDatabase(t);
  const provider = await TestProvider.start(t, [await signingKey('ES256', 'k1')]);
  const env = { DATABASE_URL: db.url, JWT_AUDIENCE: AUDIENCE, JWT_JWKS_URL: undefined };
  assert.equal((await cli(['migrate'], { env })).code, 0);
  const up = await cli(['doctor'], { env: { ...env, JWT_ISSUER: provider.issuer } });
  assert.equal(up.code, 0, up.stdout);
  assert.match(up.stdout, new RegExp(`^ok {8}identity provider: ${provider.issuer} answers with 1 usable key$`, 'm'));

  const useless = await TestProvider.start(t, [weakRsaKey('small')]);
  const unusable = await cli(['doctor'], { env: { ...env, JWT_ISSUER: undefined, JWT_JWKS_URL: useless.jwksUrl } });
  assert.equal(unusable.code, 1);
  assert.match(unusable.stdout, new RegExp(`^attention identity provider: ${useless.jwksUrl} publishes no key this server can use \\(JWT_ALGORITHMS RS256,PS256,ES256,EdDSA\\)$`, 'm'));
  assert.match(unusable.stdout, /^note {6}identity provider: key small is skipped: /m);

  const gone = `http://127.0.0.1:${await closedPort()}/jwks`;
  const { code, report } = await doctorJson({ ...env, JWT_ISSUER: undefined, JWT_JWKS_URL: gone });
  assert.equal(code, 1);
  assert.deepEqual(report.identityProvider, { issuer: null, jwksUrl: gone, reachable: false, usableKeys: 0 });
  assert.match(report.findings.find((f) => f.check === 'identity provider')?.message ?? '', new RegExp(`^${gone} does not answer with keys: `));
});

test('doctor on an unreachable PostgreSQL says so, exit 1', async () => {
  const url = `postgres://app:hunter2@127.0.0.1:${await closedPort()}/plants`;
  const res = await cli(['doctor'], { env: { DATABASE_URL: url } });
  assert.equal(res.code, 1);
  assert.match(res.stdout, /^attention store: PostgreSQL at 127\.0\.0\.1:\d+\/plants does not accept connections: .*ECONNREFUSED/m);
  assert.ok(!res.stdout.includes('hunter2'));
});

test('doctor: --help, and a mistake in the command is exit 2', async () => {
  const help = await cli(['doctor', '--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^Usage: plantstore doctor \[--json\]/);
  const bogus = await cli(['doctor', '--bogus']);
  assert.equal(bogus.code, 2);
  assert.match(bogus.stderr, /unknown option --bogus; see "plantstore doctor --help"/);
  const main = await cli(['--help']);
  assert.match(main.stdout, /^ {2}doctor {16}Check the store/m);
});
