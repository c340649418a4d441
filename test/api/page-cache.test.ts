import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { PageCache } from '../../src/store/wrappers/page-cache.js';
import type { PlantPage } from '../../src/store/store.js';
import { create, list, nextUrl, testApp } from '../helpers/app.js';

const page = (n: number): PlantPage => ({ plants: Array.from({ length: n }, (_, i) => ({ name: `p${i}` })), next: null });

test('PageCache serves a page until its owner writes; an admin page until anyone writes', () => {
  const cache = new PageCache(100);
  const alice = { owner: 'alice', limit: 10 };
  const admin = { owner: null, limit: 10 };
  const p = page(2);
  cache.set(alice, cache.key(alice), p);
  cache.set(admin, cache.key(admin), p);
  assert.equal(cache.get(cache.key(alice)), p);
  cache.wrote('bob');
  assert.equal(cache.get(cache.key(alice)), p, "bob's write leaves alice's page");
  assert.equal(cache.get(cache.key(admin)), undefined, "bob's write drops the admin page");
  cache.wrote('alice');
  assert.equal(cache.get(cache.key(alice)), undefined);
});

test('PageCache keeps a page with a next position through creates, not through deletes; a last page through neither', () => {
  const cache = new PageCache(100);
  const q = (owner: string | null, after = 0) => ({ owner, limit: 2, after });
  const full: PlantPage = { plants: [{ name: 'a' }, { name: 'b' }], next: 2 };
  const last: PlantPage = { plants: [{ name: 'c' }], next: null };
  const fill = () => {
    for (const owner of ['alice', null]) {
      cache.set(q(owner), cache.key(q(owner)), full);
      cache.set(q(owner, 2), cache.key(q(owner, 2)), last);
    }
  };
  fill();
  cache.appended('alice', undefined);
  assert.equal(cache.get(cache.key(q('alice'))), full, 'a create comes after the page: it stays exact');
  assert.equal(cache.get(cache.key(q('alice', 2))), undefined, 'the last page would gain the plant');
  assert.equal(cache.get(cache.key(q(null))), full, "the admin list's first page stays too");
  assert.equal(cache.get(cache.key(q(null, 2))), undefined);
  fill();
  cache.appended('bob', undefined);
  assert.equal(cache.get(cache.key(q('alice', 2))), last, "bob's create leaves alice's last page");
  assert.equal(cache.get(cache.key(q(null, 2))), undefined, "but not the admin list's");
  fill();
  cache.wrote('alice');
  assert.equal(cache.get(cache.key(q('alice'))), undefined, 'a delete may change any page');
  assert.equal(cache.get(cache.key(q(null))), undefined);
  // Read before a create, kept after it: a page with a next position is still taken, a last page not.
  const before = cache.stamp();
  cache.appended('carol', undefined);
  cache.set(q('carol'), cache.key(q('carol')), full, before);
  cache.set(q('carol', 2), cache.key(q('carol', 2)), last, before);
  assert.equal(cache.get(cache.key(q('carol'))), full);
  assert.equal(cache.get(cache.key(q('carol', 2))), undefined);
});

