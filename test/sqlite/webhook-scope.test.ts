import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { buildApp } from '../../src/app.js';
import { parseDatabaseUrl } from '../../src/config/database.js';
import { openStore } from '../../src/store/open.js';
import Database from '../../src/store/sqlite/driver.js';
import { hashToken } from '../../src/domain/token.js';
import { BACKEND, bearer, silentLogger } from '../helpers/app.js';
import { tempDir } from '../helpers/sqlite-spawn.js';

if (BACKEND !== 'sqlite') throw new Error('test/sqlite/* runs on SQLite only');

const migration = (file: string) => readFileSync(new URL(`../../src/store/migrations/sqlite/${file}`, import.meta.url), 'utf8');

test('a token made before webhooks existed keeps its scopes through migration 004: plants yes, /webhooks 403', async (t) => {
  const path = join(tempDir(t), 'store.db');
  // The store as the release of token scopes left it (migrations 001–003), with a token made by its `token create`,
  // which gave every scope there was: plants:read and plants:write.
  const secret = 'pst_madeBeforeWebhooksExisted_0123456789abcdefghij';
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
  for (const file of ['001_init.sql', '002_server_secrets.sql', '003_tokens_username.sql']) db.exec(migration(file));
  db.prepare('INSERT INTO schema_migrations VALUES (1, ?, ?), (2, ?, ?), (3, ?, ?)')
    .run('init', Date.now(), 'server_secrets', Date.now(), 'tokens_username', Date.now());
  db.prepare('INSERT INTO tokens (hash, username, scopes, admin, name, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
    .run(hashToken(secret), 'alice', 'plants:read plants:write', 1, null, Date.now(), null);
  db.close();

  const store = await openStore(parseDatabaseUrl(`sqlite:${path}`, process.cwd()), { logger: silentLogger, poolSize: 1, startupTimeoutMs: 1000, server: true });
  t.after(() => store.close());
  const app = await buildApp({ store, logger: silentLogger });
  t.after(() => app.close());

  assert.deepEqual((await store.tokens.listTokens())[0]?.scopes, ['plants:read', 'plants:write']);
  assert.equal((await app.inject({ method: 'GET', url: '/plants', headers: bearer(secret) })).statusCode, 200);
  const json = { ...bearer(secret), 'content-type': 'application/json' };
  for (const request of [
    { method: 'GET', url: '/webhooks', headers: bearer(secret) },
    { method: 'POST', url: '/webhooks', headers: json, payload: '{"url":"https://a.example/"}' },
  ] as const) {
    const res = await app.inject(request);
    assert.equal(res.statusCode, 403, res.body);
    assert.equal(res.json().error, 40300);
  }
});
