import assert from 'node:assert/strict';
import { createCipheriv, randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { CursorCodec, PageCursors } from '../../src/http/routes/plants/cursor.js';
import { LateStore } from '../../src/store/wrappers/late.js';
import { StoreNotOpenError } from '../../src/store/store.js';
import { allPages, create, errorBody, list, nextUrl, testApp, testStore, type TestApp } from '../helpers/app.js';

/** The cursor of a list answer's Link rel="next". */
function cursorOf(res: Awaited<ReturnType<typeof list>>): string {
  const cursor = /[?&]cursor=([^&]*)$/.exec(nextUrl(res.headers.link) ?? '')?.[1];
  assert.ok(cursor, `no next link: ${String(res.headers.link)}`);
  return cursor;
}

async function createNamed(app: TestApp['app'], token: string, names: string[], tag?: string) {
  for (const [i, name] of names.entries()) {
    const res = await create(app, token, tag === undefined ? { id: i + 1, name } : { id: i + 1, name, tag });
    assert.equal(res.statusCode, 200);
  }
}

/**
 * 400 40003, in one plain sentence whether the cursor failed its form (the query schema's pattern) or its
 * seal: never a regular expression.
 */
function assertRefused(res: Awaited<ReturnType<typeof list>>, label: string) {
  assert.equal(res.statusCode, 400, label);
  assert.equal(errorBody(res).error, 40003, label);
  assert.equal(errorBody(res).message, 'A query parameter (limit, tag, cursor) is invalid: cursor is not one this server issued for this listing', label);
}

test('a cursor tells nothing about the store: the same form at any position, no number inside, the same text for the same position of the same listing on every instance', async (t) => {
  const first = await testApp(t);
  const { app, token, store } = first;
  const bob = await token('bob');
  const alice = await token('alice');
  await createNamed(app, bob, ['b1', 'b2', 'b3']); // the first positions of the store
  const others = Array.from({ length: 300 }, (_, i) => store.plants.createPlant(`user ${i % 30}`, { id: BigInt(i), name: `o${i}` }));
  assert.ok((await Promise.all(others)).every((o) => o === 'created'));
  await createNamed(app, alice, ['a1', 'a2', 'a3']); // positions past 300

  const aliceFirst = cursorOf(await list(app, alice, '?limit=1'));
  assert.equal((await create(app, alice, { id: 4, name: 'a4' })).statusCode, 200);
  assert.equal((await create(app, alice, { id: 5, name: 'a5' })).statusCode, 200);
  // A delete makes all her cached pages stale: her first page is read and sealed anew, and ends where it
  // did, so it gets the same cursor.
  const deleted = await app.inject({ method: 'DELETE', url: '/plants/5', headers: { authorization: `Bearer ${alice}` } });
  assert.equal(deleted.statusCode, 204);
  assert.equal(cursorOf(await list(app, alice, '?limit=1')), aliceFirst, 'the same position of the same listing, sealed again');
  // Another process (here another app on the same store) seals that same position to the same text.
  const elsewhere = await testApp(t, {}, first);
  assert.equal(cursorOf(await list(elsewhere.app, alice, '?limit=1')), aliceFirst, 'the same text from another process');
  const aliceSecond = cursorOf(await list(app, alice, '?limit=2'));
  const bobFirst = cursorOf(await list(app, bob, '?limit=1'));
  const admin = await token('root', { admin: true });
  const adminCursors = [cursorOf(await list(app, admin, '?limit=1')), cursorOf(await list(app, admin, '?limit=300'))];
  const all = [aliceFirst, aliceSecond, bobFirst, ...adminCursors];
  assert.equal(new Set(all).size, all.length, 'other listings and other positions, other cursors');
  for (const cursor of all) {
    assert.match(cursor, /^[A-Za-z0-9_-]{21}[AQgw]$/, 'one form and length whatever the position');
    const bytes = Buffer.from(cursor, 'base64url');
    assert.equal(bytes.length, 16);
    assert.equal(bytes.toString('base64url'), cursor, 'the one text of its bytes');
    assert.doesNotMatch(bytes.toString('latin1'), /^\d+$/, 'not a number in disguise');
    // The position (a count over the whole store: 3 for bob, past 300 for alice) is not in the clear.
    for (const position of [1, 3, 301, 302, 303, 304]) {
      const plain = Buffer.alloc(8);
      plain.writeBigUInt64BE(BigInt(position));
      assert.equal(bytes.indexOf(plain.subarray(4)), -1, `position ${position} not in the bytes`);
    }
  }
  // Each still continues where it should.
  assert.deepEqual((await list(app, alice, `?limit=5&cursor=${aliceFirst}`)).json(), [{ name: 'a2' }, { name: 'a3' }, { name: 'a4' }]);
  assert.deepEqual((await list(app, bob, `?limit=5&cursor=${bobFirst}`)).json(), [{ name: 'b2' }, { name: 'b3' }]);
});

test('a cursor changed in any bit, cut short, lengthened, or taken to another listing is 400 40003, saying in words that this server did not issue it', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  const bob = await token('bob');
  const admin = await token('alice', { admin: true }); // an admin named like the user: still another listing
  await createNamed(app, alice, ['a1', 'a2', 'a3'], 'x');
  await createNamed(app, bob, ['b1', 'b2', 'b3'], 'x');
  const cursor = cursorOf(await list(app, alice, '?limit=1'));
  const bytes = Buffer.from(cursor, 'base64url');
  for (let i = 0; i < bytes.length; i++) {
    const changed = Buffer.from(bytes);
    changed[i] = (changed[i] as number) ^ (1 << (i % 8));
    assertRefused(await list(app, alice, `?limit=1&cursor=${changed.toString('base64url')}`), `bit ${i % 8} of byte ${i} flipped`);
  }
  // Cut short, lengthened, or another text of the same bytes (the last character's 4 unused bits set).
  const unused = `${cursor.slice(0, 21)}${String.fromCharCode((cursor.at(-1) as string).charCodeAt(0) + 1)}`;
  assert.deepEqual(Buffer.from(unused, 'base64url'), bytes, 'the same bytes, decoded leniently');
  for (const cut of [cursor.slice(0, 21), cursor.slice(0, 16), cursor.slice(1), `${cursor}A`, `${cursor}${cursor}`, `${cursor}${'A'.repeat(26)}`, unused]) {
    assertRefused(await list(app, alice, `?limit=1&cursor=${cut}`), `cursor ${cut}`);
  }
  assertRefused(await list(app, bob, `?limit=1&cursor=${cursor}`), "another user's cursor");
  assertRefused(await list(app, admin, `?limit=1&cursor=${cursor}`), "a user's cursor on an admin's listing");
  const adminCursor = cursorOf(await list(app, admin, '?limit=1'));
  assertRefused(await list(app, alice, `?limit=1&cursor=${adminCursor}`), "an admin's cursor on a user's listing");
  const tagged = cursorOf(await list(app, alice, '?limit=1&tag=x'));
  assertRefused(await list(app, alice, `?limit=1&cursor=${tagged}`), 'a filtered listing\'s cursor without the filter');
  assertRefused(await list(app, alice, `?limit=1&tag=y&cursor=${tagged}`), 'with another filter');
  assertRefused(await list(app, alice, `?limit=1&tag=&cursor=${cursor}`), 'an unfiltered cursor with the empty tag');
  // What the cursor is bound to, it still opens for; the page size may change while paging.
  assert.deepEqual((await list(app, alice, `?limit=1&tag=x&cursor=${tagged}`)).json(), [{ name: 'a2', tag: 'x' }]);
  assert.deepEqual((await list(app, alice, `?limit=10&cursor=${cursor}`)).json(), [{ name: 'a2', tag: 'x' }, { name: 'a3', tag: 'x' }]);
});

