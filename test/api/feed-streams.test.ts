import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { FEED_START, feedId } from '../../src/domain/feed.js';
import { REVOCATION_WITHIN_MS } from '../../src/domain/token.js';
import { STREAM_BUFFER_BYTES } from '../../src/feed/stream.js';
import { READ_PAGE } from '../../src/feed/hub.js';
import { BACKEND, bearer, create, testApp } from '../helpers/app.js';
import { rawErrorBody } from '../helpers/raw-http.js';
import { openFeed, type EventStream } from '../helpers/sse.js';
import { issueToken } from '../helpers/tokens.js';

/**
 * GET /plants/events over real connections, the streams the server ends and what it sends while
 * nothing happens: the heartbeat, a slow reader, a token revoked or expired, the shutdown.
 */

/** The reason and message of the stream's end event; fails when it has none. */
async function endOf(stream: EventStream): Promise<{ reason: string; message: string }> {
  const end = await stream.event('end');
  const body = JSON.parse(end.data) as { reason: string; message: string };
  assert.deepEqual(Object.keys(body).sort(), ['message', 'reason'], end.data);
  assert.equal(typeof body.message, 'string');
  return body;
}

/** A write to a stream's response, seen from the server: its buffered bytes before and after it. */
interface Write {
  readonly before: number;
  readonly after: number;
}

/**
 * The server side of the next stream opened on `app`: every write to its response with the bytes the
 * response held unsent (writableLength) around it, and when the server ends it.
 */
function watchNextStream(app: FastifyInstance) {
  const writes: Write[] = [];
  let ended = false;
  let serverEnded: () => void = () => undefined;
  const end = new Promise<void>((resolve) => (serverEnded = resolve));
  const watch = (req: { url?: string }, res: ServerResponse): void => {
    if (!req.url?.startsWith('/plants/events')) return;
    app.server.off('request', watch);
    const write = res.write.bind(res) as (text: string) => boolean;
    res.write = ((text: string) => {
      const before = res.writableLength;
      const result = write(text);
      writes.push({ before, after: res.writableLength });
      return result;
    }) as typeof res.write;
    const finish = res.end.bind(res) as (text: string) => ServerResponse;
    res.end = ((text: string) => {
      ended = true;
      const result = finish(text);
      serverEnded();
      return result;
    }) as typeof res.end;
  };
  app.server.prependListener('request', watch);
  return { writes, end, ended: () => ended };
}

test('a quiet stream gets a heartbeat comment every FEED_HEARTBEAT, and no event', async (t) => {
  const { app, token } = await testApp(t, { feedHeartbeatMs: 50 });
  const stream = await openFeed(t, app, { token: await token('alice') });
  await stream.until(() => (stream.text.split(': heartbeat\n\n').length > 2 ? true : undefined), 'two heartbeats');
  assert.match(stream.text, /^retry: 2000\n\nevent: ready\nid: 0\ndata: \{\}\n\n(: heartbeat\n\n)+$/);
  assert.deepEqual(stream.events.map((e) => e.type), ['ready']);
});

