import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { test } from 'node:test';
import fc from 'fast-check';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { ERROR_ROWS } from '../../src/http/errors.js';
import { testApp, type TestApp } from '../helpers/app.js';

const DOCUMENTED = new Set(ERROR_ROWS.map((r) => r.code));
const RUNS = 300;

/** Everything the store holds (every owner, every plant), to tell whether a request changed it. */
async function snapshot({ store }: TestApp): Promise<string> {
  return JSON.stringify((await store.plants.listPlants({ owner: null, limit: 1000 })).plants);
}

/**
 * The invariant: never a 5xx; every failure an Error body ({error, message}, nothing else) with a
 * documented code matching the status; and a refused request leaves the store as it was.
 */
async function check(fixture: TestApp, options: InjectOptions): Promise<LightMyRequestResponse> {
  const before = await snapshot(fixture);
  const res = await fixture.app.inject(options);
  const where = `${options.method} ${String(options.url).slice(0, 80)} → ${res.statusCode} ${res.body.slice(0, 120)}`;
  assert.ok(res.statusCode < 500, where);
  if (res.statusCode >= 400) {
    if (options.method !== 'HEAD') {
      assert.match(String(res.headers['content-type']), /^application\/json/, where);
      const body = res.json() as Record<string, unknown>;
      assert.deepEqual(Object.keys(body).sort(), ['error', 'message'], where);
      assert.ok(DOCUMENTED.has(body.error as number), where);
      assert.equal(Math.floor((body.error as number) / 100), res.statusCode, where);
    }
    assert.equal(await snapshot(fixture), before, `refused, yet the store changed: ${where}`);
  }
  return res;
}

const anyText = fc.string({ unit: 'binary', maxLength: 300 });
const numberLiteral = fc.oneof(
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
  fc.constantFrom('1e999', '-0', '1.0', '9007199254740993.5', '1E+2', '0.0000001', '123456789012345678901234567890'),
);
const nested = fc.integer({ min: 1, max: 3000 }).map((n) => `{"id":1,"name":"deep","x":${'['.repeat(n)}${']'.repeat(n)}}`);

/** JSON texts and near-JSON bytes of every kind a hostile or broken client could send. */
const bodies = fc.oneof(
  fc.json(),
  fc.jsonValue().map((v) => JSON.stringify(v) ?? 'null'),
  fc.record({ id: numberLiteral, name: anyText.map((s) => JSON.stringify(s)), tag: fc.option(anyText.map((s) => JSON.stringify(s))) }).map(
    ({ id, name, tag }) => `{"id":${id},"name":${name}${tag === null ? '' : `,"tag":${tag}`}}`,
  ),
  fc.tuple(numberLiteral, numberLiteral).map(([a, b]) => `{"id":${a},"name":"dup","id":${b}}`),
  anyText.map((name) => `{"id":1,"name":"${name}"}`), // unescaped control characters, quotes, …
  fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
  nested,
  anyText,
);

// Mostly JSON, so that most bodies reach the parser and the schema; the rest try the media type check.
const contentTypes = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/json;charset=UTF-8') },
  {
    weight: 1,
    arbitrary: fc.constantFrom('application/json; charset=latin1', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx', '', undefined),
  },
);

test('hostile bodies and content types to POST /plants: never a 5xx, documented errors, store unchanged when refused', async (t) => {
  const fixture = await testApp(t);
  const token = await fixture.token('alice');
  await fc.assert(
    fc.asyncProperty(bodies, contentTypes, async (payload, contentType) => {
      const headers: Record<string, string> = { authorization: `Bearer ${token}` };
      if (contentType !== undefined) headers['content-type'] = contentType;
      const res = await check(fixture, { method: 'POST', url: '/plants', headers, payload });
      if (res.statusCode === 200) {
        const plant = res.json() as Record<string, unknown>;
        assert.deepEqual(Object.keys(plant).filter((k) => k !== 'name' && k !== 'tag'), [], res.body);
      }
    }),
    { numRuns: RUNS },
  );
});

