import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { compareFeed, FEED_START, feedId, parseFeedId, type FeedEvent, type FeedPosition } from '../../src/domain/feed.js';
import { SECURITY_HEADERS } from '../../src/http/plugins/security-headers.js';
import type { Store } from '../../src/store/store.js';
import { bearer, create, testApp, type TestAppOptions } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { rawErrorBody, type RawAnswer } from '../helpers/raw-http.js';
import { openFeed, type FeedRequest, type ServerSentEvent } from '../helpers/sse.js';
import { issueToken } from '../helpers/tokens.js';

/**
 * GET /plants/events over real connections: the answer's head and opening, the events and whose they
 * are, every refusal. test/api/feed-streams.test.ts has the streams the server ends (slow reader,
 * revoked token, shutdown) and the heartbeat; test/store/feed.test.ts the log itself.
 */

/**
 * The log's events once `n` are final. On SQLite a create's answer waits for that; on PostgreSQL an older
 * transaction still running anywhere in the cluster (another test's) holds later events back a moment.
 */
function finalEvents(store: Store, n: number): Promise<readonly FeedEvent[]> {
  return eventually(async () => {
    const { events } = await store.feed.readFeed(FEED_START, 1000, null);
    return events.length >= n ? events : undefined;
  }, `${n} events final in the log`);
}

const idOf = (event: ServerSentEvent): FeedPosition => parseFeedId(event.lastEventId) ?? assert.fail(`not an event id: ${event.lastEventId}`);

/** What the events say, without their ids: the type and the data as sent. */
const what = (events: readonly ServerSentEvent[]) => events.map((e) => `${e.type} ${e.data}`);

function assertSecurityHeaders(headers: Readonly<Record<string, unknown>>, label: string): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) assert.equal(headers[name], value, `${label}: ${name}`);
}

/** The refusal is `status` with an Error body of `code`, as JSON, with the security headers. */
function assertRefusal(answer: RawAnswer, status: number, code: number, label = `${status} ${code}`): void {
  assert.equal(answer.status, status, `${label}: ${answer.body}`);
  assert.equal(rawErrorBody(answer).error, code, label);
  assertSecurityHeaders(answer.headers, label);
}

async function refusal(t: TestContext, app: Parameters<typeof openFeed>[1], request: FeedRequest): Promise<RawAnswer> {
  return (await openFeed(t, app, request)).answer();
}

async function fixture(t: TestContext, options: TestAppOptions = {}) {
  const f = await testApp(t, options);
  return { ...f, alice: await f.token('alice') };
}

test('a stream answers 200 as text/event-stream with the security headers, then retry and ready at the log\'s end', async (t) => {
  const { app, store, alice } = await fixture(t);
  const empty = await openFeed(t, app, { token: alice });
  assert.equal(empty.status, 200);
  assert.equal(empty.headers['content-type'], 'text/event-stream; charset=utf-8');
  assert.equal(empty.headers['x-accel-buffering'], 'no');
  assertSecurityHeaders(empty.headers, 'the stream');
  assert.equal(empty.headers['cache-control'], 'no-store');
  assert.deepEqual(await empty.next(), { type: 'ready', data: '{}', lastEventId: '0' }, 'an empty log ends at its start');
  assert.equal(empty.text, 'retry: 2000\n\nevent: ready\nid: 0\ndata: {}\n\n', 'retry first, then ready, as the contract writes them');

  assert.equal((await create(app, alice, { id: 1, name: 'one' })).statusCode, 200);
  assert.equal((await create(app, alice, { id: 2, name: 'two' })).statusCode, 200);
  const [first, second] = await finalEvents(store, 2);
  const now = await openFeed(t, app, { token: alice });
  assert.deepEqual(await now.next(), { type: 'ready', data: '{}', lastEventId: feedId(second!.at) }, 'without since: the log\'s end now');
  assert.ok(now.text.startsWith('retry: 2000\n\nevent: ready\n'), now.text);
  // The first stream was open meanwhile: it got both.
  assert.deepEqual(what(await empty.take(2)), ['plant.created {"id":1,"name":"one"}', 'plant.created {"id":2,"name":"two"}']);

  for (const request of [{ since: feedId(first!.at) }, { lastEventId: feedId(first!.at) }]) {
    const resumed = await openFeed(t, app, { token: alice, ...request });
    assert.deepEqual(await resumed.next(), { type: 'ready', data: '{}', lastEventId: feedId(first!.at) }, `ready is the resume point given (${JSON.stringify(request)})`);
    const next = await resumed.next();
    assert.deepEqual([next.type, next.data, next.lastEventId], ['plant.created', '{"id":2,"name":"two"}', feedId(second!.at)], 'then what came after it');
  }
});

