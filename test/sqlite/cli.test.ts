import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { cli } from '../helpers/cli.js';

/** A directory of its own, as a process started in it sees it: symlinks resolved (a process's cwd has none). */
function tempDir(t: TestContext): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'plantstore-cli-')));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('migrate creates the store, directory included, where DATABASE_URL points (relative to the working directory)', async (t) => {
  const dir = tempDir(t);
  const res = await cli(['migrate'], { env: { DATABASE_URL: 'sqlite:./nested/dir/store.db' }, cwd: dir });
  assert.equal(res.code, 0, res.stderr);
  assert.ok(existsSync(join(dir, 'nested/dir/store.db')));
  assert.equal((await cli(['migrate'], { env: { DATABASE_URL: 'sqlite:./nested/dir/store.db' }, cwd: dir })).code, 0, 'idempotent');
});

test('the default store is ./data/plantstore.db, created on first start', async (t) => {
  const dir = tempDir(t);
  const res = await cli(['token', 'create', '--user', 'alice'], { env: { DATABASE_URL: undefined }, cwd: dir });
  assert.equal(res.code, 0, res.stderr);
  assert.ok(existsSync(join(dir, 'data/plantstore.db')));
});

test('a CLI run in another directory says on stderr which store it used, and that it is a new one', async (t) => {
  const serverDir = tempDir(t);
  const otherDir = join(serverDir, 'elsewhere');
  mkdirSync(otherDir);
  const env = { DATABASE_URL: undefined };
  assert.equal((await cli(['migrate'], { env, cwd: serverDir })).code, 0);
  const store = join(realpathSync(serverDir), 'data/plantstore.db');
  const here = await cli(['token', 'create', '--user', 'alice'], { env, cwd: serverDir });
  assert.equal(here.code, 0, here.stderr);
  assert.ok(here.stderr.startsWith(`using sqlite:${store}\n`), here.stderr);
  assert.doesNotMatch(here.stderr, /creating a new one/);

  const elsewhere = await cli(['token', 'create', '--user', 'alice'], { env, cwd: otherDir });
  assert.equal(elsewhere.code, 0, elsewhere.stderr);
  const other = join(realpathSync(otherDir), 'data/plantstore.db');
  assert.ok(elsewhere.stderr.startsWith(`using sqlite:${other}\nno store at ${other} yet: creating a new one`), elsewhere.stderr);
  assert.match(elsewhere.stdout, /^pst_\S+\n$/, 'stdout holds the secret only');
});
