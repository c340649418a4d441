import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { testDatabase } from '../helpers/app.js';
import { cli } from '../helpers/cli.js';
import { fatalMessages, runCli, startServer } from '../helpers/process.js';
import { tempDir } from '../helpers/transfer.js';

// The settings file as a user runs it: `--config FILE` on any command, PLANTSTORE_CONFIG for serve. Serve
// runs as a process, and so does reading a FIFO or a device, which a regression would hang or grow
// without bound; the rest in-process, in a working directory of its own where a store made where none
// should be would show, here and in test/cli/config-file.test.ts.

test('serve reads its settings from PLANTSTORE_CONFIG, and migrate from --config: the store the file names is used', async (t) => {
  const dir = tempDir(t);
  const db = await testDatabase(t);
  const file = join(dir, 'plantstore.env');
  writeFileSync(file, `# the store\nDATABASE_URL="${db.url}"\nLOG_LEVEL=info # comment\n`);
  const migrated = await cli(['migrate', '--config', file], { env: { DATABASE_URL: undefined }, cwd: dir });
  assert.equal(migrated.code, 0, migrated.stderr);
  assert.match(migrated.stdout, /migrations? .*; the \w+ store is up to date/);
  assert.ok(!existsSync(join(dir, 'data')), 'not the default store');
  const server = await startServer(t, { DATABASE_URL: undefined, PLANTSTORE_CONFIG: file }, dir);
  const ready = await fetch(`${server.url}/readyz`);
  assert.equal(ready.status, 200);
  assert.ok(!existsSync(join(dir, 'data')), 'the server used the file\'s store too');
});

test('a settings file with an unknown key or a bad value stops every command with the file and line, exit 2, no stack', async (t) => {
  const dir = tempDir(t);
  const typo = join(dir, 'typo.env');
  writeFileSync(typo, 'PORT=8080\nDATABSE_URL=sqlite:./x.db\n');
  const bad = join(dir, 'bad.env');
  writeFileSync(bad, '# three\n\nPORT=http\n');
  const env = { DATABASE_URL: undefined, PORT: undefined };
  for (const [args, message] of [
    [['migrate', '--config', typo], `${typo}:2: unknown setting DATABSE_URL (did you mean DATABASE_URL?); the settings are listed by "plantstore serve --help"`],
    [['token', 'list', `--config=${bad}`], `${bad}:3: PORT must be a whole number from 0 to 65535, got "http"`],
    [['--config', join(dir, 'missing.env'), 'doctor', '--json'], undefined],
    [['migrate', '--config', join(dir, 'missing.env')], `cannot read the settings file ${join(dir, 'missing.env')}: no such file`],
  ] as Array<[string[], string | undefined]>) {
    const res = await cli(args, { env, cwd: dir });
    if (message === undefined) {
      // doctor reports a refused configuration as a finding, with exit 1.
      assert.equal(res.code, 1, res.stderr);
      assert.match(JSON.parse(res.stdout).findings[0].message, /^refused: cannot read the settings file .*missing\.env: no such file$/);
      continue;
    }
    assert.equal(res.code, 2, `${args.join(' ')}: ${res.stderr}`);
    assert.equal(res.stderr, `plantstore: ${message}\n`, args.join(' '));
    assert.doesNotMatch(res.stderr, /\n\s+at /, 'no stack');
  }
  assert.ok(!existsSync(join(dir, 'data')) && !existsSync(join(dir, 'x.db')), 'no store was created');

  const serve = await cli(['serve', '--config', bad], { env: { ...env, LOG_FORMAT: 'json' }, cwd: dir });
  assert.equal(serve.code, 2);
  assert.equal(fatalMessages(serve.stdout), `${bad}:3: PORT must be a whole number from 0 to 65535, got "http"`);

  const cases: Array<[string[], RegExp]> = [
    [['migrate', '--config', dir], /^plantstore: cannot read the settings file .*: it is a directory\n$/],
    [['migrate', '--config'], /^plantstore: --config needs a FILE/],
    [['migrate', '--config', '--json'], /^plantstore: --config needs a FILE/],
    [['migrate', '--config', typo, '--config', bad], /^plantstore: --config is given twice; one settings file is read/],
  ];
  for (const [args, message] of cases) {
    const res = await cli(args, { env, cwd: dir });
    assert.equal(res.code, 2, args.join(' '));
    assert.match(res.stderr, message, args.join(' '));
  }
});

