import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { SECURITY_HEADERS } from '../../src/http/plugins/security-headers.js';
import { list, testApp } from '../helpers/app.js';
import { answers, onlyAnswer, rawErrorBody, rawInParts, type RawAnswer } from '../helpers/raw-http.js';

// A chunked body whose chunks announce more than MAX_BODY_SIZE is refused as soon as they announce it.
// Each app here has a request timeout far longer than any wait below, so a refusal that waits for the
// timeout (a 408) fails the test instead of passing late.
const LIMIT = 1024;

async function app(t: TestContext) {
  const made = await testApp(t, { maxBodySize: LIMIT, requestTimeoutMs: 120_000 });
  const alice = await made.token('alice');
  const head = (extra = '') =>
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n${extra}\r\n`;
  return { ...made, alice, head };
}

/** The one answer: 413 41300, the Error body, the security headers, Connection: close; and the server closed. */
function assertRefused({ received, closed }: { received: string; closed: boolean }, label: string): void {
  const answer: RawAnswer = onlyAnswer(received);
  assert.equal(answer.status, 413, label);
  assert.equal(rawErrorBody(answer).error, 41300, label);
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) assert.equal(answer.headers[name], value, `${label}: ${name}`);
  assert.equal(answer.headers.connection, 'close', label);
  assert.ok(closed, `${label}: the server closed the connection`);
}

/** A NewPlant of exactly `size` bytes of JSON, padded with spaces. */
function exactBody(size: number): string {
  const json = '{"id":1,"name":"exact"}';
  return json + ' '.repeat(size - json.length);
}

test('a chunk-size line announcing more than MAX_BODY_SIZE is 413 41300 at once, the connection closed', async (t) => {
  const { app: server, head } = await app(t);
  // Headers and the size line in one write, then silence.
  assertRefused(await rawInParts(server, [`${head()}FFFFFFFF\r\n`]), 'one write');
  // Headers first, then the size line in a read of its own.
  assertRefused(await rawInParts(server, [head(), 'FFFFFFFF\r\n']), 'two writes');
  // With an extension, and announced before the line ends.
  assertRefused(await rawInParts(server, [head(), '401;name=value']), 'extension');
});

test('a body is 413 41300 at once when a later chunk takes what its chunks announce over MAX_BODY_SIZE', async (t) => {
  const { app: server, head } = await app(t);
  const first = `200\r\n${' '.repeat(0x200)}\r\n`;
  assertRefused(await rawInParts(server, [`${head()}${first}201\r\n`]), 'in the read of the head');
  assertRefused(await rawInParts(server, [head(), first, '201\r\n']), 'in a later read');
  // A size line cut between reads: 0x4 and then 0x401.
  assertRefused(await rawInParts(server, [head(), '4', '01\r\n']), 'a size line cut in two');
  assertRefused(await rawInParts(server, [`${head()}${first}2`, '01\r\n']), 'a second size line cut in two');
});

test('a chunked body of exactly MAX_BODY_SIZE, with extensions and trailers, is taken however its bytes arrive', async (t) => {
  const { app: server, alice, head } = await app(t);
  const body = exactBody(LIMIT);
  const chunks = `12c;a=b\r\n${body.slice(0, 300)}\r\n12C;q="x;y"\r\n${body.slice(300, 600)}\r\n1a8\r\n${body.slice(600)}\r\n0;last\r\nX-Trailer: 1\r\n\r\n`;
  const close = head('Connection: close\r\n');
  const splits = [
    [close + chunks],
    [close, chunks],
    // Cut inside size lines, extensions, data, the CRLF after data and the trailers.
    [close + chunks.slice(0, 5), chunks.slice(5, 20), chunks.slice(20, 310), chunks.slice(310, 311), chunks.slice(311, 330), chunks.slice(330, -10), chunks.slice(-10)],
  ];
  for (const [i, parts] of splits.entries()) {
    const { received } = await rawInParts(server, parts);
    assert.equal(onlyAnswer(received).status, 200, `split ${i}: ${received.slice(0, 200)}`);
    // The same plant again on the next round: delete it.
    assert.equal((await server.inject({ method: 'DELETE', url: '/plants/1', headers: { authorization: `Bearer ${alice}` } })).statusCode, 204);
  }
});

test('a request pipelined after a chunked one is answered, whatever the earlier body holds', async (t) => {
  const { app: server, alice, head } = await app(t);
  const get = `GET /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice}\r\nConnection: close\r\n\r\n`;
  const plant = (id: number) => JSON.stringify({ id, name: `p${id}` });
  const chunked = (id: number) => `${plant(id).length.toString(16)}\r\n${plant(id)}\r\n0\r\n\r\n`;
  // Both in one read, and the first body ending a read, the next request in the one after.
  for (const parts of [[head() + chunked(1) + get], [head() + chunked(2), get], [head() + chunked(3) + head('Connection: close\r\n') + chunked(4)]]) {
    const all = answers((await rawInParts(server, parts)).received);
    assert.deepEqual(all.map((a) => a.status), [200, 200], parts.join('').slice(0, 80));
  }
  // An earlier body that reads like this request's line and an oversized chunk, in the same read as
  // this request or in the read before it, is no chunk of this request.
  const lookalike = `${head()}FFFFFFFF\r\n`;
  // A GET's body is not read (Node discards it), so it may be anything.
  const earlier = `GET /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice}\r\nContent-Length: ${lookalike.length}\r\n\r\n`;
  const last = head('Connection: close\r\n') + chunked(5);
  for (const parts of [[earlier + lookalike + last], [earlier, lookalike + last], [earlier + lookalike.slice(0, 10), lookalike.slice(10) + last]]) {
    const all = answers((await rawInParts(server, parts)).received);
    assert.deepEqual(all.map((a) => a.status), [200, 200], parts.join('').slice(0, 80));
    assert.equal((await server.inject({ method: 'DELETE', url: '/plants/5', headers: { authorization: `Bearer ${alice}` } })).statusCode, 204);
  }
  assert.equal((await list(server, alice)).body, '[{"name":"p1"},{"name":"p2"},{"name":"p3"},{"name":"p4"}]');
});

test('a request no route takes is 405 whatever its chunks announce, and a GET is answered without its body', async (t) => {
  const { app: server, alice } = await app(t);
  const propfind = onlyAnswer((await rawInParts(server, ['PROPFIND /plants HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nFFFFFFFF\r\n'], { waitMs: 5000 })).received);
  assert.equal(propfind.status, 405);
  const get = `GET /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nFFFFFFFF\r\n`;
  assert.equal(onlyAnswer((await rawInParts(server, [get], { waitMs: 5000 })).received).status, 200);
});
