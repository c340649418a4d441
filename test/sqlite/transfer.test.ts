import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { cli } from '../helpers/cli.js';
import { startServer } from '../helpers/process.js';
import { tempDir } from '../helpers/transfer.js';

test('export reads a store its server is serving; import into it is refused until the server stops', async (t) => {
  const dir = tempDir(t);
  const env = { DATABASE_URL: `sqlite:${join(dir, 'store.db')}` };
  assert.equal((await cli(['token', 'create', '--user', 'alice'], { env })).code, 0);
  const file = join(dir, 'a.ndjson');
  const server = await startServer(t, env);
  const exported = await cli(['export', '--out', file], { env });
  assert.equal(exported.code, 0, exported.stderr);
  // The server's list cache relies on being the only writer of its plants.
  const refused = await cli(['import', file], { env });
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /another plantstore server is serving .*store\.db .*stop it first/);
  assert.equal(await server.stop(), 0);
  const imported = await cli(['import', file], { env });
  assert.equal(imported.code, 0, imported.stderr);
  assert.match(imported.stderr, /tokens: 0 imported, 1 already present/);
});

test('export of a store that does not exist fails and creates nothing', async (t) => {
  const dir = tempDir(t);
  const res = await cli(['export', '--out', join(dir, 'a.ndjson')], { env: { DATABASE_URL: `sqlite:${join(dir, 'missing.db')}` } });
  assert.equal(res.code, 1);
  assert.match(res.stderr, /no store at .*missing\.db: there is nothing to export/);
  assert.ok(!existsSync(join(dir, 'missing.db')) && !existsSync(join(dir, 'a.ndjson')));
});
