import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { createServer, plantstore } from '../../src/app.js';
import { ERRORS } from '../../src/http/errors.js';
import { LateStore } from '../../src/store/wrappers/late.js';
import { SECURITY_HEADERS } from '../../src/http/plugins/security-headers.js';
import { issueToken } from '../helpers/tokens.js';
import { bearer, errorBody, silentLogger, testApp, testStore } from '../helpers/app.js';

/** A bound on waits that would otherwise hang the test: the failure this file guards against. */
const HANG_MS = 5000;

function within<T>(promise: Promise<T>, what: string, ms = HANG_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([promise, hung]).finally(() => clearTimeout(timer));
}

test('a route and a hook added after the plantstore plugin work, with inject and listen; the route\'s other methods answer 405 with Allow', async (t) => {
  const ts = await testStore(t);
  const app = createServer({ logger: silentLogger });
  t.after(() => app.close());
  await app.register(plantstore, { store: ts.store });
  // What a metrics plugin would do: a route of its own and a hook on every request, added afterwards.
  app.get('/metrics', async () => 'plants_total 0\n');
  app.addHook('onRequest', async (_request, reply) => {
    reply.header('x-counted', 'yes');
  });
  const address = await within(app.listen({ port: 0, host: '127.0.0.1' }), 'listen()');
  const url = `${address}/metrics`;

  const injected = await app.inject({ method: 'GET', url: '/metrics' });
  const fetched = await fetch(url);
  for (const [status, headers] of [
    [injected.statusCode, injected.headers],
    [fetched.status, Object.fromEntries(fetched.headers)],
  ] as const) {
    assert.equal(status, 200);
    assert.equal(headers['x-counted'], 'yes', 'the added hook runs on the added route');
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) assert.equal(headers[name], value, name);
  }
  // The added hook runs on the plugin's routes too, and the plugin's answers are unchanged.
  const health = await fetch(`${address}/healthz`);
  assert.equal(health.status, 200);
  assert.equal(health.headers.get('x-counted'), 'yes');
  const plants = await fetch(`${address}/plants`);
  assert.equal(plants.status, 401);
  assert.equal(plants.headers.get('x-counted'), 'yes');

  for (const method of ['POST', 'DELETE']) {
    const injected = await app.inject({ method: method as 'POST', url: '/metrics' });
    const fetched = await fetch(url, { method });
    for (const [status, allow, body] of [
      [injected.statusCode, injected.headers.allow, errorBody(injected)],
      [fetched.status, fetched.headers.get('allow'), (await fetched.json()) as { error: number }],
    ] as const) {
      assert.equal(status, 405, method);
      assert.equal(allow, 'GET, HEAD', method);
      assert.equal(body.error, ERRORS.methodNotAllowed.code, method);
    }
  }
});

test('two apps in one process number their requests each from 1', async (t) => {
  const ids: string[] = [];
  for (let i = 0; i < 2; i++) {
    const { app } = await testApp(t);
    app.get('/id', async (request) => request.id);
    ids.push((await app.inject({ method: 'GET', url: '/id' })).body);
  }
  for (const id of ids) assert.match(id, /-1$/);
});

test('until its store opens, an app answers 503 50301 with Retry-After on every route that uses the store, /healthz and /openapi.json stay 200; then it serves', async (t) => {
  const ts = await testStore(t);
  const late = new LateStore();
  const app = createServer({ logger: silentLogger });
  t.after(() => app.close());
  await app.register(plantstore, { store: late });
  const secret = (await issueToken(ts.store, { user: 'alice' })).secret;
  const requests = [
    { method: 'GET', url: '/plants', headers: bearer(secret) },
    { method: 'GET', url: '/plants' },
    { method: 'POST', url: '/plants', headers: { ...bearer(secret), 'content-type': 'application/json' }, payload: '{"id":1,"name":"a"}' },
    { method: 'DELETE', url: '/plants/1', headers: bearer(secret) },
    { method: 'GET', url: '/readyz' },
  ] as const;
  for (const options of requests) {
    const res = await app.inject(options);
    assert.equal(res.statusCode, 503, `${options.method} ${options.url}`);
    assert.equal(errorBody(res).error, ERRORS.notServing.code, `${options.method} ${options.url}`);
    assert.equal(res.headers['retry-after'], '2', `${options.method} ${options.url}`);
  }
  for (const url of ['/healthz', '/openapi.json']) assert.equal((await app.inject({ method: 'GET', url })).statusCode, 200, url);

  late.open(ts.store);
  assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200);
  const created = await app.inject(requests[2]);
  assert.equal(created.statusCode, 200);
  assert.equal((await app.inject(requests[0])).json<unknown[]>().length, 1);
});

test('app.close() alone ends a drain held by a request that never finishes, at DRAIN_TIMEOUT', async (t) => {
  const { app } = await testApp(t, { drainTimeoutMs: 300 });
  let release: () => void = () => undefined;
  const never = new Promise<void>((resolve) => {
    release = resolve;
  });
  let started: () => void = () => undefined;
  const arrived = new Promise<void>((resolve) => {
    started = resolve;
  });
  app.get('/stuck', async () => {
    started();
    await never;
    return 'late';
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const cut = new Promise<string>((resolve) => {
    const req = httpRequest({ port, host: '127.0.0.1', path: '/stuck' }, () => resolve('answered'));
    req.on('error', (error) => resolve((error as NodeJS.ErrnoException).code ?? error.message));
    req.end();
  });
  await within(arrived, 'the request reaching its handler');
  const closeStarted = Date.now();
  try {
    await within(app.close(), 'app.close() with a request in flight');
  } finally {
    // Without the deadline, the drain waits for this request: let it end, so a failure cannot hang.
    release();
  }
  assert.ok(Date.now() - closeStarted >= 250, 'the drain waited for the request first');
  assert.equal(await within(cut, 'the client seeing its connection closed'), 'ECONNRESET');
});