test('paging with sealed cursors returns every plant exactly once: a user, a tag filter, an admin', async (t) => {
  const { app, token } = await testApp(t);
  const alice = await token('alice');
  const bob = await token('bob');
  const admin = await token('root', { admin: true });
  const expected: Record<string, string[]> = { alice: [], aliceTagged: [], all: [] };
  for (let i = 1; i <= 20; i++) {
    const tag = i % 3 === 0 ? 'even' : undefined;
    for (const [who, secret] of [['alice', alice], ['bob', bob]] as const) {
      const name = `${who} ${i}`;
      assert.equal((await create(app, secret, tag === undefined ? { id: i, name } : { id: i, name, tag })).statusCode, 200);
      expected.all?.push(name);
      if (who === 'alice') expected.alice?.push(name);
      if (who === 'alice' && tag !== undefined) expected.aliceTagged?.push(name);
    }
  }
  const names = (pages: unknown[][]) => pages.flat().map((p) => (p as { name: string }).name);
  assert.deepEqual(names(await allPages(app, alice, '/plants?limit=3')), expected.alice);
  assert.deepEqual(names(await allPages(app, alice, '/plants?limit=2&tag=even')), expected.aliceTagged);
  assert.deepEqual(names(await allPages(app, admin, '/plants?limit=7')), expected.all);
});