test('PageCache: a create makes stale only the last pages of the lists its plant joins: untagged, and its own tag', () => {
  const cache = new PageCache(100);
  const q = (owner: string | null, tag?: string) => ({ owner, limit: 2, after: 2, ...(tag === undefined ? {} : { tag }) });
  const last: PlantPage = { plants: [{ name: 'c', tag: 'x' }], next: null };
  const fill = () => {
    for (const query of [q('alice'), q('alice', 'herb'), q('alice', 'indoor'), q(null, 'herb')]) cache.set(query, cache.key(query), last);
  };
  fill();
  cache.appended('alice', 'herb');
  assert.equal(cache.get(cache.key(q('alice'))), undefined, 'her untagged list gains the plant');
  assert.equal(cache.get(cache.key(q('alice', 'herb'))), undefined, 'so does her herb list');
  assert.equal(cache.get(cache.key(q('alice', 'indoor'))), last, 'her indoor list does not');
  assert.equal(cache.get(cache.key(q(null, 'herb'))), undefined, "an admin page, whatever its tag, is stale after anyone's create");
  fill();
  cache.appended('alice', undefined);
  assert.equal(cache.get(cache.key(q('alice'))), undefined);
  assert.equal(cache.get(cache.key(q('alice', 'herb'))), last, 'an untagged plant joins no tag filter');
  assert.equal(cache.get(cache.key(q('alice', 'indoor'))), last);
  // A tag's first page kept after her creates: her last create of any tag stands in for that tag's.
  const before = cache.stamp();
  cache.appended('alice', 'indoor');
  cache.set(q('alice', 'outdoor'), cache.key(q('alice', 'outdoor')), last, before);
  assert.equal(cache.get(cache.key(q('alice', 'outdoor'))), undefined, 'read before a create of hers whose tag is not known apart: not kept');
  // ... and for the tag's other pages once one of them is kept: the first says nothing of what came before it.
  const olderRead = cache.stamp();
  cache.appended('dave', 'herb');
  const herb = (after: number) => ({ owner: 'dave', limit: 2, after, tag: 'herb' });
  cache.set(herb(2), cache.key(herb(2)), last);
  assert.equal(cache.get(cache.key(herb(2))), last, 'read after his create: kept');
  cache.set(herb(4), cache.key(herb(4)), last, olderRead);
  assert.equal(cache.get(cache.key(herb(4))), undefined, 'read before it: not kept');
  // The records per tag go with their pages, and so do their bytes.
  const small = new PageCache(20);
  small.set(q('bob', 'herb'), small.key(q('bob', 'herb')), last);
  small.set(q('bob', 'indoor'), small.key(q('bob', 'indoor')), last);
  assert.equal(small.usage.entries, 2);
  small.set(q('carol'), small.key(q('carol')), page(20)); // 22 plants > 20: both of bob's pages go
  assert.equal(small.usage.entries, 1);
  assert.equal(small.usage.owners, 1);
  const carolsOnly = new PageCache(20);
  carolsOnly.set(q('carol'), carolsOnly.key(q('carol')), page(20));
  assert.equal(small.usage.bytes, carolsOnly.usage.bytes, 'bob, his tags and his pages are no longer counted');
});

test('PageCache serves no page of an owner while a write of theirs is under way (no admin page while anyone writes); the write\'s end decides what stays', () => {
  const cache = new PageCache(100);
  const q = (owner: string | null, after = 0) => ({ owner, limit: 2, after });
  const full: PlantPage = { plants: [{ name: 'a' }, { name: 'b' }], next: 2 };
  const last: PlantPage = { plants: [{ name: 'c' }], next: null };
  for (const owner of ['alice', 'bob', null]) {
    cache.set(q(owner), cache.key(q(owner)), full);
    cache.set(q(owner, 2), cache.key(q(owner, 2)), last);
  }
  cache.begin('alice');
  cache.begin('alice');
  // A write is visible to reads from its commit, before it ends: a page read before must not be served meanwhile.
  for (const key of [q('alice'), q('alice', 2), q(null), q(null, 2)].map((x) => cache.key(x))) assert.equal(cache.get(key), undefined);
  assert.equal(cache.get(cache.key(q('bob'))), full, "bob's pages are served during alice's writes");
  assert.equal(cache.get(cache.key(q('bob', 2))), last);
  cache.appended('alice', undefined);
  cache.end('alice');
  assert.equal(cache.get(cache.key(q('alice'))), undefined, 'one of her writes is still under way');
  cache.appended('alice', undefined);
  cache.end('alice');
  assert.equal(cache.get(cache.key(q('alice'))), full, 'kept through the writes: a create leaves a page with a next position exact');
  assert.equal(cache.get(cache.key(q(null))), full);
  assert.equal(cache.get(cache.key(q('alice', 2))), undefined, 'the last page would gain the plant');
  assert.equal(cache.get(cache.key(q(null, 2))), undefined);
});

test('PageCache keys tell apart owners, limits, positions and an empty tag from no tag', () => {
  const cache = new PageCache(100);
  const keys = [
    { owner: 'alice', limit: 10 }, { owner: 'alice', limit: 11 }, { owner: 'alice', limit: 10, after: 5 },
    { owner: 'alice', limit: 10, tag: '' }, { owner: 'alice', limit: 10, tag: 'x' }, { owner: null, limit: 10 },
  ].map((q) => cache.key(q));
  assert.equal(new Set(keys).size, keys.length);
});

