import assert from 'node:assert/strict';
import { test } from 'node:test';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { SECURITY_HEADERS } from '../../src/http/plugins/security-headers.js';
import { bearer, create, errorBody, list, testApp } from '../helpers/app.js';
import { answers, onlyAnswer, raw, rawErrorBody, type RawAnswer } from '../helpers/raw-http.js';

/** An Error answer with the given code, its status, and the security headers every answer carries. */
function assertErrorAnswer(answer: RawAnswer, code: number, label: string): void {
  assert.equal(answer.status, Math.floor(code / 100), label);
  assert.equal(rawErrorBody(answer).error, code, label);
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) assert.equal(answer.headers[name], value, `${label}: ${name}`);
}

test('an Expect other than 100-continue is 417 41700 with the Error body and the security headers', async (t) => {
  const { app } = await testApp(t);
  const answer = onlyAnswer(await raw(app, 'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nConnection: close\r\n\r\n'));
  assertErrorAnswer(answer, 41700, 'Expect: 200-ok');
  // 100-continue itself works as before: the interim 100, then the answer.
  const continued = await raw(app, 'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n');
  assert.match(continued, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
});

test('an HTTP/1.1 request without Host is 400 40000 with the Error body and the security headers', async (t) => {
  const { app } = await testApp(t);
  const answer = onlyAnswer(await raw(app, 'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n'));
  assertErrorAnswer(answer, 40000, 'no Host');
  assert.match(rawErrorBody(answer).message, /Host/);
  // HTTP/1.0 has no Host requirement (RFC 9112 §3.2 is about HTTP/1.1).
  assert.equal(onlyAnswer(await raw(app, 'GET /healthz HTTP/1.0\r\n\r\n')).status, 200);
});

test('two Authorization header lines are 400 40000 with the Error body, whichever of them is valid', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  for (const [first, second] of [[alice, 'pst_wrong'], ['pst_wrong', alice], [alice, alice]]) {
    const answer = onlyAnswer(
      await raw(app, `GET /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${first}\r\nauthorization: Bearer ${second}\r\nConnection: close\r\n\r\n`),
    );
    assertErrorAnswer(answer, 40000, 'two Authorization lines');
    assert.match(rawErrorBody(answer).message, /Authorization header appears more than once/);
  }
  // One line is as before.
  const one = onlyAnswer(await raw(app, `GET /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice}\r\nConnection: close\r\n\r\n`));
  assert.equal(one.status, 200);
});

test('two Host header lines are 400 40000 with the Error body, as RFC 9112 requires, whether they agree or not', async (t) => {
  const { app } = await testApp(t);
  for (const [first, second] of [['x', 'y'], ['x', 'x']]) {
    const answer = onlyAnswer(await raw(app, `GET /healthz HTTP/1.1\r\nHost: ${first}\r\nhost: ${second}\r\nConnection: close\r\n\r\n`));
    assertErrorAnswer(answer, 40000, `Host: ${first}, ${second}`);
    assert.match(rawErrorBody(answer).message, /Host header appears more than once/);
  }
});

