import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allPages, create, errorBody, list, nextUrl, testApp } from '../helpers/app.js';

async function createMany(app: Parameters<typeof create>[0], token: string, n: number, tag?: (i: number) => string | undefined) {
  for (let i = 1; i <= n; i++) {
    const t = tag?.(i);
    const res = await create(app, token, t === undefined ? { id: i, name: `plant ${i}` } : { id: i, name: `plant ${i}`, tag: t });
    assert.equal(res.statusCode, 200);
  }
}

test('an empty store lists [] with no Link', async (t) => {
  const { app, token } = await testApp(t);
  const res = await list(app, await token('alice'));
  assert.equal(res.statusCode, 200);
  assert.equal(res.body, '[]');
  assert.equal(res.headers.link, undefined);
});

test('the default limit is 100, and a Link rel="next" appears only when more remain', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  await createMany(app, alice, 100);
  const exactly100 = await list(app, alice);
  assert.equal(exactly100.json().length, 100);
  assert.equal(exactly100.headers.link, undefined, 'no next page when exactly the limit remains');

  await createMany(app, alice, 101);
  const res = await list(app, alice);
  assert.equal(res.json().length, 100);
  assert.match(String(res.headers.link), /^<\/plants\?limit=100&cursor=[A-Za-z0-9_-]{21}[AQgw]>; rel="next"$/);
});

test('pages follow creation order, oldest first, with no plant missed or repeated', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  await createMany(app, alice, 25);
  const pages = await allPages(app, alice, '/plants?limit=10');
  assert.deepEqual(pages.map((p) => p.length), [10, 10, 5]);
  assert.deepEqual(pages.flat().map((p) => (p as { name: string }).name), Array.from({ length: 25 }, (_, i) => `plant ${i + 1}`));
});

test('a page is the bytes the schema serializes, for every storable string (PostgreSQL builds them itself)', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  const odd = [
    'quote " and \\ back', 'tab\tnew\nline\r\b\f\u0001\u001f\u007f', 'line\u2028sep\u2029', 'emoji 🌵 👩‍🌾', 'é e\u0301 שלום',
    '</script>', 'BOM \ufeff max \uffff astral \u{10ffff}', '',
  ];
  const plants = odd.flatMap((s, i) => [{ name: s || 'empty tag', tag: s }, { name: `${s}!` }].map((p, j) => ({ id: 2 * i + j + 1, ...p })));
  for (const p of plants) assert.equal((await create(app, alice, p)).statusCode, 200);
  const expected = plants.map(({ name, tag }) => (tag === undefined ? { name } : { name, tag }));
  const page = await list(app, alice, '?limit=1000');
  assert.equal(page.headers['content-type'], 'application/json; charset=utf-8');
  assert.equal(page.body, JSON.stringify(expected));
  const first = await list(app, alice, '?limit=3');
  assert.equal(first.body, JSON.stringify(expected.slice(0, 3)));
  assert.equal((await list(app, alice, nextUrl(first.headers.link)?.slice('/plants'.length))).body, JSON.stringify(expected.slice(3, 6)));
});

test('a plant created after a page was read appears on a later page', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  await createMany(app, alice, 3);
  const first = await list(app, alice, '?limit=2');
  await create(app, alice, { id: 99, name: 'late' });
  const second = await list(app, alice, nextUrl(first.headers.link)?.slice('/plants'.length));
  assert.deepEqual(second.json(), [{ name: 'plant 3' }, { name: 'late' }]);
});

test('limit accepts 1-1000 in plain decimal and refuses everything else with 400 40003', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  await createMany(app, alice, 3);
  assert.equal((await list(app, alice, '?limit=1')).json().length, 1);
  assert.equal((await list(app, alice, '?limit=1000')).json().length, 3);
  for (const bad of ['0', '1001', '-1', '1.5', 'abc', '', '0x10', '1e2', '%205', '+5', '10&limit=20', '99999999999999999999']) {
    const res = await list(app, alice, `?limit=${bad}`);
    assert.equal(res.statusCode, 400, `limit=${bad}`);
    const body = errorBody(res);
    assert.equal(body.error, 40003);
    assert.match(body.message, /limit/);
  }
});

