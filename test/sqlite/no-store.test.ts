import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { cli } from '../helpers/cli.js';
import { FATAL, logLines, runCli } from '../helpers/process.js';

function emptyDir(t: TestContext): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'plantstore-no-store-')));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Everything under `dir`, as relative paths. */
function contents(dir: string): string[] {
  return readdirSync(dir, { recursive: true }).map(String).sort();
}

/** The default store (DATABASE_URL unset), as the commands name it. */
const DEFAULT = { DATABASE_URL: undefined };

test('commands that only read (or have nothing to act on) create no store: they say "no store at …" and exit 1', async (t) => {
  const dir = emptyDir(t);
  const store = join(dir, 'data/plantstore.db');
  for (const args of [['token', 'list'], ['webhook', 'list'], ['webhook', 'deliveries', 'ep_x'], ['token', 'revoke', '1'], ['webhook', 'remove', 'ep_x']]) {
    const res = await cli(args, { env: DEFAULT, cwd: dir });
    assert.equal(res.code, 1, `${args.join(' ')}: ${res.stderr}`);
    assert.match(res.stderr, new RegExp(`^using sqlite:${store}\nplantstore: no store at ${store}: there (is|are) no [a-z ]+ \\(run the command in the server's directory, or give it the server's DATABASE_URL\\)\n$`), args.join(' '));
    assert.equal(res.stdout, '', args.join(' '));
    assert.deepEqual(contents(dir), [], `${args.join(' ')} created nothing`);
  }
});

test('an import of a file that is not an export fails before any store or lock file is created', async (t) => {
  const dir = emptyDir(t);
  const file = join(emptyDir(t), 'notes.txt');
  writeFileSync(file, 'shopping list\n');
  const res = await cli(['import', file], { env: DEFAULT, cwd: dir });
  assert.equal(res.code, 1, res.stderr);
  assert.match(res.stderr, /^plantstore: line 1 is not a plantstore export header/);
  assert.deepEqual(contents(dir), []);
});

// `serve` runs in a process of its own: it exits when start-up fails.
test('a server that fails on a port in use leaves no new store behind', async (t) => {
  const dir = emptyDir(t);
  const taken = createServer();
  taken.listen(0, '127.0.0.1');
  await once(taken, 'listening');
  t.after(() => taken.close());
  const port = (taken.address() as { port: number }).port;
  for (const args of [['--port', String(port)], ['--port', '0', '--metrics-port', String(port)]]) {
    const res = await runCli(['serve', ...args], { ...DEFAULT, LOG_LEVEL: 'info' }, dir);
    assert.equal(res.code, 1, res.stdout);
    assert.deepEqual(logLines(res.stdout).map((l) => l.level), [FATAL], res.stdout);
    assert.match(logLines(res.stdout)[0]?.msg ?? '', /EADDRINUSE/);
    assert.deepEqual(contents(dir), [], `serve ${args.join(' ')} created nothing`);
  }
});

test('a command that creates the store says so once, in its own words', async (t) => {
  const dir = emptyDir(t);
  const store = join(dir, 'data/plantstore.db');
  const res = await cli(['token', 'create', '--user', 'alice'], { env: DEFAULT, cwd: dir });
  assert.equal(res.code, 0, res.stderr);
  assert.equal(res.stderr.split('no store at').length - 1, 1, res.stderr);
  assert.ok(res.stderr.startsWith(`using sqlite:${store}\nno store at ${store} yet: creating a new one`), res.stderr);
  assert.deepEqual(contents(dir), ['data', 'data/plantstore.db']);
});
