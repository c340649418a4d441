import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { create, list, testApp, testDatabase } from '../helpers/app.js';
import { cli } from '../helpers/cli.js';
import { appOn, records, tempDir } from '../helpers/transfer.js';

test('plantstore export and import move a store through a file, and importing again changes nothing', async (t) => {
  const source = await testApp(t);
  const alice = await source.token('alice');
  for (const [id, name] of [['9223372036854775807', 'max'], ['-9223372036854775808', 'min'], ['9007199254740993', '2^53+1']]) {
    assert.equal((await create(source.app, alice, `{"id":${id},"name":"${name}"}`)).statusCode, 200);
  }
  const dir = tempDir(t);
  const file = join(dir, 'backup.ndjson');
  const exported = await cli(['export', '--out', file], { env: { DATABASE_URL: source.url } });
  assert.equal(exported.code, 0, exported.stderr);
  assert.equal(exported.stdout, '', 'stdout is left for the export itself');
  assert.match(exported.stderr, /^using /);
  assert.match(exported.stderr, /exported 3 plants, 1 tokens, 0 webhook endpoints, 0 pending webhook events to .*backup\.ndjson in \d+\.\d s/);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.match(readFileSync(file, 'utf8'), /"id":9007199254740993,"name":"2\^53\+1"/);

  const piped = await cli(['export'], { env: { DATABASE_URL: source.url } });
  assert.equal(piped.code, 0, piped.stderr);
  assert.equal(piped.stdout.split('\n').slice(1).join('\n'), records(file), 'stdout when no --out is given');

  const target = await testDatabase(t);
  const env = { DATABASE_URL: target.url };
  const imported = await cli(['import', file], { env });
  assert.equal(imported.code, 0, imported.stderr);
  assert.match(imported.stderr, /imported .*backup\.ndjson \(exported from \w+ at .*\) in \d+\.\d s:\n {2}plants: 3 imported, 0 already present\n {2}tokens: 1 imported/);
  const again = await cli(['import', file], { env });
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stderr, /plants: 0 imported, 3 already present\n {2}tokens: 0 imported, 1 already present/);
  const { app } = await appOn(t, target.config);
  assert.deepEqual((await list(app, alice, '?limit=10')).json(), [{ name: 'max' }, { name: 'min' }, { name: '2^53+1' }]);
});

test('plantstore import: a conflict exits 1 and says what to do, --skip-conflicts exits 0; a bad call exits 2', async (t) => {
  const source = await testApp(t);
  const alice = await source.token('alice');
  await create(source.app, alice, { id: 1, name: 'mine' });
  const dir = tempDir(t);
  const file = join(dir, 'a.ndjson');
  assert.equal((await cli(['export', '--out', file], { env: { DATABASE_URL: source.url } })).code, 0);
  const text = readFileSync(file, 'utf8');
  const changed = join(dir, 'changed.ndjson');
  writeFileSync(changed, text.replace('"name":"mine"', '"name":"theirs"'));
  const env = { DATABASE_URL: (await testDatabase(t)).url };
  assert.equal((await cli(['import', changed], { env })).code, 0);

  const conflict = await cli(['import', file], { env });
  assert.equal(conflict.code, 1);
  assert.match(conflict.stderr, /plantstore: conflict: plant owner "alice", id 1 is in the store with another name\n.*--skip-conflicts/);
  const skipped = await cli(['import', '--skip-conflicts', file], { env });
  assert.equal(skipped.code, 0, skipped.stderr);
  assert.match(skipped.stderr, /plants: 0 imported, 0 already present, 1 conflicts skipped/);

  const newer = join(dir, 'newer.ndjson');
  writeFileSync(newer, text.replace('"version":1', '"version":7'));
  const cases: Array<[string[], number, RegExp]> = [
    [['import'], 2, /import needs one FILE/],
    [['import', file, file], 2, /import needs one FILE/],
    [['import', '--bogus', file], 2, /unknown option --bogus; see "plantstore import --help"/],
    [['export', '--out', ''], 2, /--out needs a file name/],
    [['import', join(dir, 'missing.ndjson')], 1, /cannot read .*missing\.ndjson: ENOENT/],
    [['import', newer], 1, /export format version 7; this plantstore reads version 1 only/],
  ];
  for (const [args, code, message] of cases) {
    const res = await cli(args, { env });
    assert.equal(res.code, code, `${args.join(' ')}: ${res.stderr}`);
    assert.match(res.stderr, message, args.join(' '));
  }
  const help = await cli(['--help']);
  assert.match(help.stdout, /export \[--out FILE\]/);
  assert.match(help.stdout, /import FILE/);
  assert.match((await cli(['import', '--help'])).stdout, /--skip-conflicts/);
});

