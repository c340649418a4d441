import assert from 'node:assert/strict';
import { test } from 'node:test';
import { testDatabase } from '../helpers/app.js';
import { cli } from '../helpers/cli.js';

/** The tables of the test's schema (the store's live there once any command made it). */
async function tables(db: Awaited<ReturnType<typeof testDatabase>>): Promise<number> {
  const pg = await import('pg');
  const client = new pg.default.Client({ connectionString: db.url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM pg_tables WHERE schemaname = current_schema()');
    return Number(rows[0]?.n);
  } finally {
    await client.end();
  }
}

test('on PostgreSQL, commands that only read make no tables in a database without a store: they say "no store at …" and exit 1', async (t) => {
  const db = await testDatabase(t);
  const env = { DATABASE_URL: db.url };
  for (const args of [['token', 'list'], ['webhook', 'list'], ['webhook', 'deliveries', 'ep_x'], ['token', 'revoke', '1'], ['webhook', 'remove', 'ep_x'], ['export', '--out', '-']]) {
    const res = await cli(args, { env });
    assert.equal(res.code, 1, `${args.join(' ')}: ${res.stderr}`);
    assert.match(res.stderr, /plantstore: no store at postgres:\/\/[^ ]+: there (is|are) (no|nothing) [a-z ]+\(give the command the server's DATABASE_URL\)\n$/, args.join(' '));
    assert.equal(res.stdout, '', args.join(' '));
    assert.equal(await tables(db), 0, `${args.join(' ')} made no table`);
  }
  // A command that writes makes the store; then the same reads work.
  assert.equal((await cli(['migrate'], { env })).code, 0);
  assert.ok((await tables(db)) > 0);
  const list = await cli(['token', 'list'], { env });
  assert.equal(list.code, 0, list.stderr);
});