test('created and deleted events come in commit order, each with its id, the exact int64 and the webhook body', async (t) => {
  const { app, store, alice } = await fixture(t);
  const stream = await openFeed(t, app, { token: alice });
  await stream.next();
  // Raw JSON texts: numbers past 2^53 keep every digit on the way in, and must on the way out.
  assert.equal((await create(app, alice, '{"id":9007199254740993,"name":"Fern","tag":"green"}')).statusCode, 200);
  assert.equal((await create(app, alice, '{"id":9223372036854775807,"name":"Max"}')).statusCode, 200);
  assert.equal((await create(app, alice, '{"id":-9223372036854775808,"name":"Min 🌵 \\"quoted\\"","tag":""}')).statusCode, 200);
  assert.equal((await app.inject({ method: 'DELETE', url: '/plants/9007199254740993', headers: bearer(alice) })).statusCode, 204);
  const events = await stream.take(4);
  assert.deepEqual(what(events), [
    'plant.created {"id":9007199254740993,"name":"Fern","tag":"green"}',
    'plant.created {"id":9223372036854775807,"name":"Max"}',
    'plant.created {"id":-9223372036854775808,"name":"Min 🌵 \\"quoted\\"","tag":""}',
    'plant.deleted {"id":9007199254740993,"name":"Fern","tag":"green"}',
  ]);
  // Concurrent creates commit in some order (batched together, on PostgreSQL across transactions): the
  // stream has them in the log's order, which is the commit order.
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => create(app, alice, { id: 100 + i, name: `p${i}` })));
  assert.deepEqual(answers.map((a) => a.statusCode), Array(20).fill(200));
  events.push(...(await stream.take(20)));
  const log = await finalEvents(store, 24);
  assert.deepEqual(events.map((e) => e.lastEventId), log.map((e) => feedId(e.at)), 'the log\'s ids, in its order');
  assert.deepEqual(events.map((e) => e.data), log.map((e) => e.body));
  for (let i = 1; i < events.length; i++) assert.ok(compareFeed(idOf(events[i - 1]!), idOf(events[i]!)) < 0, 'ids increase');
  assert.deepEqual(new Set(events.slice(4).map((e) => JSON.parse(e.data).name)), new Set(Array.from({ length: 20 }, (_, i) => `p${i}`)));
});

test('a user\'s stream has only its own plants\' events; an admin token\'s has every user\'s', async (t) => {
  const { app, token, alice } = await fixture(t);
  const bob = await token('bob');
  const mine = await openFeed(t, app, { token: alice });
  const everyone = await openFeed(t, app, { token: await token('root', { admin: true }) });
  await mine.next();
  await everyone.next();
  await create(app, bob, { id: 1, name: 'bob\'s' });
  await create(app, alice, { id: 1, name: 'alice\'s' });
  await app.inject({ method: 'DELETE', url: '/plants/1', headers: bearer(bob) });
  await app.inject({ method: 'DELETE', url: '/plants/1', headers: bearer(alice) });
  // Bob's events come before each of alice's: had they been sent to her, they would be here.
  assert.deepEqual(what(await mine.take(2)), ['plant.created {"id":1,"name":"alice\'s"}', 'plant.deleted {"id":1,"name":"alice\'s"}']);
  assert.deepEqual(what(await everyone.take(4)), [
    'plant.created {"id":1,"name":"bob\'s"}', 'plant.created {"id":1,"name":"alice\'s"}',
    'plant.deleted {"id":1,"name":"bob\'s"}', 'plant.deleted {"id":1,"name":"alice\'s"}',
  ]);
  // A resume reads the log again: the same filter there.
  const resumed = await openFeed(t, app, { token: alice, since: '0' });
  assert.deepEqual(what(await resumed.take(3)), ['ready {}', 'plant.created {"id":1,"name":"alice\'s"}', 'plant.deleted {"id":1,"name":"alice\'s"}']);
});