test('plantstore export --out: an existing file only with --force; a pipe or a device is written into, never replaced', async (t) => {
  const source = await testApp(t);
  const alice = await source.token('alice');
  await create(source.app, alice, { id: 1, name: 'one' });
  const dir = tempDir(t);
  const env = { DATABASE_URL: source.url };
  const existing = join(dir, 'existing.ndjson');
  writeFileSync(existing, 'keep me');
  const refused = await cli(['export', '--out', existing], { env });
  assert.equal(refused.code, 1, refused.stderr);
  assert.match(refused.stderr, /exists already; choose another file, or add --force to replace it/);
  assert.equal(readFileSync(existing, 'utf8'), 'keep me');
  const forced = await cli(['export', '--out', existing, '--force'], { env });
  assert.equal(forced.code, 0, forced.stderr);
  assert.match(readFileSync(existing, 'utf8'), /"name":"one"/);

  // Renamed over, a pipe (or /dev/null, for root) would become a plain file: it is written into instead.
  const pipe = join(dir, 'pipe');
  execFileSync('mkfifo', [pipe]);
  const reader = spawn('cat', [pipe]);
  let read = '';
  reader.stdout.on('data', (d: Buffer) => (read += d.toString('utf8')));
  const readerDone = once(reader, 'close');
  const piped = await cli(['export', '--out', pipe], { env });
  await readerDone;
  assert.equal(piped.code, 0, piped.stderr);
  assert.equal(read, readFileSync(existing, 'utf8').replace(/"exportedAt":"[^"]*"/, `"exportedAt":${JSON.stringify(JSON.parse(read.split('\n')[0] ?? '{}').exportedAt)}`));
  assert.ok(statSync(pipe).isFIFO(), 'still a pipe');
  assert.deepEqual(readdirSync(dir).sort(), ['existing.ndjson', 'pipe'], 'no temporary file left');

  const directory = await cli(['export', '--out', dir], { env });
  assert.equal(directory.code, 1);
  assert.match(directory.stderr, /it is a directory; name a file in it/);
});

test('plantstore import names the line that is not valid UTF-8, whichever line of a run of lines it is', async (t) => {
  const source = await testApp(t);
  const dir = tempDir(t);
  const exported = join(dir, 'empty.ndjson');
  assert.equal((await cli(['export', '--out', exported], { env: { DATABASE_URL: source.url } })).code, 0);
  const header = Buffer.from(readFileSync(exported, 'utf8').split('\n')[0] ?? '', 'utf8');
  const bad = Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]); // {"\xff\xfe"}
  const newline = Buffer.from('\n');
  const cases: Array<[string, Buffer[], number]> = [
    ['the line after the header', [header, newline, bad, newline], 2],
    ['a later line, the lines before it valid', [header, newline, Buffer.from('{}\n{}\n'), bad, newline, Buffer.from('{}\n')], 4],
    ['a last line without its newline', [header, newline, bad], 2],
  ];
  const env = { DATABASE_URL: (await testDatabase(t)).url };
  for (const [label, parts, line] of cases) {
    const file = join(dir, 'bad.ndjson');
    writeFileSync(file, Buffer.concat(parts));
    const res = await cli(['import', file], { env });
    assert.equal(res.code, 1, `${label}: ${res.stderr}`);
    assert.ok(res.stderr.endsWith(`plantstore: line ${line} is not valid UTF-8\n`), `${label}: ${res.stderr}`);
  }
});
