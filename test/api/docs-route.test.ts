import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/app.js';
import { ERRORS } from '../../src/http/errors.js';
import { DOCS_CSP } from '../../src/http/routes/docs.js';
import { LateStore } from '../../src/store/wrappers/late.js';
import { SECURITY_HEADERS } from '../../src/http/plugins/security-headers.js';
import { create, errorBody, silentLogger, testApp } from '../helpers/app.js';

const STRICT_CSP = SECURITY_HEADERS['content-security-policy'];

function assertStrict(res: LightMyRequestResponse, label: string): void {
  assert.equal(res.headers['content-security-policy'], STRICT_CSP, label);
  assert.equal(res.headers['x-content-type-options'], 'nosniff', label);
}

test('GET /docs and /docs/ serve the reference page, with the docs policy, nosniff and no-store; HEAD too', async (t) => {
  const { app } = await testApp(t);
  for (const [method, url] of [['GET', '/docs'], ['GET', '/docs/'], ['HEAD', '/docs']] as const) {
    const res = await app.inject({ method, url });
    assert.equal(res.statusCode, 200, `${method} ${url}`);
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8', url);
    assert.equal(res.headers['content-security-policy'], DOCS_CSP, url);
    assert.equal(res.headers['x-content-type-options'], 'nosniff', url);
    assert.equal(res.headers['cache-control'], 'no-store', url);
  }
  assert.match(DOCS_CSP, /frame-ancestors 'none'/);
  assert.doesNotMatch(DOCS_CSP, /unsafe|https?:|\*/, 'no inline code, eval or other host is allowed');

  const page = (await app.inject({ method: 'GET', url: '/docs' })).body;
  // Every script and style sheet it names is a file of this server, and each is there.
  const assets = [...page.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] ?? '');
  assert.ok(assets.length >= 5, page);
  for (const asset of assets) {
    assert.match(asset, /^\/docs\/static\/[\w.-]+$/, asset);
    const res = await app.inject({ method: 'GET', url: asset });
    assert.equal(res.statusCode, 200, asset);
    assertStrict(res, asset);
  }
  assert.doesNotMatch(page, /<script>|<style|style=/, 'no inline script or style');
  const initializer = (await app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' })).body;
  // Swagger UI's own default would send the document to validator.swagger.io for a badge.
  assert.match(initializer, /const config = \{[^\n]*"validatorUrl":null/, 'no validator');
});

test('the docs policy is on the page alone: its files, a 404 under /docs/, a 405 and API errors keep the strict one', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  const answers: Array<[string, LightMyRequestResponse, number]> = [
    ['a file', await app.inject({ method: 'GET', url: '/docs/static/swagger-ui-bundle.js' }), 200],
    ['the document', await app.inject({ method: 'GET', url: '/docs/json' }), 200],
    ['no such file', await app.inject({ method: 'GET', url: '/docs/static/nope.js' }), 404],
    ['no such page', await app.inject({ method: 'GET', url: '/docs/nope' }), 404],
    ['outside the files', await app.inject({ method: 'GET', url: '/docs/static/%2e%2e/package.json' }), 404],
    ['POST /docs', await app.inject({ method: 'POST', url: '/docs' }), 405],
    ['DELETE on a file', await app.inject({ method: 'DELETE', url: '/docs/static/swagger-ui.css' }), 405],
    ['a URL too long', await app.inject({ method: 'GET', url: `/docs?${'a'.repeat(5000)}` }), 414],
    ['an error on /plants', await create(app, alice, '{'), 400],
    ['a plant', await create(app, alice, { id: 1, name: 'x' }), 200],
  ];
  for (const [label, res, status] of answers) {
    assert.equal(res.statusCode, status, label);
    assertStrict(res, label);
    if (status >= 400) errorBody(res);
  }
  const notFound = answers[2]?.[1];
  assert.equal(notFound && errorBody(notFound).error, ERRORS.routeNotFound.code);
  for (const i of [5, 6]) assert.equal(answers[i]?.[1].headers.allow, 'GET, HEAD', answers[i]?.[0]);
});

test('Swagger UI\'s files are revalidated rather than stored blind (no-cache, ETag), and a repeat visit gets 304', async (t) => {
  const { app } = await testApp(t);
  const first = await app.inject({ method: 'GET', url: '/docs/static/swagger-ui.css' });
  assert.equal(first.statusCode, 200);
  assert.equal(first.headers['cache-control'], 'no-cache');
  assert.equal(first.headers['content-type'], 'text/css; charset=utf-8');
  const etag = first.headers.etag;
  assert.ok(typeof etag === 'string' && etag.length > 0);
  const again = await app.inject({ method: 'GET', url: '/docs/static/swagger-ui.css', headers: { 'if-none-match': etag } });
  assert.equal(again.statusCode, 304);
  assert.equal(again.body, '');
  assertStrict(again, '304');
  // Errors are never kept.
  assert.equal((await app.inject({ method: 'GET', url: '/docs/static/nope.css' })).headers['cache-control'], 'no-store');
});

test('the reference\'s routes are not in /openapi.json', async (t) => {
  const { app } = await testApp(t);
  const paths = Object.keys((await app.inject({ method: 'GET', url: '/openapi.json' })).json<{ paths: object }>().paths);
  assert.ok(paths.includes('/plants'));
  for (const path of paths) assert.ok(!path.startsWith('/docs'), path);
  // The page's copy of the document is the same document.
  const copy = await app.inject({ method: 'GET', url: '/docs/json' });
  assert.deepEqual(copy.json(), (await app.inject({ method: 'GET', url: '/openapi.json' })).json());
});

test('DOCS=off: /docs and its files are the usual 404', async (t) => {
  const { app } = await testApp(t, { docs: false });
  for (const url of ['/docs', '/docs/', '/docs/static/swagger-ui-bundle.js', '/docs/json']) {
    const res = await app.inject({ method: 'GET', url });
    assert.equal(res.statusCode, 404, url);
    assert.equal(errorBody(res).error, ERRORS.routeNotFound.code, url);
    assertStrict(res, url);
  }
  assert.equal((await app.inject({ method: 'GET', url: '/openapi.json' })).statusCode, 200);
});

test('the reference answers while the store is still opening, as /openapi.json does', async (t) => {
  const starting = await buildApp({ store: new LateStore(), logger: silentLogger });
  t.after(() => starting.close());
  for (const url of ['/docs', '/docs/static/swagger-ui-bundle.js', '/docs/json']) {
    assert.equal((await starting.inject({ method: 'GET', url })).statusCode, 200, url);
  }
  assert.equal((await starting.inject({ method: 'GET', url: '/plants' })).statusCode, 503);
});
