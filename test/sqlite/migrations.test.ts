import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseDatabaseUrl } from '../../src/config/database.js';
import { openStore } from '../../src/store/open.js';
import Database from '../../src/store/sqlite/driver.js';
import { BACKEND, silentLogger } from '../helpers/app.js';
import { tempDir } from '../helpers/sqlite-spawn.js';

if (BACKEND !== 'sqlite') throw new Error('test/sqlite/* runs on SQLite only');

const options = { logger: silentLogger, poolSize: 1, startupTimeoutMs: 1000 };
const migration = (file: string) => readFileSync(new URL(`../../src/store/migrations/sqlite/${file}`, import.meta.url), 'utf8');

/** A store exactly as the releases before token scopes left it: migrations 001 and 002, one token in the `user` column. */
function oldStore(path: string): void {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
  db.exec(migration('001_init.sql'));
  db.exec(migration('002_server_secrets.sql'));
  db.prepare('INSERT INTO schema_migrations VALUES (1, ?, ?), (2, ?, ?)').run('init', Date.now(), 'server_secrets', Date.now());
  db.prepare('INSERT INTO tokens (hash, user, scopes, admin, name, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
    .run('a'.repeat(64), 'alice', 'plants:read plants:write', 0, 'laptop', 1_700_000_000_000, null);
  db.close();
}

test('a SQLite store made by the old migrations opens, keeps its tokens, and names the token owner column as PostgreSQL does', async (t) => {
  const path = join(tempDir(t), 'store.db');
  oldStore(path);
  const store = await openStore(parseDatabaseUrl(`sqlite:${path}`, process.cwd()), { ...options, server: true });
  t.after(() => store.close());

  const kept = await store.tokens.findTokenByHash('a'.repeat(64));
  assert.deepEqual(kept && { user: kept.user, scopes: kept.scopes, admin: kept.admin, name: kept.name, createdAt: kept.createdAt.getTime() }, {
    user: 'alice', scopes: ['plants:read', 'plants:write'], admin: false, name: 'laptop', createdAt: 1_700_000_000_000,
  });
  await store.tokens.createToken({ hash: 'b'.repeat(64), user: 'bob', scopes: ['plants:read'], admin: true, name: null, expiresAt: null });
  assert.deepEqual((await store.tokens.listTokens()).map((r) => r.user), ['alice', 'bob']);
  assert.equal(await store.tokens.revokeToken(kept?.id ?? -1), true);

  const db = new Database(path, { readonly: true });
  t.after(() => db.close());
  const columns = (db.pragma('table_info(tokens)') as { name: string }[]).map((c) => c.name);
  assert.ok(columns.includes('username') && !columns.includes('user'), `tokens columns: ${columns.join(', ')}`);
});