test('a client that stops reading is sent end slow-reader and its answer is ended; the server held not much past STREAM_BUFFER_BYTES for it', async (t) => {
  const { app, store, token } = await testApp(t);
  const server = watchNextStream(app);
  const stream = await openFeed(t, app, { token: await token('alice'), paused: true });
  // The largest events a plant makes: a control character is written \u00XX in JSON, six bytes.
  const name = '\u0001'.repeat(200);
  const tag = '\u0002'.repeat(100);
  // Before the server's own buffer fills, the sockets' do (megabytes on loopback): creates go on until
  // the server gives up on the stream, in batches, each of which a fan-out writes at once.
  const BATCH = 32;
  let created = 0;
  while (!server.ended()) {
    assert.ok(created < 20_000, 'the stream was never found slow');
    const outcomes = await Promise.all(Array.from({ length: BATCH }, (_, i) => store.plants.createPlant('alice', { id: BigInt(created + i), name, tag })));
    assert.deepEqual(new Set(outcomes), new Set(['created']));
    created += BATCH;
  }
  await server.end;
  // Nothing was written to a response already holding more than the bound, but the end event.
  assert.ok(server.writes.length > 2, `${server.writes.length} writes`);
  for (const [i, w] of server.writes.entries()) assert.ok(w.before <= STREAM_BUFFER_BYTES, `write ${i + 1} of ${server.writes.length} started with ${w.before} bytes held`);
  const most = Math.max(...server.writes.map((w) => w.after));
  const event = Buffer.byteLength(JSON.stringify({ id: 0, name, tag }));
  // One write carries at most one read of the log: the fan-outs are spaced, so a read may hold more than a batch.
  assert.ok(most > STREAM_BUFFER_BYTES && most <= STREAM_BUFFER_BYTES + READ_PAGE * (event + 64), `at most ${most} bytes held, for a bound of ${STREAM_BUFFER_BYTES}`);

  // The client reads at last (within the 5 s the server gives it): what was sent, then the end.
  stream.resume();
  assert.equal(await stream.finished, 'ended', 'the server ended the answer; it did not cut the connection');
  assert.equal((await endOf(stream)).reason, 'slow-reader');
  const [ready, ...sent] = stream.events;
  const last = sent.pop();
  assert.equal(ready?.type, 'ready');
  assert.equal(last?.type, 'end');
  assert.ok(sent.length > 0 && sent.length <= created, `${sent.length} of ${created} events sent`);
  assert.ok(stream.text.endsWith(`event: end\ndata: ${last.data}\n\n`), 'the end event is the last thing sent');
  // The events it did send are the log's first ones, in order, none missing: it resumes from the last.
  const { events: log } = await store.feed.readFeed(FEED_START, sent.length, 'alice');
  assert.deepEqual(sent.map((e) => e.lastEventId), log.map((e) => feedId(e.at)));
  assert.deepEqual(sent.map((e) => `${e.type} ${e.data}`), log.map((e) => `plant.created ${e.body}`));
});

test('a token revoked while its stream is open ends it with end token-revoked within REVOCATION_WITHIN_MS; its reconnect is refused 401', async (t) => {
  const { app, store, token } = await testApp(t);
  const { secret, record } = await issueToken(store, { user: 'alice' });
  const stream = await openFeed(t, app, { token: secret });
  const other = await openFeed(t, app, { token: await token('alice') });
  await stream.next();
  await other.next();
  const revoked = performance.now();
  assert.equal((await app.inject({ method: 'DELETE', url: `/tokens/${record.id}`, headers: bearer(secret) })).statusCode, 204);
  const end = await endOf(stream);
  const took = performance.now() - revoked;
  assert.equal(end.reason, 'token-revoked');
  assert.ok(took < REVOCATION_WITHIN_MS, `ended ${Math.round(took)} ms after the revocation`);
  assert.equal(await stream.finished, 'ended');
  const again = await (await openFeed(t, app, { token: secret })).answer();
  assert.deepEqual([again.status, rawErrorBody(again).error], [401, 40101]);
  // Another token's stream of the same user goes on.
  await create(app, await token('alice'), { id: 1, name: 'after' });
  assert.deepEqual((await other.next()).data, '{"id":1,"name":"after"}');
});

test('a token that expires while its stream is open ends it with end token-revoked', async (t) => {
  const { app, store, sql } = await testApp(t);
  const { secret, record } = await issueToken(store, { user: 'alice', expiresInMs: 3_600_000 });
  const stream = await openFeed(t, app, { token: secret });
  await stream.next();
  // The expiry moved into the past, as the clock would have moved past it: the test decides when.
  const past = BACKEND === 'postgres' ? "'1970-01-01T00:00:01Z'" : '1000';
  await sql(`UPDATE tokens SET expires_at = ${past} WHERE id = ${record.id}`);
  assert.equal((await endOf(stream)).reason, 'token-revoked');
  assert.equal(await stream.finished, 'ended');
});

test('app.close() ends an open stream with end shutting-down, and resolves without waiting for DRAIN_TIMEOUT', async (t) => {
  const DRAIN_TIMEOUT_MS = 30_000;
  const { app, token } = await testApp(t, { drainTimeoutMs: DRAIN_TIMEOUT_MS });
  const stream = await openFeed(t, app, { token: await token('alice') });
  await stream.next();
  const started = performance.now();
  const closed = app.close();
  assert.equal((await endOf(stream)).reason, 'shutting-down');
  assert.equal(await stream.finished, 'ended');
  await closed;
  // Nothing but the drain's deadline would take that long: the stream did not hold the shutdown.
  const took = performance.now() - started;
  assert.ok(took < DRAIN_TIMEOUT_MS / 2, `closed in ${Math.round(took)} ms`);
});
