// npm run docs:screenshot: the picture of /docs in docs/api.md (docs/api-reference.png). Serves plantstore on
// a temporary SQLite store with a token and a few plants, opens /docs in Debian's Chromium, authorizes
// with the token, runs "Try it out" on GET /plants, and photographs the plant operations and that answer.
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../src/app.js';
import { OPAQUE_SCHEME_NAME } from '../src/http/schemas.js';
import { createLogger } from '../src/logger.js';
import { openStore } from '../src/store/open.js';
import { issueToken } from '../test/helpers/tokens.js';
import { authorize, CHROMIUM, chromiumMissing, launchChromium, operation, tryIt, watchedPage } from '../test/helpers/browser.js';

const OUT = fileURLToPath(new URL('../docs/api-reference.png', import.meta.url));
const PLANTS = [
  { id: 1, name: 'Monstera', tag: 'indoor' },
  { id: 2, name: 'Basil', tag: 'herb' },
  { id: 3, name: 'Fiddle-leaf fig' },
];

if (chromiumMissing()) {
  console.error(`${CHROMIUM} is missing: apt-get install chromium`);
  process.exit(1);
}

const dir = mkdtempSync(join(tmpdir(), 'plantstore-screenshot-'));
const logger = createLogger('warn');
const store = await openStore({ kind: 'sqlite', path: join(dir, 'plantstore.db') }, {
  logger, poolSize: 1, startupTimeoutMs: 5000, listCachePlants: 1000, server: true,
});
const app = await buildApp({ logger, store });
const browser = await launchChromium();
try {
  const { secret } = await issueToken(store, { user: 'alice' });
  for (const plant of PLANTS) {
    const res = await app.inject({
      method: 'POST', url: '/plants', payload: plant,
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    });
    if (res.statusCode !== 200) throw new Error(`creating ${plant.name}: ${res.statusCode} ${res.body}`);
  }
  await app.listen({ port: 0, host: '127.0.0.1' });
  const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

  const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
  const { page, problems } = await watchedPage(context, origin);
  await page.goto(`${origin}/docs`);
  await page.locator('.opblock').first().waitFor();
  await authorize(page, OPAQUE_SCHEME_NAME, secret);
  const get = operation(page, 'GET', '/plants');
  const answer = await tryIt(get);
  if (answer.status !== '200') throw new Error(`GET /plants in the page answered ${answer.status}`);
  // The curl line shows the token; the picture shows its prefix only. Text only: the page stays as served.
  // A string: scripts are not compiled with the DOM's types.
  await page.evaluate(`for (const el of document.querySelectorAll('.curl-command *'))
    if (el.children.length === 0 && el.textContent.includes(${JSON.stringify(secret)}))
      el.textContent = el.textContent.replaceAll(${JSON.stringify(secret)}, 'pst_…');`);

  // From the Authorize bar to the end of the live answer: the part a newcomer uses. Scrolled to the top,
  // so that bounding boxes (relative to the viewport) are the page's coordinates that clip takes.
  await page.evaluate('window.scrollTo(0, 0)');
  const top = await page.locator('.scheme-container').boundingBox();
  const bottom = await get.locator('.live-responses-table').boundingBox();
  if (!top || !bottom) throw new Error('the page has no Authorize bar or no answer');
  mkdirSync(dirname(OUT), { recursive: true });
  await page.screenshot({
    path: OUT,
    fullPage: true,
    clip: { x: 0, y: top.y, width: 1100, height: bottom.y + bottom.height + 4 - top.y },
  });
  if (problems.length > 0) throw new Error(`the page had problems:\n${problems.join('\n')}`);
  console.log(`wrote ${OUT}`);
} finally {
  await browser.close();
  await app.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
