import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  feedCells, feedGoals, pairsOf, parseFeedRate, perCore, parseSubscribers, percentile, rssMbOf, summarize, tokensFor, type FeedMeasured,
} from '../../bench/lib/feed.js';
import { endReasonIn, EventCounter, parseHead, plantIdOf, ResponseReader, SseParser, type SseEvent } from '../../bench/lib/sse.js';

// The bench's feed scenario (bench/lib/feed.ts, bench/lib/sse.ts): its flags, reading a stream from raw
// socket bytes however they are cut, the (event, stream) pairs' latencies and the printed cells.

/** The body `reader` gives for `pieces` read one after another, as text. */
function bodyOf(reader: ResponseReader, ...pieces: string[]): string {
  let body = '';
  for (const piece of pieces) reader.read(Buffer.from(piece, 'utf8'), (b) => (body += b.toString('utf8')));
  return body;
}

const CHUNKED_HEAD = 'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\nX-A: 1\r\nx-a: 2\r\n\r\n';

test('a response head: its status and headers, names lower-cased, a repeated header joined', () => {
  assert.deepEqual(parseHead('HTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\nContent-Length:  10 '),
    { status: 429, headers: { 'retry-after': '2', 'content-length': '10' } });
  assert.throws(() => parseHead('SSH-2.0-OpenSSH'), /not an HTTP\/1.1 status line/);
  const reader = new ResponseReader();
  bodyOf(reader, CHUNKED_HEAD);
  assert.equal(reader.head?.headers['x-a'], '1, 2');
});

test('a chunked body comes out whole however its bytes are cut: in the head, in a size, in a CRLF, in the data', () => {
  const body = '6;ext=1\r\nevent:\r\n11\r\n ready\ndata: {}\n\n\r\n0\r\nTrailer: x\r\n\r\n';
  const whole = `${CHUNKED_HEAD}${body}`;
  const expected = 'event: ready\ndata: {}\n\n';
  const reader = new ResponseReader();
  assert.equal(bodyOf(reader, whole), expected);
  assert.ok(reader.done);
  for (let i = 1; i < whole.length; i++) {
    for (const j of [i + 1, i + 3, whole.length]) {
      if (j > whole.length) continue;
      const cut = new ResponseReader();
      assert.equal(bodyOf(cut, whole.slice(0, i), whole.slice(i, j), whole.slice(j)), expected, `cut at ${i} and ${j}`);
      assert.ok(cut.done, `cut at ${i} and ${j}`);
    }
  }
  assert.equal(bodyOf(new ResponseReader(), ...whole), expected, 'a byte at a time');
});

test('a refusal\'s body is read to its content-length, and a body without framing until the connection ends', () => {
  const reader = new ResponseReader();
  const json = '{"error":"42902","message":"too many streams"}';
  assert.equal(bodyOf(reader, `HTTP/1.1 429 Too Many Requests\r\ncontent-length: ${json.length}\r\n\r\n${json.slice(0, 9)}`, json.slice(9)), json);
  assert.equal(reader.head?.status, 429);
  assert.ok(reader.done);
  const open = new ResponseReader();
  assert.equal(bodyOf(open, 'HTTP/1.1 200 OK\r\n\r\nabc', 'def'), 'abcdef');
  assert.equal(open.done, false);
});

/** The events `text` holds when given to a parser in `pieces` (cut at those offsets). */
function eventsOf(text: string, cuts: number[] = []): { events: SseEvent[]; parser: SseParser } {
  const events: SseEvent[] = [];
  const parser = new SseParser((e) => events.push(e));
  let at = 0;
  for (const cut of [...cuts, text.length]) {
    parser.write(Buffer.from(text.slice(at, cut), 'utf8'));
    at = cut;
  }
  return { events, parser };
}

const FEED = 'retry: 2000\n\nevent: ready\nid: 7731-42\ndata: {}\n\n: heartbeat\n\n' +
  'event: plant.created\nid: 7731-43\ndata: {"id":12345678901234567890,"name":"Fern","tag":"green"}\n\n' +
  'data: a\ndata: b\n\nevent: end\ndata: {"reason":"slow-reader","message":"…"}\n\n';

test('server-sent events: types, multi-line data, the last id kept from event to event, comments and retry, an event without data not dispatched', () => {
  const { events, parser } = eventsOf(FEED);
  assert.deepEqual(events, [
    { type: 'ready', data: '{}', lastEventId: '7731-42' },
    { type: 'plant.created', data: '{"id":12345678901234567890,"name":"Fern","tag":"green"}', lastEventId: '7731-43' },
    { type: 'message', data: 'a\nb', lastEventId: '7731-43' },
    { type: 'end', data: '{"reason":"slow-reader","message":"…"}', lastEventId: '7731-43' },
  ]);
  assert.equal(parser.comments, 1);
  assert.equal(parser.retry, 2000);
  assert.deepEqual(eventsOf('event: x\n\n').events, [], 'no data: nothing dispatched, and the type does not carry over');
  assert.deepEqual(eventsOf('event: x\n\ndata: y\n\n').events, [{ type: 'message', data: 'y', lastEventId: '' }]);
  assert.deepEqual(eventsOf('data\nid\n\n').events, [{ type: 'message', data: '', lastEventId: '' }], 'a field without a colon has an empty value');
  assert.deepEqual(eventsOf('data:no space\nfoo: ignored\n\n').events, [{ type: 'message', data: 'no space', lastEventId: '' }]);
});

