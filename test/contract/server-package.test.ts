import assert from 'node:assert/strict';
import { lstatSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { spawnServer, type CliResult } from '../helpers/process.js';
import { ROOT } from '../helpers/checkout.js';
import { prebuiltHost, type PrebuiltHost } from '../helpers/prebuilt-host.js';
import { copyCheckout, emptyProject, npm, pack, run, type Packed } from '../helpers/packages.js';

/**
 * The server as a package: `npm pack` in a copy of the checkout (its prepare script builds dist/ there),
 * then `npm install` of the tarball into an empty project, as docs/production.md tells a user to, the
 * project allowing better-sqlite3's install script (npm 11's allowScripts), which downloads its prebuilt
 * addon (from a stand-in for its release host: test/helpers/prebuilt-host.ts). @plantstore/client is not
 * on the registry: the tarball carries it (bundleDependencies). Then
 * `plantstore serve` runs from that project, with nothing of the checkout.
 */

const base = mkdtempSync(join(tmpdir(), 'plantstore-server-package-'));
after(() => rmSync(base, { recursive: true, force: true }));
let packed: Packed;
let project: string;
let installed: CliResult;

// Building and packing take a while on a loaded 2-core machine; each command is bounded on its own, by
// a guard against hangs (test/helpers/packages.ts), and nothing bounds them all: how long they take
// depends on what else the machine runs.
let checkout: string;
let host: PrebuiltHost;

before(async () => {
  checkout = copyCheckout(join(base, 'checkout'));
  packed = await pack(checkout, base);
  project = emptyProject(join(base, 'project'), { name: 'runs-plantstore', allowScripts: { 'better-sqlite3': true } });
  // prebuild-install, better-sqlite3's install script, downloads the addon from the host npm's
  // environment names (npm warns that it does not know the setting: it is prebuild-install's).
  host = await prebuiltHost();
  after(() => host.close());
  installed = await npm(['install', '--prefer-offline', packed.tarball], project, host.env);
});

test('npm pack builds the server and ships bin/, dist/ with the migrations and the client bundled; no sources, tests or maps', () => {
  assert.match(packed.tarball, /plantstore-1\.0\.0\.tgz$/);
  const needed = [
    'package.json', 'README.md', 'CHANGELOG.md', 'LICENSE', 'bin/plantstore.js', 'dist/cli/index.js', 'dist/client.js', 'dist/client.d.ts',
    'node_modules/@plantstore/client/package.json', 'node_modules/@plantstore/client/dist/index.js', 'node_modules/@plantstore/client/dist/index.d.ts',
    // The SQLite worker threads: their CommonJS entry and their modules (src/store/sqlite/workers/start.ts).
    'dist/store/sqlite/workers/entry.cjs',
    ...['quick-check', 'checkpoint', 'wal-sync', 'backup-copy'].map((name) => `dist/store/sqlite/workers/${name}.js`),
  ];
  for (const file of needed) assert.ok(packed.files.includes(file), `${file} is in the tarball`);
  for (const backend of ['sqlite', 'postgres']) {
    assert.ok(packed.files.some((f) => f.startsWith(`dist/store/migrations/${backend}/`) && f.endsWith('.sql')), `${backend} migrations`);
  }
  // prepack took "prepare" out of the tarball's package.json (scripts/pack.mjs) and postpack put it back.
  assert.equal(readFileSync(join(checkout, 'package.json'), 'utf8'), readFileSync(join(ROOT, 'package.json'), 'utf8'));
  const stray = packed.files.filter((f) => /^(src|test|bench|scripts|docs|packages)\//.test(f) || f.endsWith('.map') || f.endsWith('.ts') && !f.endsWith('.d.ts'));
  assert.deepEqual(stray, []);
});

test('the tarball installs into an empty project with no registry copy of @plantstore/client: the bundled one is used', () => {
  assert.ok(!lstatSync(join(project, 'node_modules/plantstore')).isSymbolicLink(), 'a copy, not a link to a checkout');
  const lock = JSON.parse(readFileSync(join(project, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string; inBundle?: boolean }> };
  const bundled = lock.packages['node_modules/plantstore/node_modules/@plantstore/client'];
  assert.equal(bundled?.version, '1.0.0');
  assert.equal(bundled.inBundle, true);
  assert.equal(lock.packages['node_modules/@plantstore/client'], undefined, 'nothing fetched besides the bundled copy');
  // Nothing of plantstore's own for the project to review: its prepare script builds a checkout only.
  const manifest = JSON.parse(readFileSync(join(project, 'node_modules/plantstore/package.json'), 'utf8')) as { scripts: object };
  assert.equal('prepare' in manifest.scripts, false);
  assert.doesNotMatch(installed.stderr, /plantstore@1\.0\.0 \(/, 'npm names no script of plantstore for review');
  // better-sqlite3's install script ran (the project allowed it): it asked for its prebuilt addon, and
  // the addon is there.
  assert.ok(host.requests.some((path) => path.endsWith('.tar.gz')), `the install script asked for its addon: ${host.requests.join(', ')}`);
  assert.ok(lstatSync(join(project, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node')).isFile(), installed.stderr);
});

test('plantstore/client imports from the installed server package, and is the bundled @plantstore/client', async () => {
  const program = "const a = await import('plantstore/client'); console.log(typeof a.PlantStore, typeof a.PlantStoreError, typeof a.toPlantId);";
  const result = await run(process.execPath, ['--input-type=module', '-e', program], project);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stdout.trim(), 'function function function');
});

test('plantstore serve runs from the installed package: a token from its CLI, an authenticated create and list, a clean stop', async (t) => {
  const bin = join(project, 'node_modules/.bin/plantstore');
  // The default store, ./data/plantstore.db in the project, as a user would start it there.
  const env = { DATABASE_URL: 'sqlite:./data/plantstore.db' };
  const created = await run(process.execPath, [bin, 'token', 'create', '--user', 'alice'], project, env);
  assert.equal(created.code, 0, created.stderr);
  const token = created.stdout.trim().split('\n').at(-1)!;
  const server = spawnServer(t, env, project, bin);
  const url = await server.ready;
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const create = await fetch(`${url}/plants`, { method: 'POST', headers, body: '{"id": 9223372036854775807, "name": "Monstera"}' });
  assert.equal(create.status, 200, await create.clone().text());
  assert.deepEqual(await create.json(), { name: 'Monstera' });
  const listed = await fetch(`${url}/plants`, { headers });
  assert.deepEqual(await listed.json(), [{ name: 'Monstera' }]);
  assert.equal((await fetch(`${url}/plants`)).status, 401, 'no token, no plants');
  assert.equal(await server.stop('SIGTERM'), 0, server.errors());
  // The create was synced by the WAL sync thread; the checkpoint thread would log its failure to start.
  assert.doesNotMatch(server.logs(), /"level":(50|60)/, 'nothing logged as an error');
});

// better-sqlite3 13, the driver where Node-API 10 exists (Node.js 22.14 and later, 24), carries its
// binaries in its package; 12, Node.js 20's, is compiled by its install script (src/store/sqlite/driver.ts).
const PREBUILT_DRIVER = Number(process.versions.napi ?? 0) >= 10;

test(`installed with --ignore-scripts, the server ${PREBUILT_DRIVER ? 'still opens a SQLite store (better-sqlite3 13 ships its binary)' : 'cannot open a SQLite store, and says the addon was not found'}`, async (t) => {
  // What docs/install.md tells a user who skipped better-sqlite3's install script to expect.
  const skipped = emptyProject(join(base, 'scripts-skipped'), { name: 'skips-scripts' });
  t.after(() => rmSync(skipped, { recursive: true, force: true }));
  await npm(['install', '--ignore-scripts', '--prefer-offline', packed.tarball], skipped);
  const bin = join(skipped, 'node_modules/.bin/plantstore');
  const result = await run(process.execPath, [bin, 'token', 'create', '--user', 'alice'], skipped, { DATABASE_URL: 'sqlite:./data/plantstore.db' });
  if (PREBUILT_DRIVER) {
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^pst_/m);
  } else {
    assert.equal(result.code, 1, result.stdout);
    assert.match(result.stderr, /Could not locate the bindings file/);
  }
});
