import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { create, testApp, testDatabase } from '../helpers/app.js';
import { cli } from '../helpers/cli.js';
import { runCli } from '../helpers/process.js';
import { runCliOnTerminal } from '../helpers/pty.js';
import { tempDir } from '../helpers/transfer.js';

// Progress of export and import as users see it: redrawn on a terminal (a real pseudo-terminal here),
// a summary line elsewhere, nothing with --quiet; never on stdout.

/** A store of three plants, and its environment for the CLI. */
async function source(t: Parameters<typeof testApp>[0]) {
  const app = await testApp(t);
  const alice = await app.token('alice');
  for (const [i, name] of ['a', 'b', 'c'].entries()) assert.equal((await create(app.app, alice, { id: i + 1, name })).statusCode, 200);
  return { DATABASE_URL: app.url };
}

/** The progress lines drawn: each starts with a carriage return and ends by clearing the rest of the line. */
const drawn = (terminal: string, label: string) => [...terminal.matchAll(new RegExp(`\\r(${label}: [^\\r\\n\\x1b]*)\\x1b\\[K`, 'g'))].map((m) => m[1]);

test('export and import draw their progress on a terminal, then clear it for the summary', async (t) => {
  const env = await source(t);
  const file = join(tempDir(t), 'e.ndjson');
  const exported = await runCliOnTerminal(['export', '--out', file], env);
  assert.equal(exported.code, 0, exported.stderr);
  assert.equal(exported.stdout, '');
  const lines = drawn(exported.stderr, 'exporting');
  assert.ok(lines.length > 0, JSON.stringify(exported.stderr));
  assert.match(lines.at(-1) ?? '', /^exporting: \d+ of 4 records \(\d+%\), \d+\/s, 0:\d\d elapsed/);
  assert.match(exported.stderr, /\r\x1b\[Kexported 3 plants, 1 tokens, 0 webhook endpoints, 0 pending webhook events to .*e\.ndjson in \d+\.\d s/);

  const target = { DATABASE_URL: (await testDatabase(t)).url };
  const imported = await runCliOnTerminal(['import', file], target);
  assert.equal(imported.code, 0, imported.stderr);
  assert.match(drawn(imported.stderr, 'importing').at(-1) ?? '', /^importing: \d of 4 records \(\d+%\), \d+\/s, 0:\d\d elapsed/);
  assert.match(imported.stderr, /plants: 3 imported, 0 already present/);
});

test('an export to stdout with stderr on a terminal: stdout holds the export alone', async (t) => {
  const env = await source(t);
  const res = await runCliOnTerminal(['export'], env);
  assert.equal(res.code, 0, res.stderr);
  assert.ok(drawn(res.stderr, 'exporting').length > 0);
  const lines = res.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 5, 'the header and four records');
  for (const line of lines) JSON.parse(line);
});

test('without a terminal only the summary is printed; --quiet prints nothing, on a terminal or not', async (t) => {
  const env = await source(t);
  const dir = tempDir(t);
  const plain = await cli(['export', '--out', join(dir, 'a.ndjson')], { env });
  assert.equal(plain.code, 0);
  assert.match(plain.stderr, /^using \S+\nexported 3 plants, [^\n]*\n$/);
  assert.doesNotMatch(plain.stderr, /exporting:|\r/);

  for (const run of [runCli, runCliOnTerminal]) {
    const quiet = await run(['export', '--quiet', '--out', join(dir, `${run.name}.ndjson`)], env);
    assert.equal(quiet.code, 0, quiet.stderr);
    assert.equal(`${quiet.stdout}${quiet.stderr}`, '', run.name);
    const target = { DATABASE_URL: (await testDatabase(t)).url };
    const imported = await run(['import', '-q', join(dir, `${run.name}.ndjson`)], target);
    assert.equal(imported.code, 0, imported.stderr);
    assert.equal(`${imported.stdout}${imported.stderr}`, '', run.name);
  }
  assert.equal(readFileSync(join(dir, 'runCli.ndjson'), 'utf8').split('\n').length, 6);

  const failed = await cli(['import', '--quiet', join(dir, 'missing.ndjson')], { env });
  assert.equal(failed.code, 1);
  assert.match(failed.stderr, /^plantstore: cannot read .*missing\.ndjson/, 'errors are still printed');
});
