import assert from 'node:assert/strict';
import { chmodSync, chownSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseDatabaseUrl } from '../../src/config/database.js';
import { openStore } from '../../src/store/open.js';
import { StoreLockedError } from '../../src/store/sqlite/index.js';
import { BACKEND, silentLogger } from '../helpers/app.js';
import { cli } from '../helpers/cli.js';
import { spawnServer, startServer } from '../helpers/process.js';
import { exitCode, NOBODY, serve, tempDir } from '../helpers/sqlite-spawn.js';

if (BACKEND !== 'sqlite') throw new Error('test/sqlite/* runs on SQLite only');

const options = { logger: silentLogger, poolSize: 1, startupTimeoutMs: 1000, server: true };
const sqlite = (path: string) => parseDatabaseUrl(`sqlite:${path}`, process.cwd());

test('the server lock holds whatever path names the store: a symlink to it, a relative symlink, a path through ..', async (t) => {
  const dir = tempDir(t);
  mkdirSync(join(dir, 'data'));
  const path = join(dir, 'data', 'store.db');
  symlinkSync(path, join(dir, 'absolute-link.db'));
  symlinkSync('data/store.db', join(dir, 'relative-link.db'));
  const store = await openStore(sqlite(path), options);
  t.after(() => store.close());
  for (const other of [join(dir, 'absolute-link.db'), join(dir, 'relative-link.db'), `${dir}/data/../data/store.db`]) {
    await assert.rejects(openStore(sqlite(other), options), (e: unknown) => {
      assert.ok(e instanceof StoreLockedError, `${other}: ${String(e)}`);
      assert.match(e.message, new RegExp(`another plantstore server is serving ${other}.* \\(it holds ${path}\\.lock\\)`));
      return true;
    });
  }
  assert.deepEqual(readdirSync(dir).filter((f) => f.endsWith('.lock')), [], 'one lock file, next to the real file');
});

test('a store opened through a symlink that points nowhere yet is created where the link points, and locked there', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'store.db');
  symlinkSync('store.db', join(dir, 'link.db'));
  const store = await openStore(sqlite(join(dir, 'link.db')), options);
  t.after(() => store.close());
  await assert.rejects(openStore(sqlite(path), options), StoreLockedError);
});

test('a lock file that cannot be opened as a writable database stops opening, naming the lock file', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'store.db');
  mkdirSync(`${path}.lock`);
  await assert.rejects(openStore(sqlite(path), options), new RegExp(`cannot take the server lock ${path}\\.lock for the SQLite store ${path}`));
});

test('a second plantstore serve through a symlink to the same store exits 1 and says why', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'store.db');
  symlinkSync(path, join(dir, 'link.db'));
  const first = await startServer(t, { DATABASE_URL: `sqlite:${path}` });
  const second = spawnServer(t, { DATABASE_URL: `sqlite:${join(dir, 'link.db')}` });
  assert.equal(await exitCode(second.exited), 1);
  assert.match(second.fatal(), new RegExp(`another plantstore server is serving ${join(dir, 'link.db')}`));
  assert.equal((await fetch(`${first.url}/healthz`)).status, 200);
  assert.equal(await first.stop(), 0);
});

test('a server whose user cannot write the lock file does not start: it exits non-zero naming the lock file', async (t) => {
  const dir = tempDir(t, NOBODY);
  const path = join(dir, 'store.db');
  assert.equal((await cli(['migrate'], { env: { DATABASE_URL: `sqlite:${path}` } })).code, 0);
  chownSync(path, NOBODY.uid, NOBODY.gid);
  // Left by a server that ran as root, say: nobody may read it but not write it.
  writeFileSync(`${path}.lock`, '');
  chmodSync(`${path}.lock`, 0o644);
  const server = serve(t, { DATABASE_URL: `sqlite:${path}` }, { as: NOBODY });
  const code = await exitCode(server.exited);
  assert.ok(code !== 0 && code !== null && code !== 'still running', `exit code ${String(code)}: ${server.output()}`);
  assert.match(server.output(), new RegExp(`cannot take the server lock ${path}\\.lock .*user nobody must be able to create and write that file`));
});