test('every handle on a store seals with one key, made by the first that asks: a cursor from one app opens on another', async (t) => {
  const a = await testApp(t);
  const other = await a.reopen(); // another process (the CLI), or on PostgreSQL another instance
  const [key, otherKey] = await Promise.all([a.store.secrets.cursorKey(), other.secrets.cursorKey()]);
  assert.equal(key.length, 32);
  assert.deepEqual(otherKey, key);
  assert.deepEqual(await (await a.reopen()).secrets.cursorKey(), key, 'the same after a restart');

  const b = await testApp(t, {}, { ...a, store: other });
  const alice = await a.token('alice');
  await createNamed(a.app, alice, ['p1', 'p2', 'p3', 'p4', 'p5']);
  const cursor = cursorOf(await list(a.app, alice, '?limit=2'));
  assert.deepEqual((await list(b.app, alice, `?limit=2&cursor=${cursor}`)).json(), [{ name: 'p3' }, { name: 'p4' }]);
});

test('CursorCodec opens what it sealed, for the same listing and key only; a store not yet open has no key', async () => {
  const key = randomBytes(32);
  const codec = new CursorCodec(key);
  for (const position of [1, 71, 2 ** 32, Number.MAX_SAFE_INTEGER]) {
    for (const scope of [{ owner: 'alice' }, { owner: null }, { owner: 'alice', tag: '' }, { owner: 'alice', tag: 'a\u0001b' }]) {
      assert.equal(codec.open(codec.seal(position, scope), scope), position);
    }
  }
  const sealed = codec.seal(5, { owner: 'alice' });
  assert.equal(new CursorCodec(randomBytes(32)).open(sealed, { owner: 'alice' }), null, 'another key');
  assert.equal(codec.open(sealed, { owner: 'alice', tag: '' }), null);
  assert.equal(codec.open(sealed, { owner: null }), null);
  const unused = `${sealed.slice(0, 21)}${String.fromCharCode((sealed.at(-1) as string).charCodeAt(0) + 1)}`;
  assert.equal(codec.open(unused, { owner: 'alice' }), null, 'another text of the same bytes');
  assert.equal(codec.open(codec.seal(2 ** 60, { owner: 'alice' }), { owner: 'alice' }), null, 'past 2^53: not a position this service hands out');
  assert.throws(() => new CursorCodec(randomBytes(16)));
  await assert.rejects(new LateStore().handle.secrets.cursorKey(), StoreNotOpenError);
});

/** A cursor as releases before version 2 sealed it: nonce ‖ AES-256-GCM(position) ‖ tag, the listing as associated data. */
function sealV1(key: Buffer, position: number, { owner, tag }: { owner: string | null; tag?: string }): string {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: 16 });
  cipher.setAAD(Buffer.from(`plantstore cursor v1\u0000${owner === null ? '*' : `@${owner}`}${tag === undefined ? '' : `\u0000${tag}`}`));
  const plain = Buffer.alloc(8);
  plain.writeBigUInt64BE(BigInt(position));
  return Buffer.concat([nonce, cipher.update(plain), cipher.final(), cipher.getAuthTag()]).toString('base64url');
}