test('PageCache holds at most its number of plants, dropping the least recently used pages', () => {
  const cache = new PageCache(10);
  const q = (owner: string) => ({ owner, limit: 4 });
  for (const owner of ['a', 'b']) cache.set(q(owner), cache.key(q(owner)), page(4));
  assert.ok(cache.get(cache.key(q('a')))); // a is now the most recently used
  cache.set(q('c'), cache.key(q('c')), page(4)); // 12 plants > 10: b goes
  assert.ok(cache.get(cache.key(q('a'))));
  assert.equal(cache.get(cache.key(q('b'))), undefined);
  assert.ok(cache.get(cache.key(q('c'))));
  cache.set(q('huge'), cache.key(q('huge')), page(11));
  assert.equal(cache.get(cache.key(q('huge'))), undefined, 'a page larger than the cache is not kept');
  assert.equal(new PageCache(0).enabled, false);
});

test('ACCESS_LOG on writes one line per request, without the token; off writes none', async (t) => {
  for (const accessLog of [true, false]) {
    const logs = new PassThrough();
    let logged = '';
    logs.on('data', (d) => (logged += d));
    const { app, token } = await testApp(t, { logStream: logs, accessLog });
    const alice = await token('alice');
    await create(app, alice, { id: 1, name: 'x' });
    await list(app, alice, '?limit=5');
    const lines = logged.split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((l) => l.msg === 'request');
    if (!accessLog) {
      assert.equal(lines.length, 0);
      continue;
    }
    assert.deepEqual(lines.map((l) => [l.method, l.url, l.status]), [['POST', '/plants', 200], ['GET', '/plants?limit=5', 200]]);
    assert.ok(lines.every((l) => typeof l.ms === 'number' && typeof l.reqId === 'string'));
    assert.ok(!logged.includes(alice), 'the token never reaches the log');
  }
});

test('PageCache counts every entry, empty pages included: a flood of distinct pages stays within its bounds, newest kept', () => {
  const cache = new PageCache(1000);
  const empty: PlantPage = { plants: [], next: null };
  const q = (i: number) => ({ owner: 'mallory', tag: `tag ${i}`, limit: 100 });
  for (let i = 0; i < 100_000; i++) cache.set(q(i), cache.key(q(i)), empty);
  const { entries, slots, bytes, owners, maxPlants, maxBytes } = cache.usage;
  assert.ok(entries > 0 && entries <= maxPlants, `${entries} entries`);
  assert.ok(slots <= maxPlants && bytes <= maxBytes, `${slots} plants' slots, ${bytes} bytes of ${maxBytes}`);
  assert.equal(owners, 1);
  assert.equal(cache.get(cache.key(q(99_999))), empty, 'the newest page is kept');
  assert.equal(cache.get(cache.key(q(0))), undefined, 'the oldest went first');
});

test('PageCache bounds bytes too: pages of long names hold fewer plants than the plant bound', () => {
  const cache = new PageCache(1000);
  const long = (i: number): PlantPage => ({
    plants: Array.from({ length: 10 }, (_, j) => ({ name: `${i}/${j}`.padEnd(200, 'n'), tag: 't'.repeat(100) })), next: null,
  });
  const q = (i: number) => ({ owner: null, after: i, limit: 10 });
  for (let i = 0; i < 1000; i++) cache.set(q(i), cache.key(q(i)), long(i));
  const { slots, bytes, maxBytes } = cache.usage;
  assert.ok(bytes <= maxBytes, `${bytes} bytes of ${maxBytes}`);
  assert.ok(slots < 500, `${slots} plants held: the byte bound comes first for 300-character plants`);
  assert.ok(cache.get(cache.key(q(999))));
});

