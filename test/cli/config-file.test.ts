import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { cli } from '../helpers/cli.js';
import { tempDir } from '../helpers/transfer.js';

// The settings file as a user runs it, in-process: what serve --help shows of it, and where --help names it.

test('serve --help says where each value came from: a flag over the environment over the file', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'p.env');
  writeFileSync(file, 'PORT=9001\nHOST=0.0.0.0\nLOG_LEVEL=warn\nDATABASE_URL=postgres://app:hunter2@127.0.0.1:1/plants\n');
  const res = await cli(['serve', '--help', '--port', '9003', '--config', file], { env: { PORT: '9002', HOST: '::1', LOG_LEVEL: undefined, DATABASE_URL: undefined } });
  assert.equal(res.code, 0, res.stderr);
  assert.match(res.stdout, new RegExp(`Settings file: ${file.replaceAll('.', '\\.')}\\.`));
  assert.match(res.stdout, /--port N\s+TCP port[^]*?now: 9003 \(from flag\)/);
  assert.match(res.stdout, /--host VALUE\s+Address[^]*?now: ::1 \(from environment\)/);
  assert.match(res.stdout, new RegExp(`--log-level VALUE[^]*?now: warn \\(from ${file.replaceAll('.', '\\.')}:3\\)`));
  assert.match(res.stdout, /now: postgres:\/\/app:\*\*\*@127\.0\.0\.1:1\/plants \(from\s/);
  assert.ok(!res.stdout.includes('hunter2'), 'the password is never shown');
  assert.doesNotMatch(res.stdout, /--docs VALUE[^-]*now:/, 'a setting at its default has no "now"');

  const refused = await cli(['serve', '--help', '--config', file], { env: { PORT: 'http' } });
  assert.equal(refused.code, 0, 'help is still shown');
  assert.match(refused.stdout, /\n\nThe settings as given now are refused: PORT must be a whole number from 0 to 65535, got "http"\n$/);
  assert.doesNotMatch(refused.stdout, /now: /);
});

test('--help names --config: the main help and the help of the commands that use a store', async () => {
  assert.match((await cli(['--help'])).stdout, /^ {2}--config FILE {9}Read settings from FILE, KEY=value lines \(also PLANTSTORE_CONFIG=FILE\); any command$/m);
  for (const args of [['migrate', '--help'], ['export', '--help'], ['import', '--help'], ['backup', '--help'], ['token', '--help'], ['webhook', '--help'], ['doctor', '--help']]) {
    assert.match((await cli(args)).stdout, /--config FILE/, args.join(' '));
  }
});

