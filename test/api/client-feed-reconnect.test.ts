import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { PlantStore, type FeedEvent } from '@plantstore/client';
import { apiError, nothingListening } from '../helpers/client.js';
import { eventually } from '../helpers/eventually.js';
import { standIn, type Step } from '../helpers/http-stand-in.js';

/**
 * watchPlants against a stand-in that answers what a real server does only now and then, on cue: a
 * stream ended by `end` (slow-reader, shutting-down, token-revoked), a stream that just stops, a 503
 * with a Retry-After, a proxy's page. test/api/client-feed.test.ts follows a real server.
 */

const STREAM = { 'content-type': 'text/event-stream; charset=utf-8' };

/** One event as the server writes it. */
const sse = (type: string, id: string | undefined, data: string) => `event: ${type}\n${id === undefined ? '' : `id: ${id}\n`}data: ${data}\n\n`;
/** A stream that says `retry: 20` (so reconnects come soon), then the events given, then ends. */
const stream = (...events: string[]): Step => ({ status: 200, headers: STREAM, body: `retry: 20\n\n${events.join('')}` });
const ready = (id: string) => sse('ready', id, '{}');
const created = (id: string, plant: string) => sse('plant.created', id, plant);
const end = (reason: string) => sse('end', undefined, JSON.stringify({ reason, message: `the stream ends: ${reason}` }));
/** A Plant Store error answer. */
const refusal = (status: number, error: number, headers: Record<string, string> = {}): Step => ({
  status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers }, body: JSON.stringify({ error, message: `refused with ${error}` }),
});

/** Iterates `feed` to its end; returns what it yielded and what it threw (undefined when it ended). */
async function drain(feed: AsyncIterable<FeedEvent>): Promise<{ events: FeedEvent[]; error: unknown }> {
  const events: FeedEvent[] = [];
  try {
    for await (const event of feed) events.push(event);
  } catch (error) {
    return { events, error };
  }
  return { events, error: undefined };
}

test('after an end event or a stream that just stops it reconnects with the last event id; ready comes once; a 401 is thrown', async (t) => {
  const proxy = await standIn(t, {
    steps: [
      stream(ready('7'), created('8', '{"id":9007199254740993,"name":"a","tag":"t"}'), sse('plant.updated', '9', '{}'), end('slow-reader')),
      stream(ready('9'), sse('plant.deleted', '10', '{"id":-9223372036854775808,"name":"b"}'), end('shutting-down')),
      stream(ready('10'), created('11', '{"id":3,"name":"c"}')), // then the body ends, with no end event
      stream(ready('11'), end('a reason this client does not know')),
    ],
    then: refusal(401, 40101),
  });
  const { events, error } = await drain(new PlantStore({ baseUrl: proxy.url, token: 'pst_x' }).watchPlants({ since: '7' }));
  assert.deepEqual(events, [
    { type: 'ready', id: '7' },
    { type: 'plant.created', id: '8', plant: { id: 9007199254740993n, name: 'a', tag: 't' } },
    { type: 'plant.deleted', id: '10', plant: { id: -9223372036854775808n, name: 'b' } },
    { type: 'plant.created', id: '11', plant: { id: 3n, name: 'c' } },
  ]);
  await apiError(Promise.reject(error), { status: 401, error: 40101 });
  // `since`: the one given, then the last event's id; the unknown event's (9) counts too, as in EventSource.
  assert.deepEqual(proxy.seen.map((s) => s.url.replace('/plants/events?since=', '')), ['7', '9', '10', '11', '11']);
  assert.ok(proxy.seen.every((s) => s.headers['last-event-id'] === undefined), 'no Last-Event-ID: across origins, CORS would refuse it');
  assert.ok(proxy.seen.every((s) => s.headers.authorization === 'Bearer pst_x' && s.headers.accept === 'text/event-stream'));
});

test('token-revoked: it reconnects at once, without the server\'s retry wait, and throws the 401 that follows', async (t) => {
  const proxy = await standIn(t, {
    steps: [{ status: 200, headers: STREAM, body: `retry: 600000\n\n${ready('1')}${end('token-revoked')}` }],
    then: refusal(401, 40101),
  });
  const { events, error } = await drain(new PlantStore({ baseUrl: proxy.url, token: 'pst_x' }).watchPlants());
  assert.deepEqual(events, [{ type: 'ready', id: '1' }]);
  await apiError(Promise.reject(error), { status: 401, error: 40101 });
  assert.equal(proxy.seen[1]?.url, '/plants/events?since=1');
});

test('refusals a reconnect cannot mend are thrown at once: 400, 403, 410, 429 (with its Retry-After), a 500', async (t) => {
  for (const [status, code] of [[400, 40009], [403, 40300], [410, 41000], [429, 42902], [500, 50000]] as const) {
    const proxy = await standIn(t, { then: refusal(status, code, { 'retry-after': '1' }) });
    const { events, error } = await drain(new PlantStore({ baseUrl: proxy.url, token: 'pst_x' }).watchPlants({ since: '1' }));
    assert.deepEqual(events, []);
    const thrown = await apiError(Promise.reject(error), { status, error: code, message: new RegExp(`refused with ${code}`) });
    if (status === 429) assert.equal(thrown.retryAfterMs, 1000);
    assert.equal(proxy.seen.length, 1, `${status} is not retried`);
  }
});