test('tag filters by exact tag, and the next link keeps the filter and the limit', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  await createMany(app, alice, 30, (i) => (i % 3 === 0 ? 'in door' : i % 3 === 1 ? 'In door' : undefined));
  const pages = await allPages(app, alice, '/plants?limit=4&tag=in%20door');
  const names = pages.flat().map((p) => (p as { name: string }).name);
  assert.deepEqual(names, Array.from({ length: 10 }, (_, i) => `plant ${(i + 1) * 3}`));
  assert.deepEqual(pages.map((p) => p.length), [4, 4, 2]);
  const first = await list(app, alice, '?limit=4&tag=in%20door');
  assert.match(String(first.headers.link), /^<\/plants\?limit=4&tag=in%20door&cursor=[A-Za-z0-9_-]+>; rel="next"$/);
  assert.equal((await list(app, alice, '?tag=')).body, '[]', 'the empty tag matches only plants tagged ""');
  assert.equal((await list(app, alice, '?tag=nothing')).body, '[]');
  const badTag = await list(app, alice, `?tag=${'x'.repeat(101)}`);
  assert.equal(errorBody(badTag).error, 40003);
  assert.equal(errorBody(await list(app, alice, '?tag=a&tag=b')).error, 40003);
});

test('cursors this service did not issue are 400 40003', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  // The last ones are cursors of the format before cursors were sealed (base64url of the position).
  for (const cursor of ['zzz', '!!', 'a'.repeat(33), 'a'.repeat(48), 'a'.repeat(49), '', 'MA', 'MTAw', 'NzE']) {
    const res = await list(app, alice, `?cursor=${cursor}`);
    assert.equal(res.statusCode, 400, cursor);
    assert.equal(errorBody(res).error, 40003, cursor);
  }
});

test('each user sees only their own plants; an admin token sees every user\'s', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  const bob = await token('bob');
  const admin = await token('root', { admin: true });
  await create(app, alice, { id: 1, name: 'alice 1', tag: 'a' });
  await create(app, bob, { id: 1, name: 'bob 1', tag: 'a' });
  await create(app, alice, { id: 2, name: 'alice 2' });
  await create(app, admin, { id: 1, name: 'root 1' });
  assert.deepEqual((await list(app, alice)).json(), [{ name: 'alice 1', tag: 'a' }, { name: 'alice 2' }]);
  assert.deepEqual((await list(app, bob)).json(), [{ name: 'bob 1', tag: 'a' }]);
  assert.deepEqual((await list(app, admin)).json().map((p: { name: string }) => p.name), ['alice 1', 'bob 1', 'alice 2', 'root 1']);
  assert.deepEqual((await list(app, admin, '?tag=a')).json().map((p: { name: string }) => p.name), ['alice 1', 'bob 1']);
  const adminPages = await allPages(app, admin, '/plants?limit=1');
  assert.equal(adminPages.length, 4);
});

test('a cursor from another user\'s listing is refused (400 40003): it reveals nothing of theirs', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  const bob = await token('bob');
  await createMany(app, alice, 3);
  const link = nextUrl((await list(app, alice, '?limit=1')).headers.link);
  assert.ok(link);
  const res = await list(app, bob, link.slice('/plants'.length));
  assert.equal(res.statusCode, 400);
  assert.equal(errorBody(res).error, 40003);
});

test('a query parameter name or value that is not valid percent-encoded UTF-8 is 400 40003, naming it', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  await create(app, alice, { id: 1, name: 'literal', tag: '%C3' });
  const cases: Array<[string, RegExp]> = [
    ['?tag=%C3', /tag/], // a UTF-8 sequence cut short
    ['?tag=%ZZ', /tag/], // not hex
    ['?tag=%', /tag/],
    ['?tag=%ED%A0%80', /tag/], // an encoded surrogate is not UTF-8
    ['?tag=%C0%AF', /tag/], // an overlong encoding of "/"
    ['?limit=2&tag=a%FFb', /tag/],
    ['?limit=%C3', /limit/],
    ['?cursor=%FF', /cursor/],
    ['?%ZZ=1', /%ZZ/],
    ['?ta%C3=x', /ta%C3/],
  ];
  for (const [query, name] of cases) {
    const res = await list(app, alice, query);
    assert.equal(res.statusCode, 400, query);
    const body = errorBody(res);
    assert.equal(body.error, 40003, query);
    assert.match(body.message, name, query);
  }
  // Valid encodings are decoded as before: %25 is "%", + is a space, astral characters work.
  assert.equal((await list(app, alice, '?tag=%25C3')).body, '[{"name":"literal","tag":"%C3"}]');
  assert.equal((await list(app, alice, '?tag=a+b&limit=%31')).body, '[]');
  assert.equal((await list(app, alice, `?tag=${encodeURIComponent('🌱 é')}`)).statusCode, 200);
});