test('a replayed create and a conflicting one write no event', async (t) => {
  const { app, store, alice } = await fixture(t);
  const stream = await openFeed(t, app, { token: alice });
  await stream.next();
  assert.equal((await create(app, alice, { id: 1, name: 'first', tag: 'x' })).statusCode, 200);
  assert.equal((await create(app, alice, { id: 1, name: 'first', tag: 'x' })).statusCode, 200, 'the replay');
  const conflict = await create(app, alice, { id: 1, name: 'other' });
  assert.equal(conflict.statusCode, 409, conflict.body);
  assert.equal((await create(app, alice, { id: 2, name: 'second' })).statusCode, 200);
  // The log is in commit order: an event of the replay or the conflict would come before the second's.
  assert.deepEqual(what(await stream.take(2)), ['plant.created {"id":1,"name":"first","tag":"x"}', 'plant.created {"id":2,"name":"second"}']);
  assert.equal((await finalEvents(store, 2)).length, 2, 'two events in the log');
});

test('a since or Last-Event-ID that is not an event id is refused with 400 40009; Last-Event-ID wins when both are given', async (t) => {
  const { app, store, alice } = await fixture(t);
  await create(app, alice, { id: 1, name: 'one' });
  const [event] = await finalEvents(store, 1);
  const id = feedId(event!.at);
  const malformed = ['', 'abc', '-1', '1-', '-1-1', '1-2-3', '1.5', '0x10', '123456789012345678901', '9223372036854775808', '18446744073709551616-1'];
  for (const text of malformed) {
    assertRefusal(await refusal(t, app, { token: alice, since: text }), 400, 40009, `since=${text}`);
    if (text !== '') assertRefusal(await refusal(t, app, { token: alice, lastEventId: text }), 400, 40009, `Last-Event-ID: ${text}`);
  }
  // What the query's schema refuses is no event id either: the same answer as the header's.
  for (const since of ['1'.repeat(42), '1&since=2']) {
    assertRefusal(await refusal(t, app, { token: alice, since }), 400, 40009, `since=${since}`);
  }
  assertRefusal(await refusal(t, app, { token: alice, lastEventId: '1'.repeat(42) }), 400, 40009, 'Last-Event-ID of 42 digits');
  // The largest of each part is one.
  const largest = await openFeed(t, app, { token: alice, since: '18446744073709551615-9223372036854775807' });
  assertRefusal(await largest.answer(), 410, 41000, 'a well-formed id past the log\'s end');
  // Both given: the header's verdict is the answer, whichever of the two is malformed.
  const headerWins = await openFeed(t, app, { token: alice, lastEventId: id, since: 'abc' });
  assert.equal(headerWins.status, 200);
  assert.deepEqual(await headerWins.next(), { type: 'ready', data: '{}', lastEventId: id });
  assertRefusal(await refusal(t, app, { token: alice, lastEventId: 'abc', since: id }), 400, 40009, 'a malformed header, a good since');
  // Sent twice, the header is ambiguous.
  assertRefusal(await refusal(t, app, { token: alice, lastEventId: [id, id] }), 400, 40009, 'Last-Event-ID twice');
});

test('a stream needs a token (401) with plants:read (403)', async (t) => {
  const { app, token } = await fixture(t);
  assertRefusal(await refusal(t, app, {}), 401, 40100, 'no token');
  assertRefusal(await refusal(t, app, { token: 'pst_unknown' }), 401, 40101, 'an unknown token');
  assertRefusal(await refusal(t, app, { token: await token('alice', { scopes: ['plants:write'] }) }), 403, 40300, 'without plants:read');
  // A bad resume point is not looked at before the token.
  assertRefusal(await refusal(t, app, { since: 'abc' }), 401, 40100, 'no token, a malformed since');
});

