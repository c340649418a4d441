import assert from 'node:assert/strict';
import { test } from 'node:test';
import { create, errorBody, list, testApp } from '../helpers/app.js';

test('create answers 200 with exactly the Plant: name, and tag only when given', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');

  const withTag = await create(app, alice, '{"id":1,"name":"Monstera","tag":"indoor"}');
  assert.equal(withTag.statusCode, 200);
  assert.match(String(withTag.headers['content-type']), /^application\/json/);
  assert.equal(withTag.body, '{"name":"Monstera","tag":"indoor"}');

  const withoutTag = await create(app, alice, '{"id":2,"name":"Fern"}');
  assert.equal(withoutTag.statusCode, 200);
  assert.equal(withoutTag.body, '{"name":"Fern"}');

  const emptyTag = await create(app, alice, '{"id":3,"name":"Cactus","tag":""}');
  assert.equal(emptyTag.body, '{"name":"Cactus","tag":""}');

  assert.equal((await list(app, alice)).body, '[{"name":"Monstera","tag":"indoor"},{"name":"Fern"},{"name":"Cactus","tag":""}]');
});

test('unknown fields are ignored and never echoed', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  const res = await create(app, alice, '{"id":7,"name":"Ivy","color":"green","owner":"mallory","__proto__":{"admin":true}}');
  assert.equal(res.statusCode, 200);
  assert.equal(res.body, '{"name":"Ivy"}');
  assert.equal((await list(app, alice)).body, '[{"name":"Ivy"}]');
});

test('name is 1-200 characters and tag up to 100, counted in code points', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  const cases: Array<[string, object, number]> = [
    ['name of 1', { id: 1, name: 'a' }, 200],
    ['name of 200', { id: 2, name: 'a'.repeat(200) }, 200],
    ['name of 200 emoji (400 UTF-16 units)', { id: 3, name: '🌱'.repeat(200) }, 200],
    ['empty name', { id: 4, name: '' }, 400],
    ['name of 201', { id: 5, name: 'a'.repeat(201) }, 400],
    ['tag of 100', { id: 6, name: 'x', tag: 't'.repeat(100) }, 200],
    ['tag of 101', { id: 7, name: 'x', tag: 't'.repeat(101) }, 400],
  ];
  for (const [label, body, status] of cases) {
    const res = await create(app, alice, body);
    assert.equal(res.statusCode, status, label);
    if (status === 400) assert.equal(errorBody(res).error, 40002, label);
  }
});

test('a NewPlant with missing or mistyped fields is 400 40002, naming the field', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  const cases: Array<[string, RegExp]> = [
    ['{"name":"no id"}', /id/],
    ['{"id":1}', /name/],
    ['{"id":"1","name":"string id"}', /id must be integer/],
    ['{"id":1.5,"name":"fractional id"}', /id must be integer/],
    ['{"id":null,"name":"null id"}', /id/],
    ['{"id":1,"name":5}', /name must be string/],
    ['{"id":1,"name":"x","tag":null}', /tag must be string/],
    ['{"id":1,"name":"x","tag":7}', /tag must be string/],
    ['[{"id":1,"name":"array"}]', /must be object/],
    ['"just a string"', /must be object/],
    ['null', /must be object/],
    ['42', /must be object/],
  ];
  for (const [json, message] of cases) {
    const res = await create(app, alice, json);
    assert.equal(res.statusCode, 400, json);
    const body = errorBody(res);
    assert.equal(body.error, 40002, json);
    assert.match(body.message, message, json);
  }
  assert.equal((await list(app, alice)).body, '[]', 'nothing rejected was stored');
});