test('a settings file that is no regular file, or too large, is refused at once: a FIFO is not waited on, a device not read', async (t) => {
  const dir = tempDir(t);
  const fifo = join(dir, 'fifo.env');
  execFileSync('mkfifo', [fifo]);
  const large = join(dir, 'large.env');
  writeFileSync(large, `PORT=9000\n${'# a comment\n'.repeat(6000)}`);
  const env = { DATABASE_URL: undefined, PORT: undefined };
  const notRegular = 'it is not a regular file (a device, a FIFO or a socket)';
  const tooLarge = 'it is larger than 64 KiB, too large for a settings file';
  for (const [file, why] of [[fifo, notRegular], ['/dev/zero', notRegular], ['/dev/urandom', notRegular], [large, tooLarge]] as Array<[string, string]>) {
    // Before, a FIFO hung until killed, and /dev/zero grew the process by gigabytes: a bound well short of
    // that, which only a process of its own can be held to. A regular file, however large, cannot hang.
    const run = (args: string[]) => (file === large ? cli(args, { env, cwd: dir }) : runCli(args, env, dir, { hangMs: 20_000 }));
    const migrate = await run(['migrate', '--config', file]);
    assert.equal(migrate.code, 2, `${file}: ${migrate.stderr}`);
    assert.equal(migrate.stderr, `plantstore: cannot read the settings file ${file}: ${why}\n`);
    const doctor = await run(['doctor', '--json', '--config', file]);
    assert.equal(doctor.code, 1, `${file}: ${doctor.stderr}`);
    assert.equal(JSON.parse(doctor.stdout).findings[0].message, `refused: cannot read the settings file ${file}: ${why}`);
  }
  assert.ok(!existsSync(join(dir, 'data')), 'no store was created');
});

test('a PostgreSQL password in the settings file is never logged, nor printed in a refusal', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'p.env');
  writeFileSync(file, 'DATABASE_URL=postgres://app:hunter2@127.0.0.1:1/plants\nDATABASE_STARTUP_TIMEOUT=1s\nLOG_FORMAT=json\n');
  const env = { DATABASE_URL: undefined, LOG_FORMAT: undefined, DATABASE_STARTUP_TIMEOUT: undefined };
  const serve = await runCli(['serve', '--port', '0'], { ...env, PLANTSTORE_CONFIG: file }, dir);
  assert.equal(serve.code, 1, serve.stdout);
  assert.match(fatalMessages(serve.stdout), /PostgreSQL at 127\.0\.0\.1:1\/plants/);
  assert.ok(!`${serve.stdout}${serve.stderr}`.includes('hunter2'), `${serve.stdout}${serve.stderr}`);
  const doctor = await cli(['doctor', '--config', file], { env });
  assert.equal(doctor.code, 1);
  assert.match(doctor.stdout, /^note\s+setting: DATABASE_URL=postgres:\/\/app:\*\*\*@127\.0\.0\.1:1\/plants \(from .*p\.env:1\)$/m);
  assert.ok(!`${doctor.stdout}${doctor.stderr}`.includes('hunter2'));
  const readable = /^attention settings: .*p\.env holds a password \(in DATABASE_URL\) and every user of this machine can read it \(chmod 600, or 640 for the server's group\)$/m;
  chmodSync(file, 0o644);
  assert.match((await cli(['doctor', '--config', file], { env })).stdout, readable);
  chmodSync(file, 0o600);
  assert.doesNotMatch((await cli(['doctor', '--config', file], { env })).stdout, readable);

  writeFileSync(file, 'DATABASE_URL=postgres://app:hunter2@127.0.0.1:99999/plants\n');
  const refused = await cli(['token', 'list', '--config', file], { env });
  assert.equal(refused.code, 2);
  assert.equal(refused.stderr, `plantstore: ${file}:1: DATABASE_URL: the port must be a whole number from 1 to 65535\n`);
});
