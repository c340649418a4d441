import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { BACKEND, bearer, errorBody, testApp, testDatabase, type TestDatabase } from '../helpers/app.js';
import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/transfer.js';

/** The largest id a token may have: 2^53 - 1, the largest integer every JSON reader holds exactly. */
const MAX = '9007199254740991';
/** The largest token id an import keeps (2^52), leaving room for the tokens created after it. */
const IMPORT_MAX = '4503599627370496';
const HASH = 'ab'.repeat(32);

interface Listed {
  id: number;
  user: string;
  status: string;
}

async function tokenList(url: string): Promise<Listed[]> {
  const res = await cli(['token', 'list', '--json'], { env: { DATABASE_URL: url } });
  assert.equal(res.code, 0, res.stderr);
  return JSON.parse(res.stdout) as Listed[];
}

/**
 * Stores a token with `id` straight into the tokens table (on PostgreSQL with the identity moved past
 * it, as an import does), after migrating the store with the CLI. `legacy`: first drops the store's
 * guard against ids past 2^53 - 1, as a store looks that an earlier version let import such an id.
 */
async function storeTokenWithId(db: TestDatabase, id: string, user: string, { legacy = false } = {}): Promise<void> {
  assert.equal((await cli(['migrate'], { env: { DATABASE_URL: db.url } })).code, 0);
  const hash = `${id.padStart(16, '0')}${HASH}`.slice(0, 64);
  if (BACKEND === 'postgres') {
    if (legacy) await db.sql('ALTER TABLE tokens DROP CONSTRAINT IF EXISTS tokens_id_at_most_9007199254740991');
    await db.sql(`INSERT INTO tokens (id, hash, username, scopes, admin, created_at) OVERRIDING SYSTEM VALUE
      VALUES (${id}, '${hash}', '${user}', '{plants:read}', false, now())`);
    await db.sql(`SELECT setval(pg_get_serial_sequence('tokens', 'id'), (SELECT max(id) FROM tokens))`);
  } else {
    if (legacy) await db.sql('DROP TRIGGER IF EXISTS tokens_id_at_most_9007199254740991');
    await db.sql(`INSERT INTO tokens (id, hash, username, scopes, admin, created_at) VALUES (${id}, '${hash}', '${user}', 'plants:read', 0, 0)`);
  }
}

test('an import refuses a token id that leaves no room for new tokens, keeps one that does, and the tokens created after it get exact, distinct ids', async (t) => {
  const source = await testApp(t);
  await source.token('alice');
  const dir = tempDir(t);
  const file = join(dir, 'export.ndjson');
  assert.equal((await cli(['export', '--out', file], { env: { DATABASE_URL: source.url } })).code, 0);
  const text = readFileSync(file, 'utf8');
  assert.match(text, /"type":"token","id":1,/);

  const target = await testDatabase(t);
  const env = { DATABASE_URL: target.url };
  const tooLarge = join(dir, 'too-large.ndjson');
  writeFileSync(tooLarge, text.replace('"type":"token","id":1,', `"type":"token","id":${MAX},`));
  const refused = await cli(['import', tooLarge], { env });
  assert.equal(refused.code, 1, refused.stderr);
  assert.match(refused.stderr, new RegExp(`line 2: "id" must be a whole number from 1 to ${IMPORT_MAX} \\(2\\^52\\): new tokens are numbered after`));
  assert.deepEqual(await tokenList(target.url), [], 'nothing of the refused batch is stored');

  const atBound = join(dir, 'at-bound.ndjson');
  writeFileSync(atBound, text.replace('"type":"token","id":1,', `"type":"token","id":${IMPORT_MAX},`));
  const imported = await cli(['import', atBound], { env });
  assert.equal(imported.code, 0, imported.stderr);
  const created: string[] = [];
  for (const user of ['bob', 'carol']) {
    const res = await cli(['token', 'create', '--user', user], { env });
    assert.equal(res.code, 0, res.stderr);
    created.push(/Created token (\d+) /.exec(res.stderr)?.[1] ?? '');
  }
  const next = BigInt(IMPORT_MAX);
  assert.deepEqual(created, [String(next + 1n), String(next + 2n)]);
  const revoked = await cli(['token', 'revoke', String(next + 2n)], { env });
  assert.equal(revoked.code, 0, revoked.stderr);
  assert.deepEqual((await tokenList(target.url)).map((l) => [String(l.id), l.user, l.status]), [
    [IMPORT_MAX, 'alice', 'active'],
    [String(next + 1n), 'bob', 'active'],
    [String(next + 2n), 'carol', 'revoked'],
  ]);
});

test('the store gives no token an id past 2^53 - 1: token create fails and says why, and no token gets a rounded id', async (t) => {
  const db = await testDatabase(t);
  await storeTokenWithId(db, MAX, 'alice');
  const res = await cli(['token', 'create', '--user', 'bob'], { env: { DATABASE_URL: db.url } });
  assert.equal(res.code, 1, res.stderr);
  assert.match(res.stderr, /plantstore: no token id is left: token ids end at 9007199254740991/);
  assert.deepEqual((await tokenList(db.url)).map((l) => [l.id, l.user]), [[Number(MAX), 'alice']]);
});

test('a revoke naming an id past 2^53 - 1 revokes no other token, from the CLI (exit 1) and through DELETE /tokens/{id} (404)', async (t) => {
  const { app, url, token, ...db } = await testApp(t);
  const admin = await token('root', { admin: true });
  // 2^53: the id 2^53 + 1 rounds to as a JavaScript number.
  await storeTokenWithId({ url, ...db }, '9007199254740992', 'alice', { legacy: true });
  const active = async () => (await tokenList(url)).filter((l) => l.user === 'alice' && l.status === 'active').length;
  assert.equal(await active(), 1);

  for (const id of ['9007199254740993', '9007199254740992', '18014398509481984']) {
    const revoked = await cli(['token', 'revoke', id], { env: { DATABASE_URL: url } });
    assert.equal(revoked.code, 1, `${id}: ${revoked.stderr}`);
    assert.match(revoked.stderr, new RegExp(`plantstore: no active token with ID ${id}`));
    const res = await app.inject({ method: 'DELETE', url: `/tokens/${id}`, headers: bearer(admin) });
    assert.equal(res.statusCode, 404, `${id}: ${res.body}`);
    assert.equal(errorBody(res).error, 40403);
  }
  assert.equal(await active(), 1, 'alice\'s token was not revoked');
});