test('a 503 is retried after its Retry-After, at most `retries` times in a row: a stream that opens starts the count again', async (t) => {
  const busy = refusal(503, 50304, { 'retry-after': '0' });
  const proxy = await standIn(t, {
    steps: [busy, busy, stream(ready('1'), created('2', '{"id":2,"name":"a"}'), end('shutting-down')), busy, busy, stream(ready('2'), created('3', '{"id":3,"name":"b"}'))],
    then: busy,
  });
  const { events, error } = await drain(new PlantStore({ baseUrl: proxy.url, token: 'pst_x', retries: 2 }).watchPlants());
  assert.deepEqual(events.map((e) => e.id), ['1', '2', '3']);
  await apiError(Promise.reject(error), { status: 503, error: 50304 });
  assert.equal(proxy.seen.length, 9, 'the last stream ended, then three attempts: the first and two retries');

  // A wait beyond maxRetryDelayMs is not waited for: thrown at once, with the server's Retry-After.
  const long = await standIn(t, { then: refusal(503, 50304, { 'retry-after': '30' }) });
  const { error: thrown } = await drain(new PlantStore({ baseUrl: long.url, token: 'pst_x', maxRetryDelayMs: 1000 }).watchPlants());
  assert.equal((await apiError(Promise.reject(thrown), { status: 503, error: 50304 })).retryAfterMs, 30_000);
  assert.equal(long.seen.length, 1);
});

test('on a reconnect, a 429 42902 (the stream just lost still counted) is retried as a 503 is; on the first attempt it is thrown', async (t) => {
  const limited = refusal(429, 42902, { 'retry-after': '0' });
  const proxy = await standIn(t, {
    steps: [stream(ready('1'), created('2', '{"id":2,"name":"a"}')), limited, stream(ready('2'), created('3', '{"id":3,"name":"b"}'), end('token-revoked'))],
    then: refusal(401, 40101),
  });
  const { events, error } = await drain(new PlantStore({ baseUrl: proxy.url, token: 'pst_x', retries: 2 }).watchPlants());
  assert.deepEqual(events.map((e) => e.id), ['1', '2', '3']);
  await apiError(Promise.reject(error), { status: 401, error: 40101 });
  assert.deepEqual(proxy.seen.map((s) => s.url), ['/plants/events', '/plants/events?since=2', '/plants/events?since=2', '/plants/events?since=3']);
});

test('a network failure is retried with a backoff, then thrown as status 0 with its cause', async () => {
  const feed = new PlantStore({ baseUrl: await nothingListening(), token: 'pst_x', retries: 1 }).watchPlants();
  const failure = await apiError(feed.next(), { status: 0, error: 0, message: /^network failure: fetch failed \(ECONNREFUSED\)$/ });
  assert.ok(failure.cause instanceof Error);
});

test('what is not the feed is a PlantStoreError with error 0: a 200 page that is no event stream, a plant event that holds no plant', async (t) => {
  const html = await standIn(t, { then: { status: 200, headers: { 'content-type': 'text/html' }, body: '<html>maintenance</html>' } });
  await apiError(new PlantStore({ baseUrl: html.url, token: 'pst_x' }).watchPlants().next(), { status: 200, error: 0, message: /not an event stream/ });
  for (const data of ['{"id":1.5,"name":"a"}', '{"id":"1","name":"a"}', '{"id":1}', '{"id":1,"name":"a","tag":7}', 'not json']) {
    const proxy = await standIn(t, { then: stream(ready('1'), created('2', data)) });
    const { events, error } = await drain(new PlantStore({ baseUrl: proxy.url, token: 'pst_x' }).watchPlants());
    assert.deepEqual(events, [{ type: 'ready', id: '1' }], data);
    await apiError(Promise.reject(error), { status: 200, error: 0, message: /not a plant in the plant.created event "2"/ });
  }
});

test('an abort ends the iteration without an error: before it starts, and while it waits to reconnect', async (t) => {
  const proxy = await standIn(t, { then: refusal(503, 50304, { 'retry-after': '20' }) });
  const client = new PlantStore({ baseUrl: proxy.url, token: 'pst_x' });
  assert.deepEqual(await drain(client.watchPlants({ signal: AbortSignal.abort() })), { events: [], error: undefined });
  assert.equal(proxy.seen.length, 0, 'nothing was sent');
  const controller = new AbortController();
  const waiting = drain(client.watchPlants({ signal: controller.signal }));
  await eventually(() => (proxy.seen.length === 1 ? true : undefined), 'the first attempt');
  controller.abort();
  assert.deepEqual(await waiting, { events: [], error: undefined });
  assert.equal(proxy.seen.length, 1);
});

test('a stream silent past idleTimeoutMs, not even a heartbeat, is taken for a dead connection and resumed from the last id', async (t) => {
  const urls: string[] = [];
  const server = createServer((request, response) => {
    urls.push(request.url ?? '');
    response.writeHead(200, STREAM);
    // The first stream says ready, then nothing more, its connection left open: as one cut without a word.
    if (urls.length === 1) response.write(`retry: 20\n\n${ready('5')}`);
    else response.end(`retry: 20\n\n${ready('5')}${created('6', '{"id":6,"name":"a"}')}`);
  }).listen(0, '127.0.0.1');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  await once(server, 'listening');
  const client = new PlantStore({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: 'pst_x' });
  const feed = client.watchPlants({ idleTimeoutMs: 200 });
  assert.deepEqual((await feed.next()).value, { type: 'ready', id: '5' });
  assert.deepEqual((await feed.next()).value, { type: 'plant.created', id: '6', plant: { id: 6n, name: 'a' } });
  await feed.return();
  assert.deepEqual(urls, ['/plants/events', '/plants/events?since=5']);
  for (const idleTimeoutMs of [-1, Number.NaN, Infinity]) await assert.rejects(client.watchPlants({ idleTimeoutMs }).next(), RangeError);
});