test('strings that cannot round-trip through every backend are refused; all others round-trip exactly', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  for (const json of ['{"id":1,"name":"nul\\u0000"}', '{"id":2,"name":"lone \\ud800 high"}', '{"id":3,"name":"x","tag":"lone \\udc00 low"}']) {
    const res = await create(app, alice, json);
    assert.equal(res.statusCode, 400, json);
    assert.match(errorBody(res).message, /U\+0000 or unpaired surrogates/);
  }
  const names = [
    'plain',
    '  spaces kept  ',
    'tab\there, newline\nthere, \u0001 control',
    'émoji 🌱 ZWJ 👩‍🌾 flags 🇳🇱',
    'RTL שלום and combining é vs é',
    '"quotes" \\backslash\\ </script>',
    '\u2028\u2029 separators, BOM \ufeff, max BMP \uffff, astral \u{10ffff}',
  ];
  for (const [i, name] of names.entries()) {
    const res = await create(app, alice, { id: i + 10, name, tag: name.slice(0, 50) });
    assert.equal(res.statusCode, 200, name);
    assert.deepEqual(res.json(), { name, tag: name.slice(0, 50) });
  }
  const listed = (await list(app, alice)).json() as Array<{ name: string; tag: string }>;
  assert.deepEqual(listed.map((p) => p.name), names);
  assert.deepEqual(listed.map((p) => p.tag), names.map((n) => n.slice(0, 50)));
});

test('repeating a create with the same id and content is an idempotent retry: 200, stored once', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  for (let i = 0; i < 3; i++) {
    const res = await create(app, alice, '{"id":42,"name":"Basil","tag":"herb"}');
    assert.equal(res.statusCode, 200);
    assert.equal(res.body, '{"name":"Basil","tag":"herb"}');
  }
  // Unknown fields are not part of the content, and 42.0 is the integer 42.
  assert.equal((await create(app, alice, '{"id":42.0,"name":"Basil","tag":"herb","note":"retry"}')).statusCode, 200);
  assert.equal((await list(app, alice)).body, '[{"name":"Basil","tag":"herb"}]');
});

test('the same id with different content is 409 40900 and changes nothing', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  assert.equal((await create(app, alice, '{"id":42,"name":"Basil","tag":"herb"}')).statusCode, 200);
  for (const json of [
    '{"id":42,"name":"Mint","tag":"herb"}',
    '{"id":42,"name":"Basil","tag":"HERB"}',
    '{"id":42,"name":"Basil"}',
    '{"id":42,"name":"Basil","tag":""}',
  ]) {
    const res = await create(app, alice, json);
    assert.equal(res.statusCode, 409, json);
    assert.equal(errorBody(res).error, 40900);
  }
  const bare = await token('bob');
  assert.equal((await create(app, bare, '{"id":5,"name":"A"}')).statusCode, 200);
  assert.equal((await create(app, bare, '{"id":5,"name":"A","tag":""}')).statusCode, 409, 'absent tag differs from empty tag');
  assert.equal((await list(app, alice)).body, '[{"name":"Basil","tag":"herb"}]');
});

test('ids are unique per owner: two users may use the same id', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  const bob = await token('bob');
  assert.equal((await create(app, alice, '{"id":1,"name":"Alice plant"}')).statusCode, 200);
  assert.equal((await create(app, bob, '{"id":1,"name":"Bob plant"}')).statusCode, 200);
  assert.equal((await list(app, alice)).body, '[{"name":"Alice plant"}]');
  assert.equal((await list(app, bob)).body, '[{"name":"Bob plant"}]');
});

test('two tokens of one user share that user\'s plants', async (t) => {
  const { app, token } = await testApp(t);
  const laptop = await token('alice');
  const phone = await token('alice');
  assert.equal((await create(app, laptop, '{"id":1,"name":"Aloe"}')).statusCode, 200);
  assert.equal((await create(app, phone, '{"id":1,"name":"Aloe"}')).statusCode, 200, 'replay from another token');
  assert.equal((await create(app, phone, '{"id":1,"name":"Other"}')).statusCode, 409);
  assert.equal((await list(app, phone)).body, '[{"name":"Aloe"}]');
});
