import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CHROMIUM, chromiumMissing, launchChromium } from '../helpers/browser.js';
import { served } from '../helpers/client.js';
import { ROOT } from '../helpers/checkout.js';
import { emptyProject, npm, pack, run, type Packed } from '../helpers/packages.js';

/**
 * @plantstore/client as a user gets it: packed from its folder alone (its prepack builds it with the
 * repository's TypeScript, nothing else), installed from the tarball into an empty project with
 * --ignore-scripts, then used from Node.js, from TypeScript and from a page in Chromium, against a real
 * plantstore server on loopback.
 */

const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');
const base = mkdtempSync(join(tmpdir(), 'plantstore-client-package-'));
after(() => rmSync(base, { recursive: true, force: true }));
let packed: Packed;
/** The project the tarball was installed into, and the installed package's folder. */
let project: string;
let installed: string;

before(async () => {
  const source = join(base, 'client');
  for (const file of ['package.json', 'tsconfig.json', 'src', 'README.md', 'CHANGELOG.md', 'LICENSE']) {
    cpSync(join(ROOT, 'packages/client', file), join(source, file), { recursive: true });
  }
  // Its only devDependency, TypeScript, as the repository has it; no dist/ was copied, so the pack builds.
  packed = await pack(source, base, { PATH: `${join(ROOT, 'node_modules/.bin')}:${process.env.PATH ?? ''}` });
  project = emptyProject(join(base, 'project'), { name: 'uses-the-client', type: 'module' });
  await npm(['install', '--ignore-scripts', '--prefer-offline', packed.tarball], project);
  installed = join(project, 'node_modules/@plantstore/client');
});

test('npm pack builds the client and ships its JavaScript, declarations, README and changelog, no sources', () => {
  assert.match(packed.tarball, /plantstore-client-1\.0\.0\.tgz$/);
  for (const file of ['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE', 'dist/index.js', 'dist/index.d.ts', 'dist/generated/openapi.d.ts']) {
    assert.ok(packed.files.includes(file), `${file} is in the tarball: ${packed.files.join(', ')}`);
  }
  assert.deepEqual(packed.files.filter((f) => !/^(dist\/.*\.(js|d\.ts)|package\.json|README\.md|CHANGELOG\.md|LICENSE)$/.test(f)), []);
});

test('the tarball installs with --ignore-scripts into an empty project and brings no other package', () => {
  const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as Record<string, unknown>;
  assert.equal(manifest.name, '@plantstore/client');
  assert.equal(manifest.private, undefined, 'publishable');
  for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies', 'bundleDependencies']) assert.equal(manifest[field], undefined, field);
  assert.deepEqual(Object.keys((manifest.scripts ?? {}) as object).filter((s) => /install$|^prepare$/.test(s)), [], 'no install scripts');
  assert.deepEqual(readdirSync(join(project, 'node_modules')).filter((n) => n !== '.package-lock.json'), ['@plantstore']);
  const lock = JSON.parse(readFileSync(join(project, 'package-lock.json'), 'utf8')) as { packages: object };
  assert.deepEqual(Object.keys(lock.packages).sort(), ['', 'node_modules/@plantstore/client']);
});

/** Creates, pages through and deletes with the installed client; prints what it saw as JSON. */
const PROGRAM = `
import { PlantStore, PlantStoreError } from '@plantstore/client';
const plants = new PlantStore({ baseUrl: process.env.API, token: process.env.TOKEN });
const seen = {};
seen.created = [
  await plants.create({ id: 9223372036854775807n, name: 'max', tag: 'int64' }),
  await plants.create({ id: '9007199254740993', name: 'past 2^53', tag: 'int64' }),
  await plants.create({ id: -9223372036854775808n, name: 'min', tag: 'int64' }),
];
seen.listed = [];
for await (const plant of plants.list({ limit: 2, tag: 'int64' })) seen.listed.push(plant.name);
// The id a double would have made of 2^53 + 1 is not the plant's: only the exact one deletes it.
try { await plants.delete('9007199254740992'); } catch (e) { seen.rounded = [e instanceof PlantStoreError, e.status, e.error]; }
await plants.delete(9007199254740993n);
await plants.delete('9223372036854775807');
try { await plants.delete('9223372036854775807'); } catch (e) { seen.again = [e instanceof PlantStoreError, e.name, e.status, e.error, e.message]; }
try { await plants.delete(2 ** 53 + 1); } catch (e) { seen.unsafe = [e.constructor.name]; }
console.log(JSON.stringify(seen));
`;

