import assert from 'node:assert/strict';
import { test } from 'node:test';
import Fastify from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { INT64_MAX, INT64_MIN, integerOfJsonNumber, parseInt64 } from '../../src/domain/int64.js';
import { NewPlantSchema } from '../../src/domain/plant.js';
import { exactInt64Keyword, registerJsonParser } from '../../src/http/plugins/json.js';
import { bearer, create, errorBody, list, testApp } from '../helpers/app.js';

test('integerOfJsonNumber reads the exact integer a JSON literal denotes', () => {
  const cases: Array<[string, bigint | null]> = [
    ['0', 0n], ['-0', 0n], ['7', 7n], ['-7', -7n],
    ['9007199254740993', 9007199254740993n],
    ['9223372036854775807', INT64_MAX], ['-9223372036854775808', INT64_MIN],
    ['1.0', 1n], ['1.000', 1n], ['1e3', 1000n], ['1E+3', 1000n], ['120e-1', 12n], ['0.0e5', 0n],
    ['9223372036854775807.0', INT64_MAX], ['92233720368547758.07e2', INT64_MAX],
    ['1.5', null], ['12e-1', null], ['9007199254740993.5', null], ['1e-999999999', null],
    ['1e999999999', 10n ** 20n], ['-1e999999999', -(10n ** 20n)],
    ['abc', null], ['', null],
  ];
  for (const [literal, expected] of cases) assert.equal(integerOfJsonNumber(literal), expected, literal);
});

test('parseInt64 reads decimal path ids and refuses anything else', () => {
  assert.equal(parseInt64('9223372036854775807'), INT64_MAX);
  assert.equal(parseInt64('-9223372036854775808'), INT64_MIN);
  assert.equal(parseInt64('007'), 7n);
  for (const bad of ['9223372036854775808', '-9223372036854775809', '1.0', '1e3', ' 1', '+1', '', 'abc', '0x10']) {
    assert.equal(parseInt64(bad), null, bad);
  }
});

test('ids keep every digit across the whole int64 range', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  const ids = ['9223372036854775807', '-9223372036854775808', '9007199254740992', '9007199254740993', '9007199254740994', '0', '-1'];
  // 2^53 and 2^53+1 are the same double: a lossy parser would report the second as a conflict.
  for (const id of ids) {
    const res = await create(app, alice, `{"id":${id},"name":"p${id}"}`);
    assert.equal(res.statusCode, 200, id);
  }
  for (const id of ids) {
    assert.equal((await create(app, alice, `{"id":${id},"name":"p${id}"}`)).statusCode, 200, `replay ${id}`);
    assert.equal((await create(app, alice, `{"id":${id},"name":"other"}`)).statusCode, 409, `conflict ${id}`);
  }
  assert.equal((await list(app, alice)).json().length, ids.length);

  // Deleting 2^53+1 removes exactly that plant, not its double-precision neighbour.
  const del = await app.inject({ method: 'DELETE', url: '/plants/9007199254740993', headers: bearer(alice) });
  assert.equal(del.statusCode, 204);
  const names = (await list(app, alice)).json().map((p: { name: string }) => p.name);
  assert.ok(names.includes('p9007199254740992') && names.includes('p9007199254740994'));
  assert.ok(!names.includes('p9007199254740993'));
  for (const id of ['9223372036854775807', '-9223372036854775808']) {
    assert.equal((await app.inject({ method: 'DELETE', url: `/plants/${id}`, headers: bearer(alice) })).statusCode, 204, id);
  }
});

test('an id written as 1e3 or 1000.0 is the integer 1000', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  assert.equal((await create(app, alice, '{"id":1000,"name":"k"}')).statusCode, 200);
  assert.equal((await create(app, alice, '{"id":1e3,"name":"k"}')).statusCode, 200);
  assert.equal((await create(app, alice, '{"id":1000.0,"name":"k"}')).statusCode, 200);
  assert.equal((await create(app, alice, '{"id":10000e-1,"name":"other"}')).statusCode, 409);
  assert.equal((await list(app, alice)).json().length, 1);
});

test('ids outside int64, or with a fraction, are 400 40002', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  for (const id of ['9223372036854775808', '-9223372036854775809', '18446744073709551616', '1e19', '1e300', '-1e300', '9007199254740993.5', '1.5']) {
    const res = await create(app, alice, `{"id":${id},"name":"x"}`);
    assert.equal(res.statusCode, 400, id);
    assert.equal(errorBody(res).error, 40002, id);
  }
  assert.equal((await list(app, alice)).body, '[]');
});

