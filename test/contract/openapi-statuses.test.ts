import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyInstance, HTTPMethods } from 'fastify';
import { buildApp } from '../../src/app.js';
import { ERRORS } from '../../src/http/errors.js';
import { EVENT_ID } from '../../src/domain/webhook.js';
import { LateStore } from '../../src/store/wrappers/late.js';
import { bearer, silentLogger, testApp } from '../helpers/app.js';
import { AUDIENCE, closedPort, sign, signingKey, type TestProvider } from '../helpers/jwt-provider.js';
import { onlyAnswer, raw, rawErrorBody } from '../helpers/raw-http.js';

/**
 * The statuses /openapi.json lists for each operation, checked against real requests to that operation:
 * those any request can get, those of a body (listed exactly where one is read), those of a store
 * not open yet, of an unreachable identity provider. errors.test.ts produces every row of the error table;
 * this file goes through the operations of the document, so that an operation added later is covered too.
 */

interface Documented {
  readonly name: string;
  readonly method: HTTPMethods;
  /** The path with every parameter filled in with a value of its form: answers here come before any handler looks at them. */
  readonly url: string;
  readonly statuses: ReadonlySet<string>;
  readonly needsToken: boolean;
  readonly descriptions: Readonly<Record<string, string>>;
}

/** A value of each path parameter's form: an endpoint or plant id, an event id. */
const PARAMETERS: Readonly<Record<string, string>> = { id: '1', eventId: `${EVENT_ID.prefix}${'0'.repeat(EVENT_ID.timeDigits + EVENT_ID.randomDigits)}` };

async function documentedOperations(app: FastifyInstance): Promise<Documented[]> {
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
    paths: Record<string, Record<string, { security: unknown[]; responses: Record<string, { description: string }> }>>;
  };
  return Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({
      name: `${method.toUpperCase()} ${path}`,
      method: method.toUpperCase() as HTTPMethods,
      url: path.replace(/\{(\w+)\}/g, (_, name: string) => PARAMETERS[name] ?? assert.fail(`${method} ${path}: no value for {${name}}`)),
      statuses: new Set(Object.keys(op.responses)),
      needsToken: op.security.length > 0,
      descriptions: Object.fromEntries(Object.entries(op.responses).map(([status, r]) => [status, r.description])),
    })),
  );
}

function rawAnswer(received: string): { status: number; error: number } {
  const answer = onlyAnswer(received);
  return { status: answer.status, error: rawErrorBody(answer).error };
}