/** A key written as JSON, sometimes with every character escaped as \uXXXX: the same key to a parser. */
const keyText = (key: string, escaped: boolean): string =>
  escaped ? `"${[...key].map((c) => [...c].map((u) => `\\u${u.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')).join('')}"` : JSON.stringify(key);

test('JSON without duplicate keys is never refused as a duplicate, whatever its strings hold', async (t) => {
  const fixture = await testApp(t);
  const token = await fixture.token('alice');
  let id = 0;
  await fc.assert(
    fc.asyncProperty(fc.jsonValue({ maxDepth: 8 }), async (extra) => {
      const payload = `{"id":${++id},"name":"x",${JSON.stringify('"{[\\')}:${JSON.stringify(extra)}}`;
      const res = await check(fixture, { method: 'POST', url: '/plants', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, payload });
      assert.equal(res.statusCode, 200, `${payload.slice(0, 200)} → ${res.body}`);
    }),
    { numRuns: RUNS },
  );
});

test('a key repeated in any object of a body, however escaped, is 400 40001', async (t) => {
  const fixture = await testApp(t);
  const token = await fixture.token('alice');
  await fc.assert(
    fc.asyncProperty(
      fc.string({ maxLength: 8 }), fc.boolean(), fc.boolean(), fc.jsonValue({ maxDepth: 3 }), fc.integer({ min: 0, max: 3 }),
      async (key, escapeFirst, escapeSecond, value, depth) => {
        let object = `{${keyText(key, escapeFirst)}:${JSON.stringify(value)},"other":1,${keyText(key, escapeSecond)}:2}`;
        for (let d = 0; d < depth; d++) object = d % 2 === 0 ? `[0,${object}]` : `{"level${d}":${object}}`;
        const payload = `{"id":1,"name":"x","extra":${object}}`;
        const res = await check(fixture, { method: 'POST', url: '/plants', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, payload });
        assert.equal(res.statusCode, 400, payload);
        assert.equal((res.json() as { error: number }).error, 40001, payload);
      },
    ),
    { numRuns: RUNS },
  );
});

const queryValue = fc.oneof(
  anyText.map(encodeURIComponent),
  fc.string({ maxLength: 40 }),
  fc.integer().map(String),
  fc.base64String({ maxLength: 40 }),
  fc.bigInt().map((n) => Buffer.from(String(n)).toString('base64url')),
  fc.constantFrom('%', '%zz', '%00', '%C0%80', '%ED%A0%80', '&&&', '==', '[]', '1e2', '0x10'),
);

test('hostile query strings to GET /plants: never a 5xx, documented errors', async (t) => {
  const fixture = await testApp(t);
  const token = await fixture.token('alice');
  for (let i = 0; i < 30; i++) await fixture.app.inject({ method: 'POST', url: '/plants', headers: { authorization: `Bearer ${token}` }, payload: { id: i, name: `p${i}` } });
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(fc.constantFrom('limit', 'tag', 'cursor', 'x', 'limit[]', ''), queryValue), { maxLength: 5 }),
      async (pairs) => {
        const query = pairs.map(([k, v]) => `${k}=${v}`).join('&');
        await check(fixture, { method: 'GET', url: `/plants?${query}`, headers: { authorization: `Bearer ${token}` } });
      },
    ),
    { numRuns: RUNS },
  );
});

