import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { SseParser, type ServerSentEvent } from '../../packages/client/src/sse.js';

const bytes = (text: string) => new TextEncoder().encode(text);

interface Parsed {
  readonly events: ServerSentEvent[];
  readonly retryMs: number | undefined;
  readonly lastEventId: string;
}

/** What the parser makes of `stream` given in the pieces that `cuts` (byte offsets) make of it. */
function parse(stream: Uint8Array, cuts: readonly number[] = []): Parsed {
  const parser = new SseParser();
  const events: ServerSentEvent[] = [];
  let from = 0;
  for (const cut of [...cuts, stream.length]) {
    events.push(...parser.push(stream.subarray(from, cut)));
    from = cut;
  }
  events.push(...parser.end());
  return { events, retryMs: parser.retryMs, lastEventId: parser.lastEventId };
}

const event = (type: string, data: string, lastEventId = ''): ServerSentEvent => ({ type, data, lastEventId });

/** The feed as the server writes it, with a name of every width of UTF-8 (2, 3 and 4 bytes) and line ends of every kind. */
const FEED = [
  'retry: 2000\n',
  '\n',
  'event: ready\r\nid: 7731-42\r\ndata: {}\r\n\r\n',
  ': heartbeat\n',
  'event: plant.created\rid: 7731-43\rdata: {"id":9223372036854775807,"name":"Fougère 🌿 日本"}\r\r',
  'event: plant.deleted\nid: 7731-44\ndata: {"id":-9223372036854775808,\ndata:"name":"x"}\n\n',
  'event: end\r\ndata: {"reason":"slow-reader","message":"…"}\n\n',
].join('');

const FEED_EVENTS = [
  event('ready', '{}', '7731-42'),
  event('plant.created', '{"id":9223372036854775807,"name":"Fougère 🌿 日本"}', '7731-43'),
  event('plant.deleted', '{"id":-9223372036854775808,\n"name":"x"}', '7731-44'),
  // `end` has no id of its own: the last one seen carries on, as it does in EventSource.
  event('end', '{"reason":"slow-reader","message":"…"}', '7731-44'),
];

test('the feed as the server writes it: every field, comments, CRLF, LF and CR line ends, multi-line data', () => {
  assert.deepEqual(parse(bytes(FEED)), { events: FEED_EVENTS, retryMs: 2000, lastEventId: '7731-44' });
});

test('cut in two at every byte (inside a UTF-8 character, between CR and LF) the stream parses the same', () => {
  const stream = bytes(FEED);
  const whole = parse(stream);
  for (let cut = 0; cut <= stream.length; cut++) assert.deepEqual(parse(stream, [cut]), whole, `cut at byte ${cut}`);
  // One byte at a time.
  assert.deepEqual(parse(stream, Array.from({ length: stream.length }, (_, i) => i)), whole);
});

test('cut anywhere into any number of pieces the stream parses the same', () => {
  const stream = bytes(FEED);
  const whole = parse(stream);
  const cuts = fc.uniqueArray(fc.integer({ min: 0, max: stream.length }), { maxLength: 40 }).map((c) => c.sort((a, b) => a - b));
  fc.assert(fc.property(cuts, (c) => assert.deepEqual(parse(stream, c), whole)), { numRuns: 500 });
});

test('a CR ending one piece and an LF starting the next are one line end, not an empty line that dispatches', () => {
  assert.deepEqual(parse(bytes('data: a\r\ndata: b\n\n'), [8]).events, [event('message', 'a\nb')]);
  // Two CRs are two line ends: the second is the empty line.
  assert.deepEqual(parse(bytes('data: a\r\rdata: b\n\n'), [8]).events, [event('message', 'a'), event('message', 'b')]);
  // A CR at the very end of the stream ends its line; the event still needs its empty line.
  assert.deepEqual(parse(bytes('data: a\r\r'), [8]).events, [event('message', 'a')]);
});

test('fields as the standard reads them: one space dropped after the colon, a line without a colon, unknown fields', () => {
  const { events } = parse(bytes('data:no space\ndata:  two spaces\ndata\ndata:\nfoo: bar\nDATA: upper case is another field\n\n'));
  assert.deepEqual(events, [event('message', 'no space\n two spaces\n\n')]);
  assert.deepEqual(parse(bytes('event\ndata: x\n\n')).events, [event('message', 'x')], 'an empty event type is "message"');
  assert.deepEqual(parse(bytes('event: a\nevent: b\ndata: x\n\n')).events, [event('b', 'x')], 'the last event field wins');
  assert.deepEqual(parse(bytes('data: a:b: c\n\n')).events, [event('message', 'a:b: c')], 'only the first colon separates');
});

test('an event without data is not dispatched, and its type does not carry over; its id does', () => {
  const { events, lastEventId } = parse(bytes('event: ready\nid: 5\n\ndata: x\n\n'));
  assert.deepEqual(events, [event('message', 'x', '5')]);
  assert.equal(lastEventId, '5');
});

test('ids: kept from event to event, emptied by an empty id, ignored when they hold NUL', () => {
  const { events } = parse(bytes('id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\nid: 2\0x\ndata: d\n\nid: 3\nid: 4\ndata: e\n\n'));
  assert.deepEqual(events.map((e) => e.lastEventId), ['1', '1', '', '', '4']);
});

test('retry: only ASCII digits set it; anything else is ignored', () => {
  assert.equal(parse(bytes('retry: 1500\n\n')).retryMs, 1500);
  for (const bad of ['retry: 1.5', 'retry: -1', 'retry: 2s', 'retry:', 'retry: ٣', 'retry:  10']) {
    assert.equal(parse(bytes(`retry: 700\n${bad}\n\n`)).retryMs, 700, bad);
  }
  assert.equal(parse(bytes('retry: 0\n')).retryMs, 0, 'a retry line needs no empty line after it');
});

test('comments are skipped wherever they are, even between the fields of one event', () => {
  assert.deepEqual(parse(bytes(': hello\n:\ndata: a\n: heartbeat\ndata: b\n\n')).events, [event('message', 'a\nb')]);
});

test('an event cut off by the end of the stream is discarded', () => {
  assert.deepEqual(parse(bytes('data: a\n\ndata: b\n')).events, [event('message', 'a')]);
  assert.deepEqual(parse(bytes('data: a\n\ndata: b')).events, [event('message', 'a')]);
});

test('UTF-8: one leading BOM is dropped, a second one is text; a bad or cut-off sequence becomes U+FFFD', () => {
  const bom = [0xef, 0xbb, 0xbf];
  const withBom = new Uint8Array([...bom, ...bytes('data: a\n\n')]);
  for (let cut = 0; cut <= 3; cut++) assert.deepEqual(parse(withBom, [cut]).events, [event('message', 'a')], `cut at ${cut}`);
  const twice = new Uint8Array([...bom, ...bom, ...bytes('data: a\n\n')]);
  assert.deepEqual(parse(twice).events, [], 'the second BOM starts the field name, which is then not "data"');
  assert.deepEqual(parse(new Uint8Array([...bytes('data: '), 0xff, 0x41, 0x0a, 0x0a])).events, [event('message', '\uFFFDA')]);
  // The stream ends inside a 4-byte character: the line is unfinished and its event discarded, without throwing.
  assert.deepEqual(parse(new Uint8Array([...bytes('data: a\n\ndata: '), 0xf0, 0x9f])).events, [event('message', 'a')]);
});
