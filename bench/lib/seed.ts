import { writeFileSync } from 'node:fs';
import pg from 'pg';
import { parseDatabaseUrl } from '../../src/config/database.js';
import { createLogger } from '../../src/logger.js';
import { openStore } from '../../src/store/open.js';
import { newEndpointId, newWebhookSecret } from '../../src/domain/webhook.js';
import Database from '../../src/store/sqlite/driver.js';
import { issueToken } from '../../test/helpers/tokens.js';

export const USERS = 20;
export const BENCH_USER = userName(0);
export function userName(i: number): string {
  return `user-${String(i).padStart(2, '0')}`;
}

/** Plant i belongs to user i mod 20, so every user's plants are spread through the whole store. */
const plantOf = (i: number) => ({ owner: userName(i % USERS), id: i, name: `plant ${i}`, tag: i % 3 === 0 ? 'indoor' : null });

/** Runs the store's own migrations, then issues the bench user's token; returns the token secret. */
async function prepareStore(databaseUrl: string): Promise<string> {
  const store = await openStore(parseDatabaseUrl(databaseUrl, process.cwd()), { logger: createLogger('silent'), poolSize: 1, startupTimeoutMs: 5000 });
  try {
    return (await issueToken(store, { user: BENCH_USER, name: 'bench' })).secret;
  } finally {
    await store.close();
  }
}

export async function seedSqlite(path: string, plants: number): Promise<string> {
  const token = await prepareStore(`sqlite:${path}`);
  const db = new Database(path);
  db.pragma('synchronous = OFF'); // seeding only; the server reopens with FULL
  const insert = db.prepare('INSERT INTO plants (owner, id, name, tag) VALUES (?, ?, ?, ?)');
  db.transaction(() => {
    for (let i = 0; i < plants; i++) {
      const p = plantOf(i);
      insert.run(p.owner, p.id, p.name, p.tag);
    }
  })();
  db.exec('ANALYZE');
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return token;
}

/** Drops and creates `schema` in the database of `baseUrl`; returns the URL that selects it. */
export async function freshSchema(baseUrl: string, schema: string): Promise<string> {
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  try {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.query(`CREATE SCHEMA ${schema}`);
  } finally {
    await admin.end();
  }
  const u = new URL(baseUrl);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return u.toString();
}

/** Seeds a fresh schema in the given database; returns the URL that selects it and the token. */
export async function seedPostgres(baseUrl: string, schema: string, plants: number): Promise<{ url: string; token: string }> {
  const url = await freshSchema(baseUrl, schema);
  const token = await prepareStore(url);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(
      `INSERT INTO plants (owner, id, name, tag)
       SELECT 'user-' || lpad((i % ${USERS})::text, 2, '0'), i, 'plant ' || i, CASE WHEN i % 3 = 0 THEN 'indoor' END
       FROM generate_series(0, $1 - 1) AS i`,
      [plants],
    );
    // VACUUM as well: a store that has been running has been vacuumed by autovacuum (it does so after
    // inserts too), which is what lets a page be read from its index alone; a bulk load has not yet.
    await client.query('VACUUM ANALYZE plants');
  } finally {
    await client.end();
  }
  return { url, token };
}

export async function dropPostgresSchema(baseUrl: string, schema: string): Promise<void> {
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).finally(() => admin.end());
}

/** Issues `count` more read-only tokens of `user` (the feed scenario's subscribers, within the streams allowed per token); returns their secrets. */
export async function issueTokens(databaseUrl: string, count: number, user = BENCH_USER): Promise<string[]> {
  const store = await openStore(parseDatabaseUrl(databaseUrl, process.cwd()), { logger: createLogger('silent'), poolSize: 1, startupTimeoutMs: 5000 });
  try {
    const secrets: string[] = [];
    for (let i = 0; i < count; i++) secrets.push((await issueToken(store, { user, name: `feed ${i}`, scopes: ['plants:read'] })).secret);
    return secrets;
  } finally {
    await store.close();
  }
}

/** The same plants as a json-server database file (json-server needs a globally unique id). */
export function writeJsonServerDb(path: string, plants: number): void {
  const rows = Array.from({ length: plants }, (_, i) => {
    const { tag, ...p } = plantOf(i);
    return tag === null ? p : { ...p, tag };
  });
  writeFileSync(path, JSON.stringify({ plants: rows }));
}

/**
 * A user who never creates: the rows of scenarios 1, 2 and the mix run with one endpoint of theirs, so
 * that every create pays the "does anyone receive this owner's plants" check and the dispatcher runs,
 * while no event is queued (scenario 4 measures deliveries).
 */
export const WEBHOOK_OWNER = 'bench-webhook-owner';
/** Never called: no event is ever queued for WEBHOOK_OWNER's endpoint (.invalid never resolves anyway). */
export const UNUSED_WEBHOOK_URL = 'https://receiver.bench.invalid/hook';

/** Registers one webhook endpoint of `user` (the bench user by default), receiving their new plants, as POST /webhooks would. */
export async function registerWebhook(databaseUrl: string, url: string, user = BENCH_USER): Promise<void> {
  const store = await openStore(parseDatabaseUrl(databaseUrl, process.cwd()), { logger: createLogger('silent'), poolSize: 1, startupTimeoutMs: 5000 });
  try {
    const made = await store.webhooks.createWebhook(
      { id: newEndpointId(), user, allUsers: false, url, description: 'bench', secret: newWebhookSecret() },
      10,
    );
    if (made === 'limit') throw new Error('webhook limit reached while seeding');
  } finally {
    await store.close();
  }
}
