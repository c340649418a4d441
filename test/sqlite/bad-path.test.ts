import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseDatabaseUrl } from '../../src/config/database.js';
import { openStore } from '../../src/store/open.js';
import { BACKEND, silentLogger } from '../helpers/app.js';
import { spawnServer } from '../helpers/process.js';
import { exitCode, tempDir } from '../helpers/sqlite-spawn.js';

if (BACKEND !== 'sqlite') throw new Error('test/sqlite/* runs on SQLite only');

const options = { logger: silentLogger, poolSize: 1, startupTimeoutMs: 1000, server: true };

test('a SQLite path that is a directory, or that has a file where a directory should be, fails at once naming the path', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'file'), 'not a directory');
  const cases = [
    [dir, new RegExp(`^Error: the SQLite store ${dir} is a directory; DATABASE_URL must name a file`)],
    [join(dir, 'file', 'x.db'), new RegExp(`^Error: cannot use the directory of the SQLite store ${join(dir, 'file', 'x.db')}: .*${join(dir, 'file')} is not a directory`)],
    [join(dir, 'file', 'deeper', 'x.db'), new RegExp(`^Error: cannot use the directory of the SQLite store ${join(dir, 'file', 'deeper', 'x.db')}: ENOTDIR`)],
  ] as const;
  for (const [path, message] of cases) {
    await assert.rejects(openStore(parseDatabaseUrl(`sqlite:${path}`, process.cwd()), options), message, path);
  }
});

test('plantstore serve on sqlite:/proc/nope/x.db exits 1 at once, naming the path (it used to spin at 100% CPU, deaf to SIGTERM)', async (t) => {
  const server = spawnServer(t, { DATABASE_URL: 'sqlite:/proc/nope/x.db' });
  const code = await exitCode(server.exited);
  assert.equal(code, 1, server.logs());
  assert.match(server.fatal(), /cannot create the directory \/proc\/nope for the SQLite store \/proc\/nope\/x\.db: ENOENT/);
});