test('a cursor an earlier release sealed (version 1, AES-GCM, 48 characters) still opens, for its own listing only, and unchanged only', async (t) => {
  const { app, token, store } = await testApp(t);
  const alice = await token('alice');
  const bob = await token('bob');
  await createNamed(app, alice, ['a1', 'a2', 'a3'], 'x');
  const key = await store.secrets.cursorKey();
  const first = (await list(app, alice, '?limit=1')).json() as unknown[];
  assert.deepEqual(first, [{ name: 'a1', tag: 'x' }]);
  // Position 1 is her first plant (the store's first): a version 1 cursor continues after it.
  const v1 = sealV1(key, 1, { owner: 'alice' });
  assert.match(v1, /^[A-Za-z0-9_-]{48}$/);
  const page = await list(app, alice, `?limit=1&cursor=${v1}`);
  assert.equal(page.statusCode, 200);
  assert.deepEqual(page.json(), [{ name: 'a2', tag: 'x' }]);
  assert.match(cursorOf(page), /^[A-Za-z0-9_-]{21}[AQgw]$/, 'the next cursor is sealed in the current form');
  assert.deepEqual((await list(app, alice, `?limit=5&tag=x&cursor=${sealV1(key, 1, { owner: 'alice', tag: 'x' })}`)).json(), [{ name: 'a2', tag: 'x' }, { name: 'a3', tag: 'x' }]);
  assertRefused(await list(app, bob, `?limit=1&cursor=${v1}`), "another user's");
  assertRefused(await list(app, alice, `?limit=1&tag=x&cursor=${v1}`), 'another filter');
  assertRefused(await list(app, alice, `?limit=1&cursor=${sealV1(randomBytes(32), 1, { owner: 'alice' })}`), 'another key');
  const bytes = Buffer.from(v1, 'base64url');
  for (const i of [0, 11, 12, 19, 20, 35]) {
    const changed = Buffer.from(bytes);
    changed[i] = (changed[i] as number) ^ 1;
    assertRefused(await list(app, alice, `?limit=1&cursor=${changed.toString('base64url')}`), `byte ${i} changed`);
  }
});

test('PageCursors: a page keeps the cursor sealed for it, for its own listing; what one instance seals, another opens, and seals alike', async (t) => {
  const { store } = await testStore(t);
  const cursors = new PageCursors(store);
  const elsewhere = new PageCursors(store); // another instance on the same store
  const alice = { owner: 'alice' };
  const page = { plants: [], next: 7 };
  assert.equal(cursors.known(page, alice), undefined, 'nothing sealed yet');
  const first = await cursors.seal(page, alice);
  assert.equal(cursors.known(page, alice), first, 'kept with the page');
  for (const other of [{ owner: 'bob' }, { owner: null }, { owner: 'alice', tag: 'x' }, { owner: 'alice', tag: '' }]) {
    assert.equal(cursors.known(page, other), undefined, `not for ${JSON.stringify(other)}`);
    const sealed = await cursors.seal({ plants: [], next: 7 }, other);
    assert.notEqual(sealed, first, `position 7 of ${JSON.stringify(other)}`);
    assert.equal(await elsewhere.open(sealed, other), 7);
    await assert.rejects(cursors.open(sealed, alice), (e: { row?: { code: number } }) => e.row?.code === 40003);
  }
  assert.equal(await elsewhere.seal({ plants: [], next: 7 }, alice), first, 'the same position of the same listing, another instance');
  assert.notEqual(await cursors.seal({ plants: [], next: 8 }, alice), first, 'another position');
  // Many cursors, nothing remembered: each opens for its own listing, from either instance.
  const sealed: string[] = [];
  for (let next = 1; next <= 25_000; next++) sealed.push(await cursors.seal({ plants: [], next }, alice));
  for (const next of [1, 7_000, 15_001, 25_000]) {
    assert.equal(await elsewhere.open(sealed[next - 1] as string, alice), next);
    assert.equal(await cursors.open(sealed[next - 1] as string, alice), next);
    await assert.rejects(cursors.open(sealed[next - 1] as string, { owner: 'bob' }), (e: { row?: { code: number } }) => e.row?.code === 40003);
  }
});
