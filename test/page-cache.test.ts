import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { PageCache } from '../src/store/page-cache.js';
import type { PlantPage } from '../src/store/store.js';
import { create, list, testApp } from './helpers.js';

const page = (n: number): PlantPage => ({ plants: Array.from({ length: n }, (_, i) => ({ name: `p${i}` })), next: null });

test('PageCache serves a page until its owner writes; an admin page until anyone writes', () => {
  const cache = new PageCache(100);
  const alice = { owner: 'alice', limit: 10 };
  const admin = { owner: null, limit: 10 };
  const p = page(2);
  cache.set(cache.key(alice), p);
  cache.set(cache.key(admin), p);
  assert.equal(cache.get(alice, cache.key(alice)), p);
  cache.wrote('bob');
  assert.equal(cache.get(alice, cache.key(alice)), p, "bob's write leaves alice's page");
  assert.equal(cache.get(admin, cache.key(admin)), undefined, "bob's write drops the admin page");
  cache.wrote('alice');
  assert.equal(cache.get(alice, cache.key(alice)), undefined);
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
  for (const owner of ['a', 'b']) cache.set(cache.key(q(owner)), page(4));
  assert.ok(cache.get(q('a'), cache.key(q('a')))); // a is now the most recently used
  cache.set(cache.key(q('c')), page(4)); // 12 plants > 10: b goes
  assert.ok(cache.get(q('a'), cache.key(q('a'))));
  assert.equal(cache.get(q('b'), cache.key(q('b'))), undefined);
  assert.ok(cache.get(q('c'), cache.key(q('c'))));
  cache.set(cache.key(q('huge')), page(11));
  assert.equal(cache.get(q('huge'), cache.key(q('huge'))), undefined, 'a page larger than the cache is not kept');
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