test('every operation answers 400, 408, 414, 417 and 431 as it documents them: what any request can get', async (t) => {
  const { app } = await testApp(t);
  const slow = await testApp(t, { requestTimeoutMs: 300 });
  const operations = await documentedOperations(app);
  assert.ok(operations.length >= 13);
  // Listening before the requests go out at once (raw() would otherwise start each app listening once per request).
  for (const server of [app, slow.app]) await server.listen({ port: 0, host: '127.0.0.1' });
  await Promise.all(
    operations.map(async ({ name, method, url, statuses }) => {
      for (const status of ['400', '408', '414', '417', '431']) assert.ok(statuses.has(status), `${name} documents ${status}`);
      assert.deepEqual(rawAnswer(await raw(app, `${method} ${url} HTTP/1.1\r\nConnection: close\r\n\r\n`)), { status: 400, error: 40000 }, `${name} without Host`);
      const long = await app.inject({ method, url: `${url}?${'a'.repeat(5000)}` });
      assert.deepEqual([long.statusCode, long.json().error], [414, 41400], name);
      assert.deepEqual(
        rawAnswer(await raw(app, `${method} ${url} HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nConnection: close\r\n\r\n`)),
        { status: 417, error: 41700 },
        `${name} with an unmeetable Expect`,
      );
      assert.deepEqual(
        rawAnswer(await raw(app, `${method} ${url} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)),
        { status: 431, error: 43100 },
        `${name} with headers over 16 KiB`,
      );
      assert.deepEqual(rawAnswer(await raw(slow.app, `${method} ${url} HTTP/1.1\r\nHost: x\r\n`)), { status: 408, error: 40800 }, `${name} never finished`);
    }),
  );
});

test('413, 415 and 40001 are documented exactly on the operations that read a body, DELETEs included', async (t) => {
  // A stream (GET /plants/events) would never end for app.inject: with no stream allowed, the handler
  // refuses it (503 50304) where it would start one, after whatever reading a body would have been.
  const { app, token } = await testApp(t, { feedMaxStreams: 0 });
  // An admin token with every scope gets past every operation's own checks, to the body.
  const root = await token('root', { admin: true });
  const json = { ...bearer(root), 'content-type': 'application/json' };
  const operations = await documentedOperations(app);
  assert.ok(operations.filter((op) => op.statuses.has('413')).length >= 6, 'every POST and DELETE');
  for (const { name, method, url, statuses, descriptions } of operations) {
    const tooLarge = await app.inject({ method, url, headers: json, payload: `{"x":"${'x'.repeat(70 * 1024)}"}` });
    const notJson = await app.inject({ method, url, headers: { ...bearer(root), 'content-type': 'text/plain' }, payload: 'x' });
    const malformed = await app.inject({ method, url, headers: json, payload: '{' });
    const answered = [tooLarge.statusCode, notJson.statusCode, malformed.statusCode];
    if (statuses.has('413')) {
      assert.ok(statuses.has('415') && /40001/.test(descriptions['400'] ?? ''), name);
      assert.deepEqual([...answered, malformed.json().error], [413, 415, 400, 40001], name);
    } else {
      // GET and HEAD bodies are not read at all: whatever is sent, the operation answers as without one.
      assert.ok(!statuses.has('415'), name);
      for (const status of answered) assert.ok(statuses.has(String(status)) && ![413, 415].includes(status), `${name}: ${status}`);
      if (malformed.statusCode === 400) assert.notEqual(malformed.json().error, 40001, name);
    }
  }
});

test('503 50301 is documented exactly on the operations that answer it while the store is not open', async (t) => {
  const starting = await buildApp({ store: new LateStore(), logger: silentLogger });
  t.after(() => starting.close());
  for (const { name, method, url, statuses, descriptions } of await documentedOperations(starting)) {
    const res = await starting.inject({ method, url });
    if (statuses.has('503') && /50301/.test(descriptions['503'] ?? '')) {
      assert.deepEqual([res.statusCode, res.json().error], [503, 50301], name);
    } else {
      // Any operation may be refused near MAX_CONNECTIONS (50303), before it is routed; nothing else here.
      assert.equal(descriptions['503'], `50303: ${ERRORS.tooManyConnections.message}`, name);
      assert.equal(res.statusCode, 200, name);
    }
  }
});

test('every operation behind a token answers 503 50302 for a JWT whose key cannot be fetched, as it documents', async (t) => {
  const noProvider = await testApp(t, { jwtJwksUrl: `http://127.0.0.1:${await closedPort()}/jwks`, jwtAudience: AUDIENCE });
  const key = await signingKey('RS256', 'k1');
  const scope = 'plants:read plants:write webhooks:manage plants:admin';
  const jwt = await sign({ issuer: 'https://idp.example/' } as TestProvider, { sub: 'alice', scope }, { key });
  const guarded = (await documentedOperations(noProvider.app)).filter((op) => op.needsToken);
  assert.ok(guarded.length >= 10);
  for (const { name, method, url, descriptions } of guarded) {
    assert.match(descriptions['503'] ?? '', /50302/, name);
    const res = await noProvider.app.inject({ method, url, headers: bearer(jwt) });
    assert.deepEqual([res.statusCode, res.json().error], [503, 50302], name);
  }
});
