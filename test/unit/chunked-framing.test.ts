import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ChunkedFraming, type Progress } from '../../src/http/plugins/chunked-framing.js';

/** What the reader says after `text` is given to it in the given pieces (one piece: all at once). */
function readIn(limit: number, ...pieces: string[]): Progress {
  const framing = new ChunkedFraming(limit);
  let progress: Progress = 'more';
  for (const piece of pieces) progress = framing.read(Buffer.from(piece, 'latin1'));
  return progress;
}

/** Every way of cutting `text` in two: the reader must say the same as for the whole. */
function everyCut(limit: number, text: string): Progress[] {
  return Array.from({ length: text.length - 1 }, (_, i) => readIn(limit, text.slice(0, i + 1), text.slice(i + 1)));
}

test('a body of chunks, extensions and trailers ends where its framing ends, however it is cut', () => {
  const body = `3;a=b\r\nabc\r\n0a;q="x;y"\r\n${'d'.repeat(10)}\r\n0;end\r\nX-Trailer: 1\r\nY: 2\r\n\r\n`;
  assert.deepEqual(readIn(13, `${body}GET / HTTP/1.1`), { endsAt: body.length });
  // Read in two pieces, the end is reported in the second piece's terms.
  for (const [i, progress] of everyCut(13, body).entries()) assert.deepEqual(progress, { endsAt: body.length - i - 1 }, `cut at ${i + 1}`);
  assert.deepEqual(readIn(0, '0\r\n\r\n'), { endsAt: 5 });
  assert.equal(readIn(100, '5\r\nab'), 'more');
});

test('sizes adding up to the limit are taken, one byte more is refused as soon as a digit announces it', () => {
  assert.deepEqual(readIn(16, '8\r\n12345678\r\n8\r\n12345678\r\n0\r\n\r\n'), { endsAt: 31 });
  assert.equal(readIn(16, '8\r\n12345678\r\n9'), 'oversize');
  // Leading zeros announce nothing; a digit that takes the size over the limit is enough.
  assert.equal(readIn(16, '00000010\r\n'), 'more');
  assert.equal(readIn(16, '0001'), 'more');
  assert.equal(readIn(16, '00011'), 'oversize');
  assert.equal(readIn(16, 'FFFFFFFFFFFFFFFFFFFFFFFF'), 'oversize');
});

test('framing the reader does not recognise stops it, and is never a refusal', () => {
  for (const text of ['\r\n', ' 5\r\n', '5 \r\n', '5\n', '5;a\n', 'g\r\n', '5\r\nabcdeXY', '5\r\nabcde\rX', '0\r\nX: 1\n', '0\r\n\rX']) {
    assert.equal(readIn(100, text), 'unreadable', JSON.stringify(text));
  }
});
