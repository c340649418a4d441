import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

test('in the checkout, git ignores exports, their temporary files, backups and the default data folder: they hold secrets', (t) => {
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
  // --no-index: whether each path would be ignored, tracked or not; exit 1 when none is.
  const res = spawnSync('git', ['check-ignore', '--no-index', ...files], { cwd: ROOT, encoding: 'utf8' });
  if (res.error || /not a git repository/.test(res.stderr)) return t.skip('not a git checkout');
  assert.deepEqual(res.stdout.split('\n').filter(Boolean), files);
});