test('PageCache remembers writes only of owners with cached pages, and still never serves a stale page', () => {
  const cache = new PageCache(10);
  for (let i = 0; i < 100_000; i++) cache.wrote(`writer ${i}`);
  assert.equal(cache.usage.owners, 0, 'writers without cached pages leave nothing behind');
  const q = (owner: string) => ({ owner, limit: 5 });
  const p = page(5);
  cache.set(q('alice'), cache.key(q('alice')), p);
  cache.set(q('bob'), cache.key(q('bob')), p);
  assert.equal(cache.usage.owners, 2);
  cache.set(q('carol'), cache.key(q('carol')), p); // 15 plants > 10: alice's page goes, and her record
  assert.equal(cache.usage.owners, 2);
  cache.wrote('alice');
  cache.set(q('alice'), cache.key(q('alice')), p); // read after her write: valid
  assert.equal(cache.get(cache.key(q('alice'))), p);
  cache.wrote('alice');
  assert.equal(cache.get(cache.key(q('alice'))), undefined, 'written after it was read: stale');
  assert.equal(cache.usage.owners, 1, 'only carol has a page now');
});

test('a cached list answers the same bytes as the route serializes an uncached one, odd strings included', async (t) => {
  const cached = await testApp(t); // the server's handle: on SQLite, lists are cached
  const uncached = await testApp(t, {}, { ...cached, store: await cached.reopen() }); // no cache on any backend
  const odd = ['quote " and \\ back', 'tab\tnew\nline\u0001', 'lone \ud800 surrogate', 'line\u2028sep', 'emoji 🌵', 'é', ''];
  for (const [i, name] of odd.entries()) {
    const plant = i % 2 === 0 ? { id: BigInt(i), name } : { id: BigInt(i), name, tag: name };
    assert.equal(await cached.store.plants.createPlant('alice', plant), 'created');
  }
  const alice = await cached.token('alice');
  for (const query of ['?limit=3', '?limit=100']) {
    const expected = await list(uncached.app, alice, query);
    for (let round = 0; round < 2; round++) { // the first read fills the cache, the second is served from it
      const res = await list(cached.app, alice, query);
      assert.equal(res.statusCode, 200);
      assert.equal(res.headers['content-type'], expected.headers['content-type']);
      assert.equal(res.rawPayload.toString('latin1'), expected.rawPayload.toString('latin1'), `${query}, round ${round}`);
    }
  }
});

test('after creates and a delete, every cached page of a walk answers what an uncached store answers', async (t) => {
  const cached = await testApp(t); // the server's handle: on SQLite, lists are cached
  const uncached = await testApp(t, {}, { ...cached, store: await cached.reopen() });
  const alice = await cached.token('alice');
  const bodies = async (app: typeof cached.app, first: string): Promise<string[]> => {
    const found: string[] = [];
    for (let query: string | undefined = first; query !== undefined;) {
      const res = await list(app, alice, query);
      assert.equal(res.statusCode, 200);
      found.push(res.body);
      query = nextUrl(res.headers.link)?.slice('/plants'.length);
    }
    return found;
  };
  const check = async (when: string) => {
    for (const first of ['?limit=2', '?limit=2&tag=x', '?limit=2&tag=y', '?limit=3']) {
      // Twice through the cached server: the first walk may fill the cache, the second is served from it.
      for (let round = 0; round < 2; round++) {
        assert.deepEqual(await bodies(cached.app, first), await bodies(uncached.app, first), `${when}, ${first}, round ${round}`);
      }
    }
  };
  let id = 0;
  const add = async (n: number) => {
    for (let i = 0; i < n; i++) {
      id++;
      // Tagged x, y or not at all in turn: a create changes the last pages of two of the three lists.
      const tag = ['x', 'y', undefined][id % 3];
      assert.equal((await create(cached.app, alice, tag === undefined ? { id, name: `p${id}` } : { id, name: `p${id}`, tag })).statusCode, 200);
    }
  };
  await add(6); // pages of 2 end full: the last page has no next link
  await check('six plants');
  for (const more of [1, 1, 1, 3]) {
    await add(more);
    await check(`${id} plants`);
  }
  const gone = await cached.app.inject({ method: 'DELETE', url: '/plants/2', headers: { authorization: `Bearer ${alice}` } });
  assert.equal(gone.statusCode, 204);
  await check('after a delete');
});