test('tokens of every shape: never a 5xx, only 401/403/429 or success', async (t) => {
  const fixture = await testApp(t);
  const token = await fixture.token('alice');
  const authorization = fc.oneof(
    fc.string({ maxLength: 100 }),
    fc.string({ maxLength: 100 }).map((s) => `Bearer ${s}`),
    fc.constantFrom('Bearer', 'Bearer ', 'bearer  x', 'Basic', 'Bearer a b', `Bearer ${token} extra`, `Bearer\t${token}`, `Bearer ${token}=`),
    fc.string({ maxLength: 60 }).map((s) => `Bearer ${token.slice(0, 20)}${s}`),
  );
  await fc.assert(
    fc.asyncProperty(authorization, fc.ipV4(), fc.constantFrom('GET', 'POST', 'DELETE'), async (header, remoteAddress, method) => {
      const url = method === 'DELETE' ? '/plants/1' : '/plants';
      const res = await check(fixture, { method, url, headers: { authorization: header, 'content-type': 'application/json' }, remoteAddress, ...(method === 'POST' ? { payload: '{"id":1,"name":"x"}' } : {}) });
      assert.ok([200, 204, 401, 403, 404, 409, 429].includes(res.statusCode), `${header} → ${res.statusCode}`);
    }),
    { numRuns: RUNS },
  );
});

test('any path and method: never a 5xx, documented errors', async (t) => {
  const fixture = await testApp(t);
  const token = await fixture.token('alice');
  const path = fc.oneof(
    fc.webPath(),
    fc.string({ maxLength: 80 }).map((s) => `/${encodeURIComponent(s)}`),
    fc.constantFrom('/plants/', '/plants//1', '/plants/%', '/plants/-0', '/plants/9223372036854775808', '/plants/../plants', '/PLANTS', '/openapi.json/x', '//plants'),
    fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map((n) => `/plants/${n}`),
  );
  const method = fc.constantFrom('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE');
  await fc.assert(
    fc.asyncProperty(path, method, async (url, m) => {
      const options: InjectOptions = { method: m as 'GET', url: url.startsWith('/') ? url : `/${url}`, headers: { authorization: `Bearer ${token}` } };
      await check(fixture, options);
    }),
    { numRuns: RUNS },
  );
});

test('raw bytes on a socket: an HTTP error with the Error body, or nothing; never a 5xx', async (t) => {
  const fixture = await testApp(t, { requestTimeoutMs: 2000 });
  await fixture.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (fixture.app.server.address() as { port: number }).port;
  const line = fc.oneof(
    fc.string({ maxLength: 200 }),
    fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('latin1')),
    fc.tuple(fc.constantFrom('GET', 'POST', 'BREW', ''), fc.string({ maxLength: 50 })).map(([m, p]) => `${m} /${p} HTTP/1.1`),
  );
  const header = fc.oneof(
    fc.string({ maxLength: 60 }),
    fc.constantFrom(
      'Transfer-Encoding: gzip', 'Transfer-Encoding: gzip, chunked', 'Transfer-Encoding: chunked', 'Transfer-Encoding: identity',
      'Content-Length: 3', 'Expect: 100-continue', 'Expect: x', 'Host: y', 'Connection: close', 'Upgrade: h2c',
    ),
  );
  await fc.assert(
    fc.asyncProperty(line, fc.array(header, { maxLength: 4 }), async (requestLine, headers) => {
      const socket = connect(port, '127.0.0.1');
      let answer = '';
      socket.on('data', (d) => (answer += d.toString('latin1')));
      socket.on('error', () => undefined);
      socket.end(Buffer.from(`${requestLine}\r\nHost: x\r\n${headers.join('\r\n')}\r\n\r\n`, 'latin1'));
      await once(socket, 'close');
      // Garbage may be closed without a word; a valid request may be followed by more (several answers).
      for (let rest = answer; rest.length > 0; ) {
        const head = rest.slice(0, rest.indexOf('\r\n\r\n'));
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        const body = rest.slice(head.length + 4, head.length + 4 + length);
        assert.ok(status > 0 && status < 500, `${JSON.stringify(requestLine)} → ${answer.slice(0, 160)}`);
        if (status >= 400) assert.ok(DOCUMENTED.has((JSON.parse(body) as { error: number }).error), answer.slice(0, 200));
        rest = rest.slice(head.length + 4 + length);
      }
    }),
    { numRuns: 200 },
  );
});
