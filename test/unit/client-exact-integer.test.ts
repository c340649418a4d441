import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseWithExactInteger } from '../../packages/client/src/ids.js';

const idOf = (text: string) => parseWithExactInteger(text, 'id')?.value;

test('a plant\'s id is read with every digit, past 2^53 and at both ends of int64', () => {
  assert.equal(idOf('{"id":9223372036854775807,"name":"Max"}'), 9223372036854775807n);
  assert.equal(idOf('{"id":-9223372036854775808,"name":"Min"}'), -9223372036854775808n);
  assert.equal(idOf('{ "name" : "x" , "id" : 9007199254740993 }'), 9007199254740993n);
  assert.equal(idOf('{"id":0}'), 0n);
  assert.deepEqual(parseWithExactInteger('{"id":1,"name":"Fern","tag":"green"}', 'id')?.object, { id: 1, name: 'Fern', tag: 'green' });
});

test('only the top-level member counts: not one in a string, a nested object or an escaped key', () => {
  assert.equal(idOf('{"name":"\\"id\\":5,","id":7}'), 7n);
  assert.equal(idOf('{"tag":{"id":5},"list":[{"id":6}],"id":8}'), 8n);
  assert.equal(idOf('{"\\u0069d":9}'), 9n, 'a key written with an escape is the same key, as JSON.parse reads it');
  assert.equal(idOf('{"id":1,"id":2}'), 2n, 'the last of repeated keys, as JSON.parse');
  assert.equal(idOf('{"name":"a\\\\","id":3}'), 3n, 'a string ending in an escaped backslash');
});

test('anything else is not a plant event: not JSON, not an object, an id that is not an integer', () => {
  for (const text of ['', 'nope', '[1]', 'null', '5', '{"name":"x"}', '{"id":"5"}', '{"id":1.5}', '{"id":1e3}', '{"id":-0.0}', '{"id":null}']) {
    assert.equal(parseWithExactInteger(text, 'id'), undefined, text);
  }
});