test('CONNECT is 400 40000 with the Error body and the security headers, and the connection closes', async (t) => {
  const { app } = await testApp(t);
  const answer = onlyAnswer(await raw(app, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'));
  assertErrorAnswer(answer, 40000, 'CONNECT');
  assert.equal(answer.headers.connection, 'close');
});

test('bad percent-encoding in the path is 400 40000 with the Error body and the security headers', async (t) => {
  const { app } = await testApp(t);
  const answer = onlyAnswer(await raw(app, 'GET /plants%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
  assertErrorAnswer(answer, 40000, 'GET /plants%zz');
  const injected = await app.inject({ method: 'DELETE', url: '/plants/%C3' });
  assert.equal(errorBody(injected).error, 40000);
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) assert.equal(injected.headers[name], value, name);
});

test('a Transfer-Encoding other than exactly chunked is one 400 with Connection: close, before any route runs', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  const framings = [
    'Transfer-Encoding: gzip',
    'Transfer-Encoding: gzip, chunked', // a coding this server does not implement (RFC 9112 §6.1: 501 or refuse)
    'Transfer-Encoding: chunked, chunked', // chunked twice is forbidden (RFC 9112 §6.1)
    'Transfer-Encoding: identity', // no longer a transfer coding (RFC 7230 removed it)
    'Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked',
    'Transfer-Encoding: chunked\r\nContent-Length: 5', // both: a smuggling attempt (RFC 9112 §6.3)
  ];
  // The body, if read as a second request, would delete plant 1 (and answer a second time).
  const smuggled = `0\r\n\r\nDELETE /plants/1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice}\r\n\r\n`;
  for (const [i, framing] of framings.entries()) {
    assert.equal((await create(app, alice, { id: 1, name: 'kept' })).statusCode, 200);
    for (const [method, path, auth] of [['DELETE', '/plants/1', ''], ['DELETE', '/plants/1', `Authorization: Bearer ${alice}\r\n`], ['POST', '/plants', `Authorization: Bearer ${alice}\r\nContent-Type: application/json\r\n`], ['GET', '/healthz', ''], ['PROPFIND', '/plants', ''], ['GET', '/plants%zz', '']]) {
      const label = `${method} ${path} ${auth ? 'with' : 'without'} a token, ${JSON.stringify(framing)}`;
      const received = await raw(app, `${method} ${path} HTTP/1.1\r\nHost: x\r\n${auth}${framing}\r\n\r\n${smuggled}`);
      const answer = onlyAnswer(received);
      assertErrorAnswer(answer, 40000, label);
      assert.equal(answer.headers.connection, 'close', label);
    }
    assert.equal((await list(app, alice)).body, '[{"name":"kept"}]', `no route ran, nothing smuggled (${i})`);
  }
  // HTTP/1.0 has no chunked coding: a Transfer-Encoding there means faulty framing (RFC 9112 §6.1).
  const old = onlyAnswer(await raw(app, `DELETE /plants/1 HTTP/1.0\r\nHost: x\r\nAuthorization: Bearer ${alice}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`));
  assertErrorAnswer(old, 40000, 'HTTP/1.0 with Transfer-Encoding');
  assert.equal((await list(app, alice)).body, '[{"name":"kept"}]');
  // Exactly chunked (in any case) is the one framing besides Content-Length, and works.
  const chunked = await raw(
    app,
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice}\r\nContent-Type: application/json\r\nTransfer-Encoding: Chunked\r\nConnection: close\r\n\r\n` +
      `${(21).toString(16)}\r\n{"id":2,"name":"two"}\r\n0\r\n\r\n`,
  );
  assert.equal(onlyAnswer(chunked).status, 200);
});

test('an answer already sent is never followed by a second one when the rest of the request turns out malformed', async (t) => {
  const { app } = await testApp(t);
  // No token: the 401 is written before the body arrives; the bad chunk size then breaks the framing.
  const received = await raw(app, 'DELETE /plants/1 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n');
  const all = answers(received);
  assert.equal(all.length, 1, received);
  assert.equal(all[0]?.status, 401);
});

test('a chunked body is 413 41300 as soon as more than MAX_BODY_SIZE of it has arrived, whatever its chunks announce', async (t) => {
  const { app, token } = await testApp(t, { maxBodySize: 1024, requestTimeoutMs: 60_000 });
  const alice = await token('alice');
  const head = `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
  for (const body of [`FFFFFFFF\r\n${'x'.repeat(1500)}`, `200\r\n${'x'.repeat(512)}\r\n200\r\n${'x'.repeat(512)}\r\n1\r\nx`]) {
    // Not when the request timeout ends the connection (60 s here, then a 408).
    const answer = onlyAnswer(await raw(app, head + body, { waitMs: 30_000 }));
    assertErrorAnswer(answer, 41300, body.slice(0, 12));
  }
});

test('a method this server does not route, on an existing path, is 405 with Allow; elsewhere 404', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  for (const [method, path, allow] of [['PROPFIND', '/plants', 'GET, HEAD, POST'], ['MKCOL', '/plants/1', 'DELETE'], ['PURGE', '/openapi.json', 'GET, HEAD'], ['SEARCH', '/plants?limit=1', 'GET, HEAD, POST']] as const) {
    const answer = onlyAnswer(await raw(app, `${method} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice}\r\nConnection: close\r\n\r\n`));
    assertErrorAnswer(answer, 40500, `${method} ${path}`);
    assert.equal(answer.headers.allow, allow, `${method} ${path}`);
  }
  const nowhere = onlyAnswer(await raw(app, 'PROPFIND /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
  assertErrorAnswer(nowhere, 40400, 'PROPFIND /nowhere');
  assert.equal(nowhere.headers.allow, undefined);
  const injected = await app.inject({ method: 'PROPFIND' as 'GET', url: '/plants', headers: bearer(alice) });
  assert.equal(injected.statusCode, 405);
  assert.equal(injected.headers.allow, 'GET, HEAD, POST');
});

test('a request no route takes is 405 with Allow (or 404) whatever its body: no Content-Type, another, malformed, too large', async (t) => {
  const { app, token } = await testApp(t, { maxBodySize: 1024 });
  const alice = await token('alice');
  const auth = `Authorization: Bearer ${alice}\r\n`;
  const big = 'x'.repeat(2048);
  for (const [line, rest, code, allow] of [
    ['QUERY /plants', '', 40500, 'GET, HEAD, POST'], // RFC 10008 wants a Content-Type on QUERY; Fastify refused it with 400
    ['QUERY /plants', 'Content-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}', 40500, 'GET, HEAD, POST'],
    ['PROPFIND /plants', 'Content-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello', 40500, 'GET, HEAD, POST'],
    ['PROPFIND /plants/1', 'Content-Type: application/json\r\nContent-Length: 1\r\n\r\n{', 40500, 'DELETE'],
    ['PUT /plants', `Content-Type: application/json\r\nContent-Length: ${big.length}\r\n\r\n${big}`, 40500, 'GET, HEAD, POST'],
    ['QUERY /nowhere', '', 40400, undefined],
    ['POST /nowhere', 'Content-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello', 40400, undefined],
  ] as const) {
    const answer = onlyAnswer(await raw(app, `${line} HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n${rest || '\r\n'}`));
    assertErrorAnswer(answer, code, `${line} ${rest.slice(0, 40)}`);
    assert.equal(answer.headers.allow, allow, line);
  }
  // The body left unread is skipped, never taken for the next request on the connection.
  const inside = 'DELETE /plants/1 HTTP/1.1\r\nHost: x\r\n\r\n';
  const next = 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';
  const both = answers(await raw(app, `QUERY /plants HTTP/1.1\r\nHost: x\r\nContent-Length: ${inside.length}\r\n\r\n${inside}${next}`));
  assert.deepEqual(both.map((a) => a.status), [405, 200]);
});

test('a request body with a Content-Encoding other than identity is 415 41500 with Accept-Encoding: identity, and nothing is stored', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  const post = (coding: string, body: Buffer) =>
    raw(app, Buffer.concat([
      Buffer.from(`POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice}\r\nContent-Type: application/json\r\n` +
        `${coding}Content-Length: ${body.length}\r\nConnection: close\r\n\r\n`),
      body,
    ]).toString('latin1'));
  const plant = Buffer.from('{"id":1,"name":"Monstera"}');
  for (const [coding, body] of [
    ['Content-Encoding: gzip\r\n', gzipSync(plant)], // was read as raw bytes: 40001, not UTF-8
    ['Content-Encoding: br\r\n', plant], // was accepted as if unencoded
    ['Content-Encoding: br\r\n', brotliCompressSync(plant)],
    ['Content-Encoding: identity, gzip\r\n', gzipSync(plant)],
    ['Content-Encoding: GZIP\r\n', plant],
  ] as const) {
    const answer = onlyAnswer(await post(coding, body));
    assertErrorAnswer(answer, 41500, coding);
    assert.equal(answer.headers['accept-encoding'], 'identity', coding);
    assert.match(rawErrorBody(answer).message, /Content-Encoding/, coding);
  }
  assert.equal((await list(app, alice)).body, '[]', 'nothing stored');
  // The same refusal on every operation that reads a body (here PATCH), before the body is parsed.
  const patch = await app.inject({
    method: 'PATCH', url: '/webhooks/ep_AAAAAAAAAAAAAAAAAAAAAA',
    headers: { ...bearer(alice), 'content-type': 'application/json', 'content-encoding': 'deflate' }, payload: '{',
  });
  assert.equal(errorBody(patch).error, 41500);
  // identity is no coding at all (RFC 9110 §8.4.1), and a request without a body has nothing encoded.
  assert.equal(onlyAnswer(await post('Content-Encoding: identity\r\n', plant)).status, 200);
  const bodiless = await app.inject({ method: 'GET', url: '/plants', headers: { ...bearer(alice), 'content-encoding': 'gzip' } });
  assert.equal(bodiless.statusCode, 200);
  const deleted = await app.inject({ method: 'DELETE', url: '/plants/1', headers: { ...bearer(alice), 'content-encoding': 'gzip' } });
  assert.equal(deleted.statusCode, 204);
});

test('a trailing slash names the same resource: /plants/ is the collection, /plants/{id}/ the plant', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  const send = (method: 'GET' | 'POST' | 'DELETE', url: string, payload?: string) =>
    app.inject({ method, url, headers: { ...bearer(alice), 'content-type': 'application/json' }, ...(payload ? { payload } : {}) });
  assert.equal((await send('POST', '/plants/', '{"id":7,"name":"Monstera"}')).statusCode, 200);
  const listed = await send('GET', '/plants/?limit=10');
  assert.equal(listed.statusCode, 200);
  assert.deepEqual(listed.json(), [{ name: 'Monstera' }]);
  // The collection has no DELETE, with or without the slash: the same 405 and Allow.
  for (const url of ['/plants', '/plants/']) {
    const res = await send('DELETE', url);
    assert.equal(res.statusCode, 405, url);
    assert.equal(errorBody(res).error, 40500, url);
    assert.equal(res.headers.allow, 'GET, HEAD, POST', url);
  }
  assert.equal((await send('DELETE', '/plants/7/')).statusCode, 204);
  assert.equal((await send('DELETE', '/plants/7')).statusCode, 404, 'it was that plant');
  for (const url of ['/tokens/', '/webhooks/', '/healthz/']) assert.equal((await send('GET', url)).statusCode, 200, url);
});

test('with CORS on, OPTIONS stays the preflight and other methods still get 405 with the same Allow', async (t) => {
  const { app } = await testApp(t, { corsOrigins: ['https://app.example'] });
  const preflight = await app.inject({
    method: 'OPTIONS', url: '/plants',
    headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
  });
  assert.equal(preflight.statusCode, 204);
  for (const method of ['PUT', 'PATCH', 'TRACE'] as const) {
    const res = await app.inject({ method, url: '/plants', headers: { origin: 'https://app.example' } });
    assert.equal(res.statusCode, 405, method);
    assert.equal(res.headers.allow, 'GET, HEAD, POST', method);
    assert.equal(res.headers['access-control-allow-origin'], 'https://app.example', method);
  }
  assert.equal((await app.inject({ method: 'PUT', url: '/nowhere' })).statusCode, 404);
});