test('the same events whatever the line ends (CRLF, CR, LF), a byte-order mark first, and wherever the bytes are cut, a multi-byte character included', () => {
  const expected = eventsOf(FEED).events;
  for (const eol of ['\r\n', '\r']) assert.deepEqual(eventsOf(FEED.replaceAll('\n', eol)).events, expected, JSON.stringify(eol));
  assert.deepEqual(eventsOf(`\ufeff${FEED}`).events, expected);
  const crlf = FEED.replaceAll('\n', '\r\n');
  const bytes = Buffer.from(crlf, 'utf8');
  for (let i = 1; i < bytes.length; i++) {
    const events: SseEvent[] = [];
    const parser = new SseParser((e) => events.push(e));
    parser.write(bytes.subarray(0, i));
    parser.write(bytes.subarray(i));
    assert.deepEqual(events, expected, `cut at byte ${i}`);
  }
});

test('counting created events without parsing: every one, however the bytes are cut, and nothing else', () => {
  const event = (i: number) => `event: plant.created\nid: ${i}\ndata: {"id":${i},"name":"event: plant.created"}\n\n`;
  const text = `${event(100)}: heartbeat\n\n${Array.from({ length: 40 }, (_, i) => event(i)).join('')}event: plant.deleted\nid: 99\ndata: {"id":1,"name":"x"}\n\n`;
  const bytes = Buffer.from(text);
  const whole = new EventCounter();
  whole.write(bytes);
  assert.equal(whole.count, 41, 'the first event too, at the very start');
  for (let i = 1; i < bytes.length; i += 7) {
    for (const j of [i + 1, i + 5, i + 23, i + 600]) {
      const cut = new EventCounter();
      for (const [from, to] of [[0, i], [i, j], [j, bytes.length]] as const) cut.write(bytes.subarray(Math.min(from, bytes.length), Math.min(to, bytes.length)));
      assert.equal(cut.count, 41, `cut at ${i} and ${j}`);
    }
  }
  const byByte = new EventCounter();
  for (let i = 0; i < bytes.length; i++) byByte.write(bytes.subarray(i, i + 1));
  assert.equal(byByte.count, 41);
  const crlf = new EventCounter();
  crlf.write(Buffer.from(text.replaceAll('\n', '\r\n')));
  assert.equal(crlf.count, 0, 'CRLF line ends count nothing: missing, never more');
});

test('the end event\'s reason from a stream\'s last bytes, the kept bytes copied from the read buffer', () => {
  const counter = new EventCounter();
  const read = Buffer.alloc(4096);
  const last = 'event: plant.created\nid: 5\ndata: {}\n\nevent: end\ndata: {"reason":"slow-reader","message":"…"}\n\n';
  const n = read.write(`${'x'.repeat(1000)}\n\n${last}`);
  counter.write(read.subarray(0, n));
  read.fill(0);
  assert.equal(endReasonIn(counter.last()), 'slow-reader');
  assert.equal(counter.count, 1);
  assert.equal(endReasonIn(': heartbeat\n\n'), undefined);
  assert.equal(endReasonIn('\nevent: end\ndata: {oops\n\n'), 'unreadable end event');
});

test('a plant\'s id is read from its JSON as the digits written, exact past 2^53, and only at the top level', () => {
  assert.equal(plantIdOf('{"id":12345678901234567890,"name":"Fern","tag":"green"}'), '12345678901234567890');
  assert.equal(plantIdOf('{"name":"Fern", "id" : 42}'), '42');
  assert.equal(plantIdOf('{"name":"a \\"id\\":1 b","id":7}'), '7', 'the text "id": inside a string is no key');
  assert.equal(plantIdOf('{"name":"id","id":8}'), '8', 'a value "id" is no key');
  assert.equal(plantIdOf('{"x":{"id":1},"id":2}'), '2', 'a nested id is not the plant\'s');
  assert.equal(plantIdOf('{"name":"Fern"}'), undefined);
  assert.equal(plantIdOf('{"id":"12"}'), undefined);
  assert.equal(plantIdOf('{"id":1.5}'), undefined);
});

test('--subscribers and --feed-rate: numbers in their bounds, anything else refused with the flag named', () => {
  assert.equal(parseSubscribers('1000'), 1000);
  assert.equal(parseSubscribers(' 1 '), 1);
  for (const bad of ['0', '-1', '2.5', 'many', '', '20001']) assert.throws(() => parseSubscribers(bad), /^Error: --subscribers: /, bad);
  assert.equal(parseFeedRate('50'), 50);
  assert.equal(parseFeedRate('0.5'), 0.5);
  for (const bad of ['0', '-5', 'fast', '', '5001', '1e3']) assert.throws(() => parseFeedRate(bad), /^Error: --feed-rate: /, bad);
});

