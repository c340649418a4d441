import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { runCli } from '../process.js';

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'plantstore-cli-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('migrate creates the store, directory included, where DATABASE_URL points (relative to the working directory)', async (t) => {
  const dir = tempDir(t);
  const res = await runCli(['migrate'], { DATABASE_URL: 'sqlite:./nested/dir/store.db' }, dir);
  assert.equal(res.code, 0, res.stderr);
  assert.ok(existsSync(join(dir, 'nested/dir/store.db')));
  assert.equal((await runCli(['migrate'], { DATABASE_URL: 'sqlite:./nested/dir/store.db' }, dir)).code, 0, 'idempotent');
});

test('the default store is ./data/plantstore.db, created on first start', async (t) => {
  const dir = tempDir(t);
  const res = await runCli(['token', 'create', '--user', 'alice'], { DATABASE_URL: undefined }, dir);
  assert.equal(res.code, 0, res.stderr);
  assert.ok(existsSync(join(dir, 'data/plantstore.db')));
});