test('the installed client talks to a real server from Node.js: exact int64 ids past 2^53, every page, PlantStoreError', async (t) => {
  const { url, token, responses } = await served(t);
  writeFileSync(join(project, 'program.mjs'), PROGRAM);
  const result = await run(process.execPath, ['program.mjs'], project, { API: url, TOKEN: await token('alice') });
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(JSON.parse(result.stdout), {
    created: [{ name: 'max', tag: 'int64' }, { name: 'past 2^53', tag: 'int64' }, { name: 'min', tag: 'int64' }],
    listed: ['max', 'past 2^53', 'min'],
    rounded: [true, 404, 40401],
    again: [true, 'PlantStoreError', 404, 40401, 'The caller has no plant with this id'],
    unsafe: ['RangeError'],
  });
  assert.deepEqual(responses('GET'), [200, 200], 'three plants, two per page: two requests');
});

const TYPED = `
import { PlantStore, PlantStoreError, toPlantId, type Plant, type PlantId, type components } from '@plantstore/client';

const plants = new PlantStore({ baseUrl: 'http://127.0.0.1:8080', token: 'pst_example', retries: 0 });
const id: PlantId = 9223372036854775807n;
const created: Promise<Plant> = plants.create({ id, name: 'Monstera', tag: 'indoor' });
const listed: AsyncIterable<Plant> = plants.list({ limit: 10, signal: AbortSignal.timeout(1000) });
const exact: bigint = toPlantId('9007199254740993');
const body: components['schemas']['Error'] = { error: 40401, message: 'The caller has no plant with this id' };
const code: number = new PlantStoreError(404, body.error, body.message).error;
// @ts-expect-error a plant needs a name
void plants.create({ id: 1 });
// @ts-expect-error an id is a bigint, a number or a decimal string
void plants.delete(true);
// @ts-expect-error a Plant has no id
void created.then((plant) => plant.id);
void [listed, exact, code];
`;

test('a TypeScript file using the installed client type-checks for browsers and for Node.js, and its mistakes are caught', async () => {
  writeFileSync(join(project, 'typed.ts'), TYPED);
  const common = { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, exactOptionalPropertyTypes: true };
  const configs = {
    // What a browser project has; the package's own declarations are checked too (no skipLibCheck).
    'tsconfig.browser.json': { ...common, lib: ['ES2022', 'DOM'], types: [] },
    'tsconfig.node.json': { ...common, lib: ['ES2023'], types: ['node'], typeRoots: [join(ROOT, 'node_modules/@types')], skipLibCheck: true },
  };
  for (const [name, compilerOptions] of Object.entries(configs)) {
    writeFileSync(join(project, name), JSON.stringify({ compilerOptions, files: ['typed.ts'] }));
    const result = await run(process.execPath, [TSC, '-p', name], project);
    assert.equal(result.code, 0, `${name}:\n${result.stdout}${result.stderr}`);
  }
  // The expected errors are real: without their markers, tsc fails on each of them.
  writeFileSync(join(project, 'typed.ts'), TYPED.replaceAll('// @ts-expect-error', '//'));
  const failing = await run(process.execPath, [TSC, '-p', 'tsconfig.browser.json'], project);
  assert.notEqual(failing.code, 0, failing.stdout);
  assert.equal(failing.stdout.match(/error TS\d+/g)?.length, 3, failing.stdout);
});

const missing = chromiumMissing();
const skip = missing && process.env.CI !== 'true' ? `${CHROMIUM} is missing: apt-get install chromium (CI installs it and fails without it)` : false;
if (skip) console.warn(`SKIPPED the client's browser test: ${skip}`);

/**
 * The page: the installed package's dist/ named by an import map, used against the API given in the query.
 * One call of each method the client sends (GET, POST, DELETE, PATCH): each needs the server's CORS
 * preflight to allow it, and a browser refuses a method left out with no answer to read.
 */