test('tokens: as few as the streams allowed per token permit', () => {
  assert.equal(tokensFor(1000, 10), 100);
  assert.equal(tokensFor(1001, 10), 101);
  assert.equal(tokensFor(5, 10), 1);
  assert.equal(tokensFor(3, 0), 3, 'a limit below 1 counts as 1');
});

test('percentiles by nearest rank', () => {
  const xs = Float64Array.from({ length: 100 }, (_, i) => i + 1);
  assert.equal(percentile(xs, 50), 50);
  assert.equal(percentile(xs, 99), 99);
  assert.equal(percentile(xs, 100), 100);
  assert.equal(percentile([7], 99), 7);
  assert.equal(percentile([1, 2], 50), 1);
  assert.ok(Number.isNaN(percentile([], 50)));
});

test('pairs: every acknowledged create against every stream, the missing counted, events of unacknowledged creates set apart', () => {
  const acks = new Map([['1', 100], ['2', 200], ['3', 300]]);
  const arrivals = new Map([
    ['1', Float64Array.from([101, 104, 99])],
    ['2', Float64Array.from([202, NaN, 250])],
    ['9', Float64Array.from([500, 500, 500])],
  ]);
  const pairs = pairsOf(acks, arrivals, 3);
  assert.deepEqual([...pairs.samples], [1, 4, -1, 2, 50]);
  assert.deepEqual({ events: pairs.events, missing: pairs.missing, unacknowledged: pairs.unacknowledged }, { events: 3, missing: 4, unacknowledged: 1 });
  const second = pairsOf(new Map([['4', 0]]), new Map([['4', Float64Array.from([3, 3, 3])]]), 3);
  assert.deepEqual(summarize([pairs, second]), { events: 4, pairs: 8, missing: 4, unacknowledged: 1, p50: 3, p99: 50, max: 50 });
  assert.ok(Number.isNaN(summarize([]).p99));
});

test('VmRSS in MB from /proc/<pid>/status', () => {
  assert.equal(rssMbOf('Name:\tnode\nVmHWM:\t  300000 kB\nVmRSS:\t  153600 kB\nRssAnon:\t 1 kB\n'), 150);
  assert.ok(Number.isNaN(rssMbOf('Name:\tzombie\n')));
});

const measured = (over: Partial<FeedMeasured> = {}): FeedMeasured => ({
  system: 'plantstore sqlite', goals: true, subscribers: 1000,
  latency: { events: 1200, pairs: 1_200_000, missing: 0, unacknowledged: 0, p50: 3.25, p99: 41.04, max: 80 },
  withStreams: [{ rps: 9000, cpuUs: 120 }, { rps: 9500, cpuUs: 110 }, { rps: 8000, cpuUs: 130 }],
  withoutStreams: [{ rps: 10_000, cpuUs: 80 }, { rps: 10_200, cpuUs: 82 }, { rps: 9_800, cpuUs: 85 }],
  rssWithoutMb: 120, rssWithMb: [180, 170, 175], missingUnderLoad: 0,
  ...over,
});

test('the goals: p99 within 50 ms and creates with streams at 0.9× without or more; every pair delivered; none for the bound', () => {
  assert.deepEqual(feedGoals(measured()), { p99: true, ratio: true, delivered: true });
  assert.deepEqual(feedGoals(measured({ withStreams: [{ rps: 8000, cpuUs: 1 }], latency: { ...measured().latency, p99: 50.1, missing: 1 } })),
    { p99: false, ratio: false, delivered: false });
  assert.equal(feedGoals(measured({ missingUnderLoad: 3 }))?.delivered, false);
  assert.equal(feedGoals(measured({ goals: false })), undefined);
});

test('the cells: medians of the rounds\' loads and RSS readings, percentiles over every pair, the goals in the target cell', () => {
  const cells = feedCells('feed', [measured(), measured({ system: 'bare node:http fan-out', goals: false, missingUnderLoad: 12 })]);
  assert.deepEqual(cells[0], ['feed', 'plantstore sqlite', '1,000', '1,200', '3.3', '41.0', '80.0', '10,000', '9,000', '0.90× without',
    'p99 ≤ 50 met, ≥ 0.9 met', '82', '120', '120 MB', '175 MB', '0']);
  assert.equal(cells[1]?.[0], '');
  assert.equal(cells[1]?.[10], '');
  assert.equal(cells[1]?.[15], '12');
});

test('per core of the server: a million µs over the median CPU per create, with streams and without', () => {
  assert.deepEqual(perCore(measured()), { without: 1e6 / 82, with: 1e6 / 120, ratio: 82 / 120 });
});
