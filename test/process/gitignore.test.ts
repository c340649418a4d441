import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

const GITIGNORE = fileURLToPath(new URL('../../.gitignore', import.meta.url));

test('git ignores exports, their temporary files, backups and the default data folder: they hold secrets', (t) => {
  const files = [
    'plantstore.ndjson',
    'move.ndjson',
    '.plantstore.ndjson.1a2b3c4d-4242.0123456789ab.tmp',
    '.backup.db.1a2b3c4d-4242.0123456789ab.tmp',
    '.backup.db.1a2b3c4d-4242.0123456789ab.tmp-journal',
    'backup.db',
    'data/plantstore.db',
    'data/plantstore.db.lock',
  ];
  // The project's .gitignore in a repository of its own, so that the test needs no checkout (CI runs
  // some Node releases on a copy without .git). --no-index: whether each path would be ignored.
  const repo = mkdtempSync(join(tmpdir(), 'plantstore-gitignore-'));
  t.after(() => rmSync(repo, { recursive: true, force: true }));
  assert.equal(spawnSync('git', ['init', '-q'], { cwd: repo }).status, 0, 'git init');
  copyFileSync(GITIGNORE, join(repo, '.gitignore'));
  const res = spawnSync('git', ['check-ignore', '--no-index', ...files], { cwd: repo, encoding: 'utf8' });
  assert.equal(res.error, undefined);
  assert.deepEqual(res.stdout.split('\n').filter(Boolean), files);
});