const PAGE = `<!doctype html>
<script type="importmap">{ "imports": { "@plantstore/client": "/client/index.js" } }</script>
<script type="module">
import { PlantStore, PlantStoreError } from '@plantstore/client';
const query = new URLSearchParams(location.search);
const plants = new PlantStore({ baseUrl: query.get('api'), token: query.get('token') });
try {
  const seen = { created: await plants.create({ id: 9223372036854775807n, name: 'Monstera', tag: 'indoor' }), listed: [] };
  await plants.create({ id: '9007199254740993', name: 'Fern' });
  for await (const plant of plants.list({ limit: 1 })) seen.listed.push(plant.name);
  await plants.delete('9007199254740993');
  try { await plants.delete(9007199254740993n); } catch (e) { seen.error = [e instanceof PlantStoreError, e.status, e.error]; }
  seen.updated = (await plants.updateWebhook(query.get('webhook'), { description: 'from the page' })).description;
  window.seen = seen;
} catch (e) {
  window.seen = { failed: String(e) };
}
</script>`;

function staticServer(dist: string): Server {
  return createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://page').pathname;
    if (path === '/') return response.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
    const file = /^\/client\/([\w/.-]+\.js)$/.exec(path)?.[1];
    if (file === undefined || file.includes('..')) return response.writeHead(404).end();
    try {
      response.writeHead(200, { 'content-type': 'text/javascript' }).end(readFileSync(join(dist, file)));
    } catch {
      response.writeHead(404).end();
    }
  });
}

test('in Chromium, a page served on loopback imports the installed client and calls the server across origins', { skip }, async (t) => {
  assert.ok(!missing, `CI=true: ${CHROMIUM} is required; .ci/run installs it`);
  const pages = staticServer(join(installed, 'dist')).listen(0, '127.0.0.1');
  t.after(() => pages.close());
  await new Promise((resolve) => pages.once('listening', resolve));
  const origin = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
  // The API on another port is another origin: the server must allow the page's (CORS_ORIGINS).
  const { app, url, token, responses, events } = await served(t, { corsOrigins: [origin], webhookAllowPrivate: true });
  const browser = await launchChromium();
  t.after(() => browser.close());
  const context = await browser.newContext();
  const problems: string[] = [];
  const page = await context.newPage();
  // Watched, not routed: with a route set, Playwright answers Chromium's CORS preflights itself, allowing
  // everything, so the server's preflight would never be tried. The page talks to loopback only.
  page.on('request', (r) => {
    if (new URL(r.url()).hostname !== '127.0.0.1') problems.push(`request off the machine: ${r.url()}`);
  });
  page.on('requestfailed', (r) => problems.push(`failed request: ${r.method()} ${r.url()}: ${r.failure()?.errorText ?? ''}`));
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    // The 404 the page provokes on purpose is reported by Chromium as a failed resource load.
    if (m.type() === 'error' && !/status of 404/.test(m.text())) problems.push(`console error: ${m.text()}`);
  });
  const alice = await token('alice');
  const registered = await app.inject({
    method: 'POST', url: '/webhooks', headers: { authorization: `Bearer ${alice}` }, payload: { url: 'https://hooks.example/plants' },
  });
  assert.equal(registered.statusCode, 201, registered.body);
  await page.goto(`${origin}/?${new URLSearchParams({ api: url, token: alice, webhook: registered.json().id })}`);
  const seen = await (await page.waitForFunction('window.seen', undefined, { timeout: 60_000 })).jsonValue();
  assert.deepEqual(seen, {
    created: { name: 'Monstera', tag: 'indoor' }, listed: ['Monstera', 'Fern'], error: [true, 404, 40401], updated: 'from the page',
  });
  assert.deepEqual(responses('DELETE'), [204, 404], 'the exact id past 2^53 reached the server');
  console.log(JSON.stringify(events.filter((e) => e.phase === 'response')));
  assert.deepEqual(responses('PATCH'), [200]);
  assert.ok(responses('OPTIONS').length > 0, 'the browser asked the server, not a stand-in, whether it may call it');
  assert.deepEqual(problems, []);
});
