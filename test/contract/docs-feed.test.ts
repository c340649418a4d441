import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { OPTIONS } from '../../src/config/options.js';
import { CHROMIUM, chromiumMissing, launchChromium } from '../helpers/browser.js';
import { ROOT } from '../helpers/checkout.js';
import { MAX, served } from '../helpers/client.js';
import { readPage, type Block } from '../helpers/markdown.js';
import { run } from '../helpers/packages.js';

/**
 * What docs/feed.md shows that test/process/docs-examples.test.ts, which types its shell blocks, cannot
 * run: the browser module, in Chromium against a real server on another origin; the TypeScript program,
 * type-checked as its reader's compiler would; and the settings' defaults, against the options table.
 */

const page = readPage('docs/feed.md');
const saved = (name: string): Block => {
  const block = page.blocks.find((b) => b.note.kind === 'file' && b.note.name === name);
  assert.ok(block, `docs/feed.md saves ${name}`);
  return block;
};

test('the feed page\'s settings table gives each FEED_ setting its default from the options table, and names them all', () => {
  const shown = new Map([...page.text.matchAll(/^\| `(FEED_\w+)` \| `([^`]*)` \|/gm)].map((m) => [m[1]!, m[2]!]));
  const options = OPTIONS.filter((o) => o.env.startsWith('FEED_'));
  assert.deepEqual(new Map(options.map((o) => [o.env, o.default])), shown);
});

test('the TypeScript program of the feed page type-checks against the client package, for Node.js', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plantstore-docs-feed-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // The client as the page installs it: its folder, linked (npm test builds its dist/ first).
  mkdirSync(join(dir, 'node_modules/@plantstore'), { recursive: true });
  symlinkSync(join(ROOT, 'packages/client'), join(dir, 'node_modules/@plantstore/client'));
  writeFileSync(join(dir, 'watch.mts'), saved('watch.mts').text);
  const compilerOptions = {
    target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, lib: ['ES2023'],
    types: ['node'], typeRoots: [join(ROOT, 'node_modules/@types')], skipLibCheck: true,
  };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['watch.mts'] }));
  const result = await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], dir);
  assert.equal(result.code, 0, `${result.stdout}${result.stderr}`);
});

const missing = chromiumMissing();
const skip = missing && process.env.CI !== 'true' ? `${CHROMIUM} is missing: apt-get install chromium (CI installs it and fails without it)` : false;
if (skip) console.warn(`SKIPPED the feed page's browser test: ${skip}`);

/** A page that runs the module's follow() against the API given in its query and keeps what it was given. */
const HARNESS = `<!doctype html>
<script type="module">
import { follow } from '/feed.js';
const query = new URLSearchParams(location.search);
window.events = [];
const controller = new AbortController();
window.stop = () => controller.abort();
const kept = (e) => (e.plant ? { ...e, plant: { ...e.plant, id: String(e.plant.id), idType: typeof e.plant.id } } : e);
follow({ baseUrl: query.get('api'), token: query.get('token'), signal: controller.signal, onEvent: (e) => window.events.push(kept(e)) })
  .catch((e) => { if (!controller.signal.aborted) window.failed = String(e); });
</script>`;

test('in Chromium, the page\'s feed.js follows the feed from another origin, ids exact, and goes on after the server drops it', { skip }, async (t) => {
  assert.ok(!missing, `CI=true: ${CHROMIUM} is required`);
  const module = saved('feed.js').text;
  const pages = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://page').pathname;
    if (path === '/') return response.writeHead(200, { 'content-type': 'text/html' }).end(HARNESS);
    if (path === '/feed.js') return response.writeHead(200, { 'content-type': 'text/javascript' }).end(module);
    return response.writeHead(path === '/favicon.ico' ? 204 : 404).end(); // a browser asks for a favicon
  }).listen(0, '127.0.0.1');
  t.after(() => pages.close());
  await new Promise((resolve) => pages.once('listening', resolve));
  const origin = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
  const { app, url, client, token, events } = await served(t, { corsOrigins: [origin] });
  const browser = await launchChromium();
  t.after(() => browser.close());
  const tab = await (await browser.newContext()).newPage();
  const problems: string[] = [];
  let cut = false;
  tab.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  // The stream the server cuts on purpose fails; nothing else may.
  tab.on('requestfailed', (r) => {
    if (!(cut && r.url().includes('/plants/events'))) problems.push(`failed request: ${r.url()}: ${r.failure()?.errorText ?? ''}`);
  });
  tab.on('console', (m) => {
    if (m.type() === 'error' && !(cut && /ERR_INCOMPLETE_CHUNKED_ENCODING|network error/i.test(m.text()))) problems.push(`console error: ${m.text()}`);
  });
  const secret = await token('alice');
  const alice = client(secret);
  await tab.goto(`${origin}/?${new URLSearchParams({ api: `${url}/`, token: secret })}`);
  const count = async (n: number) => {
    await tab.waitForFunction(`window.failed || window.events.length >= ${n}`, undefined, { timeout: 60_000 });
    return (await tab.evaluate('window.failed ? { failed: window.failed } : window.events')) as Array<Record<string, unknown>> | { failed: string };
  };
  const first = await count(1);
  assert.ok(Array.isArray(first) && first[0]?.type === 'ready', JSON.stringify(first));
  await alice.create({ id: MAX, name: 'Monstera', tag: 'indoor' });
  await alice.delete(MAX);
  const seen = await count(3);
  assert.ok(Array.isArray(seen), JSON.stringify(seen));
  assert.deepEqual(seen.slice(1, 3).map(({ id: _, ...rest }) => rest), [
    { type: 'plant.created', plant: { id: String(MAX), idType: 'bigint', name: 'Monstera', tag: 'indoor' } },
    { type: 'plant.deleted', plant: { id: String(MAX), idType: 'bigint', name: 'Monstera', tag: 'indoor' } },
  ]);

  cut = true;
  app.server.closeAllConnections(); // as a proxy restarting would
  await alice.create({ id: 2, name: 'Fern' }); // while the page is away
  const after = await count(5);
  assert.ok(Array.isArray(after), JSON.stringify(after));
  // The new stream's ready is where the page left off; then what was created while it was away.
  assert.deepEqual(after[3], { type: 'ready', id: seen[2]!.id });
  assert.deepEqual([after[4]!.type, (after[4]!.plant as { name: string }).name, after.length], ['plant.created', 'Fern', 5]);
  const streams = events.filter((e) => e.phase === 'request' && e.method === 'GET' && e.url.startsWith('/plants/events')).map((e) => e.url);
  assert.deepEqual(streams, ['/plants/events', `/plants/events?since=${encodeURIComponent(String(seen[2]!.id))}`], 'it resumed from the last id');
  await tab.evaluate('window.stop()');
  assert.deepEqual(problems, []);
});
