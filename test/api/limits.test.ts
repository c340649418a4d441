import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { nestingExceeds } from '../../src/http/plugins/json.js';
import { bearer, create, errorBody, list, testApp } from '../helpers/app.js';
import { answers } from '../helpers/raw-http.js';

async function listen(app: FastifyInstance): Promise<number> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  return (app.server.address() as { port: number }).port;
}

/** Opens a raw connection and collects what the server sends until it closes the connection. */
function rawConnection(port: number): { socket: Socket; closed: Promise<string> } {
  const socket = connect(port, '127.0.0.1');
  let answer = '';
  socket.on('data', (d) => (answer += d.toString('latin1')));
  socket.on('error', () => undefined);
  return { socket, closed: once(socket, 'close').then(() => answer) };
}

const status = (answer: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);
const body = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { error: number; message: string };

test('a URL longer than MAX_URL_LENGTH is 414 41400', async (t) => {
  const { app, token } = await testApp(t, { maxUrlLength: 100 });
  const alice = await token('alice');
  assert.equal((await list(app, alice, `?tag=${'t'.repeat(80)}`)).statusCode, 200);
  const res = await list(app, alice, `?tag=${'t'.repeat(100)}`);
  assert.equal(res.statusCode, 414);
  assert.equal(errorBody(res).error, 41400);
});

test('JSON nested deeper than MAX_JSON_DEPTH is 400 40001, before it is parsed', async (t) => {
  const { app, token } = await testApp(t, { maxJsonDepth: 8 });
  const alice = await token('alice');
  // The body object is level 1; `arrays(n)` adds n more.
  const arrays = (n: number) => `${'['.repeat(n)}1${']'.repeat(n)}`;
  assert.equal((await create(app, alice, `{"id":1,"name":"ok","extra":${arrays(7)}}`)).statusCode, 200, '8 levels');
  const res = await create(app, alice, `{"id":2,"name":"deep","extra":${arrays(8)}}`);
  assert.equal(res.statusCode, 400, '9 levels');
  assert.match(errorBody(res).message, /deeper than 8 levels/);
  assert.equal(errorBody(res).error, 40001);
  // Brackets inside strings are text, not nesting.
  assert.equal((await create(app, alice, `{"id":3,"name":"${'['.repeat(50)}"}`)).statusCode, 200);
  const huge = await create(app, alice, `{"id":4,"name":"x","extra":${arrays(20_000)}}`);
  assert.equal(huge.statusCode, 400);
});

test('nestingExceeds counts only brackets outside strings, escapes included', () => {
  assert.equal(nestingExceeds('[[["a"]]]', 3), false);
  assert.equal(nestingExceeds('[[[["a"]]]]', 3), true);
  assert.equal(nestingExceeds('{"a":"[[[[[[[[\\"[[[["}', 1), false);
  assert.equal(nestingExceeds('{"a":"\\\\"}', 1), false);
  assert.equal(nestingExceeds('{"a":{"b":{"c":{}}}}', 3), true);
});

test('headers larger than MAX_HEADER_SIZE are 431 43100', async (t) => {
  const { app, token } = await testApp(t, { maxHeaderSize: 2048 });
  const port = await listen(app);
  const secret = await token('alice');
  const small = rawConnection(port);
  small.socket.write(`GET /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\nX-Pad: ${'a'.repeat(500)}\r\nConnection: close\r\n\r\n`);
  assert.equal(status(await small.closed), 200);
  const big = rawConnection(port);
  big.socket.write(`GET /plants HTTP/1.1\r\nHost: x\r\nX-Pad: ${'a'.repeat(3000)}\r\n\r\n`);
  const answer = await big.closed;
  assert.equal(status(answer), 431);
  assert.equal(body(answer).error, 43100);
});

test('a client sending one byte a second is cut off at REQUEST_TIMEOUT with 408', async (t) => {
  const { app } = await testApp(t, { requestTimeoutMs: 1500 });
  const port = await listen(app);
  const slow = rawConnection(port);
  const request = 'POST /plants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{"id":1}';
  let sent = 0;
  const drip = setInterval(() => {
    if (sent < request.length && !slow.socket.destroyed) slow.socket.write(request[sent++] ?? '');
  }, 1000);
  const started = Date.now();
  const answer = await slow.closed;
  clearInterval(drip);
  assert.equal(status(answer), 408);
  assert.equal(body(answer).error, 40800);
  t.diagnostic(`cut off after ${Date.now() - started} ms, having sent ${sent} of ${request.length} bytes`);
  assert.ok(sent < request.length, 'the connection was closed before the request was complete');
});

test('connections beyond MAX_CONNECTIONS are closed at once; the others are served', async (t) => {
  const { app, token } = await testApp(t, { maxConnections: 2 });
  const port = await listen(app);
  const secret = await token('alice');
  const open = [rawConnection(port), rawConnection(port)];
  await Promise.all(open.map((c) => once(c.socket, 'connect')));
  await new Promise((resolve) => setTimeout(resolve, 50)); // let the server accept them
  const extra = rawConnection(port);
  extra.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  assert.equal(await extra.closed, '', 'closed without an answer');
  for (const c of open) c.socket.write(`GET /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${secret}\r\nConnection: close\r\n\r\n`);
  for (const c of open) assert.equal(status(await c.closed), 200);
});

test('a body over MAX_BODY_SIZE is 413 41300', async (t) => {
  const { app, token } = await testApp(t, { maxBodySize: 200 });
  const alice = await token('alice');
  assert.equal((await create(app, alice, { id: 1, name: 'x'.repeat(150) })).statusCode, 200);
  const res = await app.inject({
    method: 'POST', url: '/plants', headers: { ...bearer(alice), 'content-type': 'application/json' },
    payload: JSON.stringify({ id: 2, name: 'x'.repeat(199) }),
  });
  assert.equal(res.statusCode, 413);
  assert.equal(errorBody(res).error, 41300);
});

test('a request answered before its body (401) and then left unfinished gets no second answer at REQUEST_TIMEOUT', async (t) => {
  const { app } = await testApp(t, { requestTimeoutMs: 1000 });
  const port = await listen(app);
  const stalled = rawConnection(port);
  // No token: authentication refuses before the body is read. Half the announced body, then nothing.
  stalled.socket.write('POST /plants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{"id":1,');
  const received = await stalled.closed;
  const all = answers(received);
  assert.deepEqual(all.map((a) => a.status), [401], `one answer only, got: ${JSON.stringify(received.slice(0, 600))}`);
});
