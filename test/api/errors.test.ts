import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import type { InjectOptions } from 'fastify';
import { ERROR_ROWS, ERRORS, type ErrorRow } from '../../src/http/errors.js';
import { buildApp } from '../../src/app.js';
import { LateStore } from '../../src/store/wrappers/late.js';
import { bearer, errorBody, silentLogger, testApp } from '../helpers/app.js';
import { AUDIENCE, closedPort, sign, signingKey, type TestProvider } from '../helpers/jwt-provider.js';
import { onlyAnswer, raw, rawErrorBody } from '../helpers/raw-http.js';

function parseRaw(received: string): { status: number; headers: Readonly<Record<string, string>>; body: { error: number; message: string } } {
  const answer = onlyAnswer(received);
  return { status: answer.status, headers: answer.headers, body: rawErrorBody(answer) };
}

const json = { 'content-type': 'application/json' };

test('every row of the error table is produced by some request, with the Error body and its status', async (t) => {
  const seen = new Set<number>();
  const expectRow = (row: ErrorRow, status: number, body: { error: number; message: string }, label: string) => {
    assert.equal(status, row.status, label);
    assert.equal(body.error, row.code, label);
    seen.add(body.error);
  };

  const fixture = await testApp(t);
  const { app, token } = fixture;
  const alice = await token('alice');
  const reader = await token('reader', { scopes: ['plants:read'] });
  const root = await token('root', { admin: true });
  await app.inject({ method: 'POST', url: '/plants', headers: { ...bearer(alice), ...json }, payload: '{"id":1,"name":"a"}' });

  const injected: Array<[ErrorRow, InjectOptions]> = [
    [ERRORS.badRequest, { method: 'GET', url: '/plants%zz' }],
    [ERRORS.malformedJson, { method: 'POST', url: '/plants', headers: { ...bearer(alice), ...json }, payload: '{"id":1,' }],
    [ERRORS.malformedJson, { method: 'POST', url: '/plants', headers: { ...bearer(alice), ...json }, payload: '' }],
    [ERRORS.malformedJson, { method: 'POST', url: '/plants', headers: { ...bearer(alice), ...json }, payload: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d]) }],
    [ERRORS.malformedJson, { method: 'POST', url: '/plants', headers: { ...bearer(alice), ...json }, payload: '\ufeff{"id":1,"name":"bom"}' }],
    [ERRORS.invalidNewPlant, { method: 'POST', url: '/plants', headers: { ...bearer(alice), ...json }, payload: '{"id":1}' }],
    [ERRORS.invalidNewPlant, { method: 'POST', url: '/plants', headers: bearer(alice) }],
    [ERRORS.invalidQuery, { method: 'GET', url: '/plants?limit=0', headers: bearer(alice) }],
    [ERRORS.invalidPath, { method: 'DELETE', url: '/plants/one', headers: bearer(alice) }],
    [ERRORS.missingToken, { method: 'GET', url: '/plants' }],
    [ERRORS.invalidToken, { method: 'GET', url: '/plants', headers: bearer('pst_nope') }],
    [ERRORS.insufficientScope, { method: 'POST', url: '/plants', headers: { ...bearer(reader), ...json }, payload: '{"id":2,"name":"b"}' }],
    [ERRORS.routeNotFound, { method: 'GET', url: '/nowhere' }],
    [ERRORS.routeNotFound, { method: 'GET', url: '/plants/1/leaves' }],
    [ERRORS.plantNotFound, { method: 'DELETE', url: '/plants/404', headers: bearer(alice) }],
    [ERRORS.methodNotAllowed, { method: 'PUT', url: '/plants', headers: bearer(alice) }],
    [ERRORS.idConflict, { method: 'POST', url: '/plants', headers: { ...bearer(alice), ...json }, payload: '{"id":1,"name":"changed"}' }],
    [ERRORS.bodyTooLarge, { method: 'POST', url: '/plants', headers: { ...bearer(alice), ...json }, payload: `{"id":3,"name":"${'x'.repeat(64 * 1024)}"}` }],
    [ERRORS.unsupportedMediaType, { method: 'POST', url: '/plants', headers: { ...bearer(alice), 'content-type': 'text/plain' }, payload: '{"id":4,"name":"c"}' }],
    [ERRORS.unsupportedMediaType, { method: 'POST', url: '/plants', headers: { ...bearer(alice), 'content-type': 'application/json; charset=latin1' }, payload: '{"id":4,"name":"c"}' }],
    [ERRORS.unsupportedMediaType, { method: 'POST', url: '/plants', headers: { ...bearer(alice), 'content-type': 'application/x-www-form-urlencoded' }, payload: 'id=4&name=c' }],
    [ERRORS.unsupportedMediaType, { method: 'POST', url: '/plants', headers: { ...bearer(alice), ...json, 'content-encoding': 'gzip' }, payload: '{"id":4,"name":"c"}' }],
    [ERRORS.invalidWebhook, { method: 'POST', url: '/webhooks', headers: { ...bearer(alice), ...json }, payload: '{"url":"ftp://files.example/"}' }],
    [ERRORS.privateDestination, { method: 'POST', url: '/webhooks', headers: { ...bearer(alice), ...json }, payload: '{"url":"http://127.0.0.1/"}' }],
    [ERRORS.webhookNotFound, { method: 'DELETE', url: '/webhooks/ep_AAAAAAAAAAAAAAAAAAAAAA', headers: bearer(alice) }],
    [ERRORS.invalidTokenRequest, { method: 'POST', url: '/tokens', headers: { ...bearer(root), ...json }, payload: '{"user":"bob","expiresIn":"1w"}' }],
    [ERRORS.adminRequired, { method: 'POST', url: '/tokens', headers: { ...bearer(alice), ...json }, payload: '{"user":"bob"}' }],
    [ERRORS.tokenNotFound, { method: 'DELETE', url: '/tokens/999', headers: bearer(alice) }],
    // The feed's refusals come before its stream starts (test/api/feed.test.ts streams for real).
    [ERRORS.invalidEventId, { method: 'GET', url: '/plants/events?since=yesterday', headers: bearer(alice) }],
    [ERRORS.feedExpired, { method: 'GET', url: '/plants/events', headers: { ...bearer(alice), 'last-event-id': '18446744073709551615-1' } }],
  ];
  for (const [row, options] of injected) {
    const res = await app.inject(options);
    expectRow(row, res.statusCode, errorBody(res), `${options.method} ${options.url} ${String(options.payload ?? '').slice(0, 30)}`);
  }
  const moreInjected: Array<[ErrorRow, InjectOptions]> = [
    [ERRORS.urlTooLong, { method: 'GET', url: `/plants?tag=${'t'.repeat(5000)}`, headers: bearer(alice) }],
  ];
  for (const [row, options] of moreInjected) {
    const res = await app.inject(options);
    expectRow(row, res.statusCode, errorBody(res), `${options.method} ${String(options.url).slice(0, 40)}`);
  }

  // Limits that need their own settings: a token over RATE_LIMIT, an address over AUTH_FAILURE_LIMIT.
  const limited = await testApp(t, { rateLimit: { limit: 1, windowMs: 3_600_000 }, authFailureLimit: { limit: 1, windowMs: 3_600_000 } });
  const bob = await limited.token('bob');
  await limited.app.inject({ method: 'GET', url: '/plants', headers: bearer(bob) });
  const overRate = await limited.app.inject({ method: 'GET', url: '/plants', headers: bearer(bob) });
  expectRow(ERRORS.rateLimited, overRate.statusCode, errorBody(overRate), 'second request within a 1/minute limit');
  await limited.app.inject({ method: 'GET', url: '/plants', headers: bearer('pst_wrong1'), remoteAddress: '192.0.2.7' });
  const overFailures = await limited.app.inject({ method: 'GET', url: '/plants', headers: bearer('pst_wrong2'), remoteAddress: '192.0.2.7' });
  expectRow(ERRORS.authFailuresLimited, overFailures.statusCode, errorBody(overFailures), 'second failure within a 1/minute limit');

  // The feed's limits, here none at all: FEED_MAX_STREAMS per instance, then FEED_MAX_STREAMS_PER_TOKEN.
  for (const [row, limits] of [[ERRORS.feedFull, { feedMaxStreams: 0 }], [ERRORS.tooManyStreams, { feedMaxStreamsPerToken: 0 }]] as const) {
    const noStreams = await testApp(t, limits);
    const refused = await noStreams.app.inject({ method: 'GET', url: '/plants/events', headers: bearer(await noStreams.token('dave')) });
    expectRow(row, refused.statusCode, errorBody(refused), `a stream over ${JSON.stringify(limits)}`);
  }

  // WEBHOOK_MAX_PER_USER endpoints, then 409; WEBHOOK_MAX_QUEUED_PER_USER events queued by operations, then 409.
  const oneHook = await testApp(t, { webhookMaxPerUser: 1, webhookMaxQueuedPerUser: 1 });
  const carol = await oneHook.token('carol');
  const hook = { method: 'POST', url: '/webhooks', headers: { ...bearer(carol), ...json }, payload: '{"url":"https://hooks.example/"}' } as const;
  const carols = await oneHook.app.inject(hook);
  assert.equal(carols.statusCode, 201);
  const overLimit = await oneHook.app.inject(hook);
  expectRow(ERRORS.webhookLimit, overLimit.statusCode, errorBody(overLimit), 'a second endpoint over WEBHOOK_MAX_PER_USER=1');
  const testEvent = { method: 'POST', url: `/webhooks/${carols.json().id as string}/test`, headers: bearer(carol) } as const;
  assert.equal((await oneHook.app.inject(testEvent)).statusCode, 202);
  const overQueued = await oneHook.app.inject(testEvent);
  expectRow(ERRORS.webhookQueueFull, overQueued.statusCode, errorBody(overQueued), 'a second test event over WEBHOOK_MAX_QUEUED_PER_USER=1');

  // The operations on one endpoint: a bad operation body, an event it does not have, a disabled endpoint.
  const endpoint = (await app.inject({ ...hook, headers: { ...bearer(alice), ...json } })).json().id as string;
  const operation = (method: 'POST' | 'PATCH', path: string, payload?: string) => app.inject({
    method, url: `/webhooks/${endpoint}${path}`, headers: payload === undefined ? bearer(alice) : { ...bearer(alice), ...json },
    ...(payload === undefined ? {} : { payload }),
  });
  const badSince = await operation('POST', '/recover', '{"since":"yesterday"}');
  expectRow(ERRORS.invalidWebhookOperation, badSince.statusCode, errorBody(badSince), 'recover since yesterday');
  const noEvent = await operation('POST', '/deliveries/msg_000000000000aaaaaaaaaaaaaaaaaaaa/resend');
  expectRow(ERRORS.webhookEventNotFound, noEvent.statusCode, errorBody(noEvent), 'resend of an unknown event');
  assert.equal((await operation('PATCH', '', '{"enabled":false}')).statusCode, 200);
  const disabled = await operation('POST', '/test');
  expectRow(ERRORS.webhookDisabled, disabled.statusCode, errorBody(disabled), 'a test event to a disabled endpoint');

  // 50301: a server whose store is not open yet (it listens before its store opens).
  const starting = await buildApp({ store: new LateStore(), logger: silentLogger });
  t.after(() => starting.close());
  const notReady = await starting.inject({ method: 'GET', url: '/readyz' });
  expectRow(ERRORS.notServing, notReady.statusCode, errorBody(notReady), 'store not open yet');

  // 50302: a JWT whose key cannot be fetched, the identity provider being unreachable (nothing listens
  // on its port). Never a 401: the token may well be valid.
  const key = await signingKey('RS256', 'k1');
  const noProvider = await testApp(t, { jwtJwksUrl: `http://127.0.0.1:${await closedPort()}/jwks`, jwtAudience: AUDIENCE });
  const jwt = await sign({ issuer: 'https://idp.example/' } as TestProvider, { sub: 'alice', scope: 'plants:read' }, { key });
  const providerDown = await noProvider.app.inject({ method: 'GET', url: '/plants', headers: bearer(jwt) });
  expectRow(ERRORS.identityProviderUnavailable, providerDown.statusCode, errorBody(providerDown), 'identity provider unreachable');
  assert.match(String(providerDown.headers['retry-after']), /^[1-9]\d*$/);

  // Errors raised by Node's HTTP parser, before any route runs, need a real socket.
  const tooLarge = parseRaw(await raw(app, `GET /plants HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`));
  expectRow(ERRORS.headersTooLarge, tooLarge.status, tooLarge.body, 'headers over 16 KiB');
  assert.match(String(tooLarge.headers['content-type']), /^application\/json/);
  const unmeetable = parseRaw(await raw(app, 'GET /plants HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nConnection: close\r\n\r\n'));
  expectRow(ERRORS.expectationFailed, unmeetable.status, unmeetable.body, 'an Expect other than 100-continue');
  const garbage = parseRaw(await raw(app, 'NOT HTTP AT ALL\r\n\r\n'));
  expectRow(ERRORS.badRequest, garbage.status, garbage.body, 'garbled request line');

  // 50303: a server near MAX_CONNECTIONS (here 2: from one open connection on) refuses a connection from
  // an address at its share (here 1), answering its request. The first connection holds a request in
  // progress, so that nothing closes it meanwhile.
  const crowded = await testApp(t, { maxConnections: 2, maxConnectionsPerAddress: 1 });
  let arrived: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (arrived = resolve));
  crowded.app.get('/hold', () => {
    arrived();
    return new Promise(() => undefined);
  });
  await crowded.app.listen({ port: 0, host: '127.0.0.1' });
  const holder = connect((crowded.app.server.address() as { port: number }).port, '127.0.0.1');
  t.after(() => holder.destroy());
  holder.on('error', () => undefined);
  holder.write('GET /hold HTTP/1.1\r\nHost: x\r\n\r\n');
  await held;
  const refused = parseRaw(await raw(crowded.app, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'));
  expectRow(ERRORS.tooManyConnections, refused.status, refused.body, 'an address at its share near MAX_CONNECTIONS');
  assert.equal(refused.headers['retry-after'], '2');
  holder.destroy();

  // A client that starts a request and never finishes it is cut off with 408 (here after 300 ms).
  const slow = await testApp(t, { requestTimeoutMs: 300 });
  const timeout = parseRaw(await raw(slow.app, 'GET /plants HTTP/1.1\r\nHost: x\r\n'));
  expectRow(ERRORS.requestTimeout, timeout.status, timeout.body, 'request not finished in time');

  // 503: another connection holds the write lock longer than the store waits. Nothing is stored.
  const { holdWriteLock, sql } = fixture;
  const release = await holdWriteLock();
  const blocked = await app.inject({ method: 'POST', url: '/plants', headers: { ...bearer(alice), ...json }, payload: '{"id":5,"name":"late"}' });
  await release();
  expectRow(ERRORS.storeUnavailable, blocked.statusCode, errorBody(blocked), 'write lock held elsewhere');
  assert.equal(blocked.headers['retry-after'], '2');
  // On PostgreSQL the server's statement_timeout cancels the waiting INSERT before the client gives up
  // on it; the other way round, the INSERT would commit once the lock is released, after its 503.
  const stored = (await fixture.store.plants.listPlants({ owner: 'alice', limit: 10 })).plants.map((p) => p.name);
  assert.deepEqual(stored, ['a'], 'the 503 stored nothing');
  const afterOutage = await app.inject({ method: 'POST', url: '/plants', headers: { ...bearer(alice), ...json }, payload: '{"id":5,"name":"late"}' });
  assert.equal(afterOutage.statusCode, 200, 'the same request succeeds once the lock is gone');

  // 500: the schema breaks underneath the app. The answer hides the cause and names the request id.
  await sql('DROP TABLE plants');
  const failed = await app.inject({ method: 'GET', url: '/plants', headers: bearer(alice) });
  const body = errorBody(failed);
  expectRow(ERRORS.internal, failed.statusCode, body, 'table dropped');
  assert.match(body.message, /^Internal error \(request id [A-Za-z0-9_-]{8}-[0-9a-z]+\)$/);

  assert.deepEqual([...seen].sort(), ERROR_ROWS.map((r) => r.code).sort(), 'every row of the table was produced');
});

