import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { test } from 'node:test';
import { PlantStore } from '@plantstore/client';
import { ERRORS } from '../../src/http/errors.js';
import { all, apiError, nothingListening, served, type Event } from '../helpers/client.js';
import { standIn, type Step } from '../helpers/http-stand-in.js';

/** Waits for a condition another party brings about; past `boundMs` it is a hang, and fails. */
async function until(condition: () => boolean, what: string, boundMs = 30_000): Promise<void> {
  const start = performance.now();
  while (!condition()) {
    if (performance.now() - start > boundMs) assert.fail(`still waiting for ${what}`);
    await delay(10);
  }
}

/** A Plant Store error answer, as the server writes it, with the Retry-After given. */
const answer = (row: { status: number; code: number; message: string }, retryAfter?: string): Step => ({
  status: row.status,
  headers: { 'content-type': 'application/json; charset=utf-8', ...(retryAfter === undefined ? {} : { 'retry-after': retryAfter }) },
  body: JSON.stringify({ error: row.code, message: row.message }),
});

/** For each refused answer, how long after it the next request arrived (ms). */
function gapsAfter(events: Event[], status: number): number[] {
  return events.flatMap((e, i) => {
    if (e.phase !== 'response' || e.status !== status) return [];
    const next = events.slice(i + 1).find((later) => later.phase === 'request');
    return next === undefined ? [] : [next.at - e.at];
  });
}

test('a 503 from the store (another process holds its write lock) is retried after its Retry-After: 2, then created', async (t) => {
  // The store gives up on the lock soon: the 503 is what matters, not how long the store waited for it.
  const { client, token, holdWriteLock, events, responses, store } = await served(t, { queryTimeoutMs: 200 });
  const alice = client(await token('alice'));
  const release = await holdWriteLock();
  const created = alice.create({ id: 1, name: 'Fern' });
  await until(() => responses('POST').includes(503), 'the 503');
  await release();
  assert.deepEqual(await created, { name: 'Fern' });
  const statuses = responses('POST');
  assert.equal(statuses.at(-1), 200);
  assert.ok(statuses.slice(0, -1).every((s) => s === 503), statuses.join());
  // Retry-After: 2 (errors.ts RETRY_AFTER); timers never fire early, so the retry came at least 2 s later.
  for (const gap of gapsAfter(events, 503)) assert.ok(gap >= 1900, `retried ${gap} ms after the 503`);
  assert.equal((await store.plants.listPlants({ owner: 'alice', limit: 10 })).plants.length, 1);
});

test('a 429 from RATE_LIMIT is retried after its Retry-After, and every create succeeds', async (t) => {
  const { client, token, events, responses } = await served(t, { rateLimit: { limit: 1, windowMs: 1000 } });
  const alice = client(await token('alice'));
  // One request per second: the second or third create in a row meets the limit (the first two may
  // straddle a window boundary, two in a row cannot).
  let id = 0;
  while (!responses('POST').includes(429)) {
    assert.ok(id < 5, 'the limit was never met');
    id += 1;
    assert.deepEqual(await alice.create({ id, name: `p${id}` }), { name: `p${id}` });
  }
  const gaps = gapsAfter(events, 429);
  assert.ok(gaps.length > 0);
  for (const gap of gaps) assert.ok(gap >= 900, `retried ${gap} ms after a 429 with Retry-After: 1`);
  assert.equal((await all(alice.list())).length, id);
});

test('a Retry-After beyond maxRetryDelayMs is not waited for: the 429 is thrown at once, with retryAfterMs', async (t) => {
  const { client, token, responses } = await served(t, { rateLimit: { limit: 1, windowMs: 3_600_000 } });
  const alice = client(await token('alice'), { maxRetryDelayMs: 500 });
  await alice.create({ id: 1, name: 'Fern' });
  const error = await apiError(alice.create({ id: 2, name: 'Ivy' }), { status: 429, error: ERRORS.rateLimited.code });
  assert.ok(error.retryAfterMs !== undefined && error.retryAfterMs >= 1000, String(error.retryAfterMs));
  assert.deepEqual(responses('POST'), [200, 429], 'no retry');
});

test('retries are bounded: `retries` more attempts, then the last error; without a Retry-After, a backoff', async (t) => {
  const unavailable = answer(ERRORS.storeUnavailable, '0');
  for (const [retries, attempts] of [[undefined, 4], [2, 3], [0, 1]] as const) {
    const proxy = await standIn(t, { then: unavailable });
    const client = new PlantStore({ baseUrl: proxy.url, token: 'pst_x', ...(retries === undefined ? {} : { retries }) });
    const error = await apiError(client.create({ id: 1, name: 'x' }), { status: 503, error: 50300, message: /^The store is unavailable/ });
    assert.equal(error.retryAfterMs, 0);
    assert.equal(proxy.seen.length, attempts, `retries: ${retries}`);
  }

  // A page of a listing is retried on its own; a 503 without Retry-After (another server's) after a backoff.
  const { url, client, token } = await served(t);
  const alice = client(await token('alice'));
  for (let id = 1; id <= 5; id++) await alice.create({ id, name: `p${id}` });
  const proxy = await standIn(t, { target: url, steps: ['forward', { status: 503 }] });
  const listed = await all(new PlantStore({ baseUrl: proxy.url, token: await token('alice') }).list({ limit: 2 }));
  assert.equal(listed.length, 5);
  assert.equal(proxy.seen.length, 4, 'three pages, the second asked twice');
});

