import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
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

test('--config, export, import and backup files are relative to the working directory the command is given', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'settings.env'), 'DATABASE_URL=sqlite:./here.db\n');
  const env = { DATABASE_URL: undefined };
  const at = (args: string[]) => cli(['--config', 'settings.env', ...args], { env, cwd: dir });
  const created = await at(['token', 'create', '--user', 'alice']);
  assert.equal(created.code, 0, created.stderr);
  assert.ok(created.stderr.startsWith(`using sqlite:${join(dir, 'here.db')}\n`), created.stderr);

  const exported = await at(['export', '--out', 'out.ndjson']);
  assert.equal(exported.code, 0, exported.stderr);
  assert.ok(existsSync(join(dir, 'out.ndjson')));
  const imported = await cli(['import', 'out.ndjson'], { env: { DATABASE_URL: 'sqlite:copy.db' }, cwd: dir });
  assert.equal(imported.code, 0, imported.stderr);
  assert.match(imported.stderr, /imported out\.ndjson /);
  assert.ok(existsSync(join(dir, 'copy.db')));
  const missing = await at(['import', 'missing.ndjson']);
  assert.equal(missing.code, 1);
  assert.equal(missing.stderr, "plantstore: cannot read missing.ndjson: ENOENT: no such file or directory, open 'missing.ndjson'\n", 'the file is named as given');

  const backup = await at(['backup', '--out', 'backup.db']);
  assert.equal(backup.code, 0, backup.stderr);
  assert.match(backup.stdout, new RegExp(`to ${join(dir, 'backup.db')}: `));
  assert.ok(existsSync(join(dir, 'backup.db')));
});