test('410 41000 for an id past the log\'s end or before what the retention kept; the bounds themselves are taken', async (t) => {
  const { app, store, alice } = await fixture(t);
  for (let id = 1; id <= 3; id++) await create(app, alice, { id, name: `p${id}` });
  const [first, , last] = await finalEvents(store, 3);
  const head = last!.at;
  assertRefusal(await refusal(t, app, { token: alice, since: feedId({ ...head, pos: head.pos + 1n }) }), 410, 41000, 'one past the end');
  const atEnd = await openFeed(t, app, { token: alice, since: feedId(head) });
  assert.deepEqual(await atEnd.next(), { type: 'ready', data: '{}', lastEventId: feedId(head) });
  const fromFirst = await openFeed(t, app, { token: alice, since: feedId(first!.at) });
  assert.deepEqual(what(await fromFirst.take(3)), ['ready {}', 'plant.created {"id":2,"name":"p2"}', 'plant.created {"id":3,"name":"p3"}']);

  // The retention's sweep with a time past every mark: the first sweep marks where the log ends now (and
  // cuts there on SQLite, whose statement sees its own mark), the second cuts at that mark on both.
  await store.feed.sweepFeed(new Date(Date.now() + 60_000));
  await store.feed.sweepFeed(new Date(Date.now() + 60_000));
  assert.deepEqual(await store.feed.feedBounds(), { pruned: head, head });
  for (const request of [{ since: feedId(first!.at) }, { lastEventId: feedId(first!.at) }, { since: '0' }]) {
    assertRefusal(await refusal(t, app, { token: alice, ...request }), 410, 41000, JSON.stringify(request));
  }
  const atCut = await openFeed(t, app, { token: alice, since: feedId(head) });
  assert.deepEqual(await atCut.next(), { type: 'ready', data: '{}', lastEventId: feedId(head) }, 'where the sweep cut is kept');
  await create(app, alice, { id: 4, name: 'p4' });
  assert.deepEqual(what(await atCut.take(1)), ['plant.created {"id":4,"name":"p4"}']);
});

test('429 42902 past FEED_MAX_STREAMS_PER_TOKEN for the same token; another token opens, and the token again once its stream is gone', async (t) => {
  const { app, token, alice } = await fixture(t, { feedMaxStreamsPerToken: 1 });
  const first = await openFeed(t, app, { token: alice });
  assert.equal((await first.next()).type, 'ready');
  assertRefusal(await refusal(t, app, { token: alice }), 429, 42902, 'a second stream of the token');
  const other = await openFeed(t, app, { token: await token('alice') });
  assert.equal((await other.next()).type, 'ready', 'another token of the same user has its own share');
  first.close();
  // The server learns of the closed connection when its socket closes: no event a client can wait on.
  const again = await eventually(async () => {
    const stream = await openFeed(t, app, { token: alice });
    if (stream.status === 200) return stream;
    assertRefusal(await stream.answer(), 429, 42902, 'while the first stream is still counted');
    return undefined;
  }, 'the token opening a stream again');
  assert.equal((await again.next()).type, 'ready');
});

test('503 50304 with Retry-After past FEED_MAX_STREAMS on the instance, whoever asks', async (t) => {
  const { app, token, alice } = await fixture(t, { feedMaxStreams: 1 });
  const first = await openFeed(t, app, { token: alice });
  assert.equal((await first.next()).type, 'ready');
  for (const who of [await token('bob'), await token('root', { admin: true }), alice]) {
    const answer = await refusal(t, app, { token: who });
    assertRefusal(answer, 503, 50304);
    assert.match(answer.headers['retry-after'] ?? '', /^[1-9][0-9]*$/);
  }
});

test('/openapi.json describes the stream: Last-Event-ID and since, text/event-stream, and every refusal', async (t) => {
  const { app } = await fixture(t);
  const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
  const op = doc.paths['/plants/events']?.get;
  assert.ok(op, 'GET /plants/events is documented');
  assert.equal(op.operationId, 'watchPlants');
  const parameters = Object.fromEntries((op.parameters as Array<{ name: string; in: string; required?: boolean }>).map((p) => [`${p.in} ${p.name}`, p]));
  assert.deepEqual(Object.keys(parameters).sort(), ['header Last-Event-ID', 'query since']);
  assert.equal(parameters['header Last-Event-ID']!.required, false);
  assert.deepEqual(Object.keys(op.responses['200'].content), ['text/event-stream']);
  const described = (status: string) => String(op.responses[status]?.description ?? '');
  for (const [status, code] of [['400', 40009], ['401', 40100], ['401', 40101], ['403', 40300], ['410', 41000], ['429', 42902], ['503', 50304]] as const) {
    assert.match(described(status), new RegExp(`\\b${code}: `), `${status} names ${code}`);
  }
});