test('405 names the allowed methods in Allow, for every other method', async (t) => {
  const { app } = await testApp(t);
  for (const [url, allow] of [['/plants', 'GET, HEAD, POST'], ['/plants/1', 'DELETE'], ['/openapi.json', 'GET, HEAD']] as const) {
    for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE'] as const) {
      if (allow.split(', ').includes(method)) continue;
      const res = await app.inject({ method, url });
      assert.equal(res.statusCode, 405, `${method} ${url}`);
      assert.equal(res.headers.allow, allow, `${method} ${url}`);
      if (method !== 'HEAD') assert.equal(errorBody(res).error, 40500);
    }
  }
});

test('a 500 is logged with its request id and cause; the answer carries neither the cause nor the token', async (t) => {
  const logs = new PassThrough();
  let logged = '';
  logs.on('data', (d) => (logged += d));
  const { app, token, sql } = await testApp(t, { logStream: logs });
  const alice = await token('alice');
  await sql('DROP TABLE plants');
  const res = await app.inject({ method: 'GET', url: '/plants', headers: bearer(alice) });
  assert.equal(res.statusCode, 500);
  const requestId = /request id ([A-Za-z0-9_-]{8}-[0-9a-z]+)/.exec(errorBody(res).message)?.[1];
  assert.ok(requestId);
  assert.doesNotMatch(res.body, /plants"?\b.*(exist|table)|sqlite|relation|stack/i);
  const entry = logged.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((l) => l.msg === 'request failed');
  assert.equal(entry.reqId, requestId);
  assert.match(entry.err.message, /plants/);
  assert.ok(!logged.includes(alice), 'the token never reaches the log');
});

test('a Content-Length over 64 KiB is refused with 413 before the body is read', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  const answer = await raw(
    app,
    `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${alice}\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\nConnection: close\r\n\r\n{`,
    { end: false }, // a client still uploading: the answer must come from the declared length alone
  );
  const { status, body } = parseRaw(answer);
  assert.equal(status, 413);
  assert.equal(body.error, 41300);
});
