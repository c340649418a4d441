import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import type { LightMyRequestResponse } from 'fastify';
import { SECURITY_HEADERS } from '../../src/http/plugins/security-headers.js';
import { bearer, create, list, testApp } from '../helpers/app.js';

function assertSecurityHeaders(headers: Record<string, unknown>, label: string): void {
  assert.equal(headers['x-content-type-options'], 'nosniff', label);
  assert.equal(headers['content-security-policy'], "default-src 'none'; frame-ancestors 'none'", label);
  assert.equal(headers['cache-control'], 'no-store', label);
  assert.equal(headers['x-powered-by'], undefined, label);
}

test('every answer carries the security headers: successes, errors, unknown routes, parser errors', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  const answers: Array<[string, LightMyRequestResponse]> = [
    ['list 200', await list(app, alice)],
    ['create 200', await create(app, alice, { id: 1, name: 'x' })],
    ['401', await list(app, 'pst_nope')],
    ['400', await create(app, alice, '{')],
    ['404', await app.inject({ method: 'GET', url: '/nowhere' })],
    ['405', await app.inject({ method: 'PUT', url: '/plants' })],
    ['openapi 200', await app.inject({ method: 'GET', url: '/openapi.json' })],
    ['healthz 200', await app.inject({ method: 'GET', url: '/healthz' })],
  ];
  for (const [label, res] of answers) assertSecurityHeaders(res.headers, label);

  // Answers written by the HTTP parser's error handler, before any route: raw bytes on a socket.
  await app.listen({ port: 0, host: '127.0.0.1' });
  const socket = connect((app.server.address() as { port: number }).port, '127.0.0.1');
  let raw = '';
  socket.on('data', (d) => (raw += d));
  socket.write('NOT HTTP\r\n\r\n');
  await once(socket, 'close');
  const head = raw.split('\r\n\r\n')[0]?.toLowerCase() ?? '';
  const headers = Object.fromEntries(head.split('\r\n').slice(1).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]));
  assertSecurityHeaders(headers, 'raw 400');
  assert.deepEqual(Object.keys(SECURITY_HEADERS).every((h) => h in headers), true);
});

test('CORS is off unless origins are configured: no CORS headers, and OPTIONS is 405', async (t) => {
  const { app } = await testApp(t);
  const preflight = await app.inject({
    method: 'OPTIONS', url: '/plants',
    headers: { origin: 'https://app.example', 'access-control-request-method': 'GET' },
  });
  assert.equal(preflight.statusCode, 405);
  assert.equal(preflight.headers['access-control-allow-origin'], undefined);
  const get = await app.inject({ method: 'GET', url: '/healthz', headers: { origin: 'https://app.example' } });
  assert.equal(get.headers['access-control-allow-origin'], undefined);
});

test('CORS with configured origins answers those origins only, and exposes Link to them', async (t) => {
  const { app, token } = await testApp(t, { corsOrigins: ['https://app.example'] });
  const alice = await token('alice');
  const allowed = await app.inject({
    method: 'OPTIONS', url: '/plants',
    headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
  });
  assert.equal(allowed.statusCode, 204);
  assert.equal(allowed.headers['access-control-allow-origin'], 'https://app.example');
  assert.match(String(allowed.headers['access-control-allow-methods']), /POST/);
  assert.match(String(allowed.headers['access-control-allow-headers']), /Authorization/i);

  const other = await app.inject({
    method: 'OPTIONS', url: '/plants', headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' },
  });
  assert.equal(other.headers['access-control-allow-origin'], undefined);

  for (let i = 1; i <= 3; i++) await create(app, alice, { id: i, name: `p${i}` });
  const page = await app.inject({ method: 'GET', url: '/plants?limit=1', headers: { ...bearer(alice), origin: 'https://app.example' } });
  assert.equal(page.headers['access-control-allow-origin'], 'https://app.example');
  assert.match(String(page.headers['access-control-expose-headers']), /Link/);
  assert.ok(page.headers.link);
});

test('with CORS on, a preflight allows every method an operation of /openapi.json uses (PATCH included)', async (t) => {
  const { app } = await testApp(t, { corsOrigins: ['https://app.example'] });
  const paths = (await app.inject({ method: 'GET', url: '/openapi.json' })).json().paths as Record<string, Record<string, unknown>>;
  const used = new Set(Object.values(paths).flatMap((operations) => Object.keys(operations).map((m) => m.toUpperCase())));
  assert.ok(used.has('PATCH') && used.has('DELETE'), [...used].join());
  const preflight = await app.inject({
    method: 'OPTIONS', url: '/webhooks/wh_x',
    headers: { origin: 'https://app.example', 'access-control-request-method': 'PATCH', 'access-control-request-headers': 'authorization, content-type' },
  });
  assert.equal(preflight.statusCode, 204);
  const allowed = new Set(String(preflight.headers['access-control-allow-methods']).split(/,\s*/));
  for (const method of used) assert.ok(allowed.has(method), `${method} is not in ${preflight.headers['access-control-allow-methods']}`);
});

test('tokens never reach the log: valid, invalid, refused, failed, with access logging on', async (t) => {
  const logs = new PassThrough();
  let logged = '';
  logs.on('data', (d) => (logged += d));
  const { app, token, sql } = await testApp(t, { logStream: logs, accessLog: true });
  const alice = await token('alice');
  const reader = await token('reader', { scopes: ['plants:read'] });
  const guesses = ['pst_guessing1234567890', 'not-even-a-token', `${alice}x`, alice.slice(0, -2)];
  await create(app, alice, { id: 1, name: 'x' });
  await list(app, alice, '?limit=1');
  await create(app, reader, { id: 2, name: 'y' }); // 403
  for (const g of guesses) await list(app, g); // 401
  await app.inject({ method: 'GET', url: '/plants', headers: { authorization: `Basic ${alice}` } });
  await sql('DROP TABLE plants');
  await list(app, alice); // 500, logged with its cause
  assert.ok(logged.includes('"msg":"request failed"'), 'the 500 was logged');
  assert.ok(logged.split('\n').filter((l) => l.includes('"msg":"request"')).length >= 9, 'every request was logged');
  for (const secret of [alice, reader, ...guesses]) assert.ok(!logged.includes(secret), `${secret.slice(0, 8)}… must not be logged`);
  assert.ok(!logged.toLowerCase().includes('authorization'), 'no header is logged');
});