test('an id is an integer by the exact decimal value of its literal, not by its nearest double: else 400 40002', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  // Each of these rounds to an integer as a double (0, 2, 2^53 - 1, -0, …) yet is not one.
  for (const id of ['1e-400', '2.00000000000000001', '9007199254740990.6', '-1e-400', '4.9e-324', '0.5e-1', '1.0000000000000000000001e3', '9223372036854775807.5']) {
    const res = await create(app, alice, `{"id":${id},"name":"x"}`);
    assert.equal(res.statusCode, 400, id);
    const body = errorBody(res);
    assert.equal(body.error, 40002, id);
    assert.match(body.message, /id/, id);
  }
  assert.equal((await list(app, alice)).body, '[]');
  // Integers written with a fraction or an exponent are still those integers.
  for (const [literal, same] of [['1e3', '1000'], ['1000.0', '1000'], ['2.000000000000000000000', '2'], ['9007199254740993e0', '9007199254740993'], ['-0.0', '0'], ['0e-999', '0']]) {
    assert.equal((await create(app, alice, `{"id":${literal},"name":"n${same}"}`)).statusCode, 200, literal);
    assert.equal((await create(app, alice, `{"id":${same},"name":"n${same}"}`)).statusCode, 200, `${literal} is ${same}`);
  }
});

test('a body with a duplicate key, at any depth and in any order, is 400 40001', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  for (const json of [
    '{"id":9007199254740993,"name":"x","id":5}', // once stored 5
    '{"id":5,"name":"x","id":9007199254740993}',
    '{"id":1,"id":2,"name":"x"}',
    '{"id":1,"id":1,"name":"x"}', // the same value twice is still ambiguous text
    '{"name":"a","id":1,"name":"b"}',
    '{"id":1,"name":"x","tag":"a","tag":"b"}',
    '{"id":1,"\\u0069d":2,"name":"x"}', // keys compare after unescaping
    '{"id":1,"name":"x","n\\u0061me":"y"}',
    '{"id":1,"name":"x","extra":{"a":1,"a":2}}',
    '{"id":1,"name":"x","extra":[{"a":1},{"b":[{"c":{"d":1,"d":1}}]}]}',
    '{"id":1,"name":"x","extra":{"\\"":1,"\\u0022":2}}',
    '{"id":1,"name":"x","extra":{"":1,"":2}}',
  ]) {
    const res = await create(app, alice, json);
    assert.equal(res.statusCode, 400, json);
    const body = errorBody(res);
    assert.equal(body.error, 40001, json);
    assert.match(body.message, /duplicate/i, json);
  }
  assert.equal((await list(app, alice)).body, '[]');
  // The same key in different objects, and keys hidden inside strings, are no duplicates.
  for (const [i, json] of [
    '{"id":1,"name":"x","extra":[{"a":1},{"a":2}],"a":3}',
    '{"id":2,"name":"\\"id\\":3, {\\"name\\":","tag":"\\\\"}',
    '{"id":3,"name":"y","extra":{"id":4,"name":"z"}}',
    '{"id":4,"name":"w","i\\u0064x":1,"ID":5}',
  ].entries()) {
    const res = await create(app, alice, json);
    assert.equal(res.statusCode, 200, json);
    assert.equal((await create(app, alice, `{"id":${i + 1},"name":"other"}`)).statusCode, 409, `${json} is stored under id ${i + 1}`);
  }
});

test('the NewPlant schema alone hands a route its id as the exact bigint, and refuses what is not an int64', async (t) => {
  // Any route that declares the schema gets the rule: no handler code reads the literal or checks a range.
  const app = Fastify({ ajv: { customOptions: { coerceTypes: false }, plugins: [exactInt64Keyword] } });
  t.after(() => app.close());
  registerJsonParser(app, { maxDepth: 32 });
  const route: FastifyPluginAsyncTypebox = async (scope) => {
    scope.post('/echo', { schema: { body: NewPlantSchema } }, async (request) => {
      const id: bigint = request.body.id;
      return { type: typeof id, id: String(id) };
    });
  };
  await app.register(route);
  const echo = (json: string) => app.inject({ method: 'POST', url: '/echo', headers: { 'content-type': 'application/json' }, payload: json });
  for (const [literal, exact] of [['9007199254740993', '9007199254740993'], ['9223372036854775807', '9223372036854775807'], ['1e3', '1000'], ['-0.0', '0']]) {
    const res = await echo(`{"id":${literal},"name":"x"}`);
    assert.equal(res.statusCode, 200, literal);
    assert.deepEqual(res.json(), { type: 'bigint', id: exact }, literal);
  }
  for (const [literal, reason] of [['9223372036854775808', /64-bit signed integer/], ['1e19', /64-bit signed integer/], ['2.00000000000000001', /must be an integer/], ['1e-400', /must be an integer/]] as const) {
    const res = await echo(`{"id":${literal},"name":"x"}`);
    assert.equal(res.statusCode, 400, literal);
    assert.match(res.json().message, reason, literal);
  }
});
