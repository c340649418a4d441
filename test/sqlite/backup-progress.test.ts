import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli } from '../helpers/process.js';
import { runCliOnTerminal } from '../helpers/pty.js';
import { tempDir } from '../helpers/transfer.js';

test('backup shows the pages copied, then its check, on a terminal; the summary alone elsewhere, nothing with --quiet', async (t) => {
  const dir = tempDir(t);
  const env = { DATABASE_URL: `sqlite:${join(dir, 'store.db')}` };
  assert.equal((await runCli(['migrate'], env)).code, 0);
  const shown = await runCliOnTerminal(['backup', '--out', join(dir, 'a.db')], env);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stderr, /\rbacking up: \d+ of \d+ pages \(\d+%\), \d+\/s, 0:\d\d elapsed[^\r]*\x1b\[K/);
  assert.match(shown.stderr, /\rbacking up: checking the copy \(integrity_check\), 0:\d\d elapsed\x1b\[K/);
  assert.match(shown.stdout, /^Backed up sqlite:\S+ to \S+a\.db: \d+ bytes, 0 plants, integrity_check ok\.\n$/);

  const plain = await runCli(['backup', '--out', join(dir, 'b.db')], env);
  assert.equal(plain.code, 0);
  assert.match(plain.stderr, /^using sqlite:\S+\n$/);

  const quiet = await runCliOnTerminal(['backup', '--quiet', '--out', join(dir, 'c.db')], env);
  assert.equal(quiet.code, 0);
  assert.equal(`${quiet.stdout}${quiet.stderr}`, '');
  assert.ok(existsSync(join(dir, 'c.db')));
});