test('a Retry-After given as an HTTP-date is honoured', async (t) => {
  const { url, client, token } = await served(t);
  await client(await token('alice')).create({ id: 1, name: 'Fern' });
  const at = new Date(Date.now() + 2000).toUTCString(); // whole seconds: between 1 and 2 s from now
  const proxy = await standIn(t, { target: url, steps: [answer(ERRORS.rateLimited, at)] });
  const plants = await all(new PlantStore({ baseUrl: proxy.url, token: await token('alice') }).list());
  assert.deepEqual(plants, [{ name: 'Fern' }]);
  const [first, second] = proxy.seen;
  assert.ok(first !== undefined && second !== undefined);
  assert.ok(second.at - first.at >= 900, `retried ${second.at - first.at} ms later`);
});

test('a create whose answer was lost after it committed is retried, and the replay answers 200: one plant', async (t) => {
  const { url, token, responses, store } = await served(t);
  const proxy = await standIn(t, { target: url, steps: ['forward-then-cut'] });
  const alice = new PlantStore({ baseUrl: proxy.url, token: await token('alice') });
  assert.deepEqual(await alice.create({ id: 9223372036854775807n, name: 'Fern', tag: 'lost' }), { name: 'Fern', tag: 'lost' });
  assert.deepEqual(responses('POST'), [200, 200], 'committed, then replayed');
  assert.deepEqual((await store.plants.listPlants({ owner: 'alice', limit: 10 })).plants, [{ name: 'Fern', tag: 'lost' }]);
});

test('delete: a 404 after an attempt that may have been carried out unseen resolves; after a certain refusal it rejects', async (t) => {
  const { url, client, token, responses } = await served(t);
  const secret = await token('alice');
  const alice = client(secret);
  await alice.create({ id: 1, name: 'Fern' });
  // Its answer lost: the retry finds no plant (404), which the first attempt deleted.
  const lost = await standIn(t, { target: url, steps: ['forward-then-cut'] });
  await new PlantStore({ baseUrl: lost.url, token: secret }).delete(1);
  assert.deepEqual(responses('DELETE'), [204, 404]);
  // A 503 from the store may come after the store wrote: the same.
  const storeDown = await standIn(t, { target: url, steps: [answer(ERRORS.storeUnavailable, '0')] });
  await new PlantStore({ baseUrl: storeDown.url, token: secret }).delete(1);
  // Refused before it was handled (429, 503 50301, 50303): the 404 is the plant's absence, and is thrown.
  for (const refusal of [answer(ERRORS.rateLimited, '0'), answer(ERRORS.notServing, '0'), answer(ERRORS.tooManyConnections, '0')]) {
    const proxy = await standIn(t, { target: url, steps: [refusal] });
    await apiError(new PlantStore({ baseUrl: proxy.url, token: secret }).delete(1), { status: 404, error: ERRORS.plantNotFound.code });
    assert.equal(proxy.seen.length, 2);
  }
  // A refused connection carried no request: the same. (The first attempt goes to a port nothing listens on.)
  const dead = await nothingListening();
  let calls = 0;
  const refusedFirst = client(secret, { fetch: (input, init) => (calls++ === 0 ? fetch(dead, init) : fetch(input, init)) });
  await apiError(refusedFirst.delete(1), { status: 404, error: ERRORS.plantNotFound.code });
  assert.equal(calls, 2);
  await apiError(alice.delete(1), { status: 404, error: ERRORS.plantNotFound.code });
});

test('an abort ends the wait for a retry: the call rejects with the signal\'s reason and sends nothing more', async (t) => {
  const proxy = await standIn(t, { then: answer(ERRORS.storeUnavailable, '20') });
  const client = new PlantStore({ baseUrl: proxy.url, token: 'pst_x' });
  const controller = new AbortController();
  const pending = client.create({ id: 1, name: 'x' }, { signal: controller.signal });
  await until(() => proxy.seen.length === 1, 'the first attempt');
  controller.abort();
  await assert.rejects(pending, { name: 'AbortError' });
  await assert.rejects(client.create({ id: 1, name: 'x' }, { signal: AbortSignal.abort() }), { name: 'AbortError' });
  assert.equal(proxy.seen.length, 1);
});
