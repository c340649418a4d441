import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import type { FeedEvent, PlantStore } from '@plantstore/client';
import { apiError, MAX, MIN, served } from '../helpers/client.js';
import { issueToken } from '../helpers/tokens.js';
import { BACKEND } from '../helpers/app.js';
import { eventually } from '../helpers/eventually.js';
import { compareFeed, parseFeedId } from '../../src/domain/feed.js';

/**
 * watchPlants following a real server's GET /plants/events: order, whose plants, resuming, refusals,
 * a stream the server drops. test/api/client-feed-reconnect.test.ts has the answers a real server gives
 * only now and then, from a stand-in.
 */

/** A feed a test follows: next() waits for its next event; aborted when the test ends. */
function follow(t: TestContext, client: PlantStore, since?: string) {
  const controller = new AbortController();
  const feed = client.watchPlants({ since, signal: controller.signal });
  t.after(() => controller.abort());
  const next = async (): Promise<FeedEvent> => {
    const result = await feed.next();
    assert.equal(result.done, false, 'the feed ended');
    return result.value as FeedEvent;
  };
  const take = async (n: number): Promise<FeedEvent[]> => {
    const events: FeedEvent[] = [];
    while (events.length < n) events.push(await next());
    return events;
  };
  return { feed, controller, next, take };
}

/** The events without their ids, which are opaque: what happened, and to which plant. */
const what = (events: FeedEvent[]) => events.map((e) => (e.type === 'ready' ? 'ready' : `${e.type} ${e.plant.id} ${e.plant.name}${e.plant.tag === undefined ? '' : ` ${e.plant.tag}`}`));

const EVENT_ID = /^[0-9]{1,20}(-[0-9]{1,20})?$/;

test('ready first, then every create and delete of the caller\'s plants, in order, with the exact int64 ids', async (t) => {
  const { client, token } = await served(t);
  const alice = client(await token('alice'));
  const feed = follow(t, alice);
  const ready = await feed.next();
  assert.equal(ready.type, 'ready');
  assert.match(ready.id, EVENT_ID);
  await alice.create({ id: MAX, name: 'Max', tag: 'edge' });
  await alice.create({ id: MIN, name: 'Min' });
  await alice.create({ id: '9007199254740993', name: 'past 2^53' });
  await alice.delete(MAX);
  const events = await feed.take(4);
  assert.deepEqual(what(events), [
    `plant.created ${MAX} Max edge`, `plant.created ${MIN} Min`, 'plant.created 9007199254740993 past 2^53', `plant.deleted ${MAX} Max edge`,
  ]);
  const ids = events.map((e) => e.id);
  assert.ok(ids.every((id) => EVENT_ID.test(id)), ids.join());
  assert.equal(new Set([ready.id, ...ids]).size, 5, 'every event has an id of its own');
});

test('another user\'s plants never appear; an admin token sees every user\'s', async (t) => {
  const { client, token } = await served(t);
  const alice = client(await token('alice'));
  const bob = client(await token('bob'));
  const mine = follow(t, alice);
  const everyone = follow(t, client(await token('root', { admin: true })));
  await mine.next();
  await everyone.next();
  await bob.create({ id: 1, name: 'bob\'s' });
  await alice.create({ id: 1, name: 'alice\'s' });
  await bob.delete(1);
  await alice.delete(1);
  // Bob's events come before each of alice's: had they been sent to her, they would be here.
  assert.deepEqual(what(await mine.take(2)), ['plant.created 1 alice\'s', 'plant.deleted 1 alice\'s']);
  assert.deepEqual(what(await everyone.take(4)), ['plant.created 1 bob\'s', 'plant.created 1 alice\'s', 'plant.deleted 1 bob\'s', 'plant.deleted 1 alice\'s']);
});

test('list, then follow: the ready id taken before listing misses nothing created after it', async (t) => {
  const { client, token } = await served(t);
  const alice = client(await token('alice'));
  await alice.create({ id: 1, name: 'before' });
  const feed = follow(t, alice);
  assert.equal((await feed.next()).type, 'ready');
  await alice.create({ id: 2, name: 'between' }); // after ready, before the list: listed and sent
  const listed = [];
  for await (const plant of alice.list()) listed.push(plant.name);
  await alice.create({ id: 3, name: 'after' });
  assert.deepEqual(listed, ['before', 'between']);
  // On PostgreSQL a stream opened from now may begin with a plant created just before it, when another
  // transaction on the server (any test's) was still open as it opened (docs/feed.md, How it works).
  let got = what(await feed.take(2));
  if (BACKEND === 'postgres' && got[0] === 'plant.created 1 before') got = [...got.slice(1), ...what(await feed.take(1))];
  assert.deepEqual(got, ['plant.created 2 between', 'plant.created 3 after']);
});

test('a watch stopped and resumed with since the last id taken goes on after it: no gap, no repeat', async (t) => {
  const { client, token } = await served(t);
  const alice = client(await token('alice'));
  const first = follow(t, alice);
  await first.next();
  for (let id = 1; id <= 3; id++) await alice.create({ id, name: `p${id}` });
  const [one] = await first.take(1);
  first.controller.abort();
  assert.deepEqual(await first.feed.next(), { done: true, value: undefined }, 'an abort ends the iteration, without an error');
  await alice.create({ id: 4, name: 'p4' });
  const resumed = follow(t, alice, one!.id);
  assert.deepEqual(await resumed.next(), { type: 'ready', id: one!.id });
  assert.deepEqual(what(await resumed.take(3)), ['plant.created 2 p2', 'plant.created 3 p3', 'plant.created 4 p4']);
});

test('leaving a for await loop closes the stream', async (t) => {
  const { client, token } = await served(t);
  const signals: AbortSignal[] = [];
  const alice = client(await token('alice'), {
    fetch: (input, init) => {
      if (init?.signal) signals.push(init.signal);
      return fetch(input, init);
    },
  });
  for await (const event of alice.watchPlants()) {
    assert.equal(event.type, 'ready');
    assert.equal(signals[0]?.aborted, false, 'the stream is open');
    break;
  }
  assert.equal(signals.length, 1);
  assert.equal(signals[0]!.aborted, true, 'its fetch was aborted');
});

test('refusals are PlantStoreErrors: 400 for an id that is no event id, 401, 403 without plants:read', async (t) => {
  const { client, token } = await served(t);
  await apiError(client(await token('alice')).watchPlants({ since: 'not-an-id' }).next(), { status: 400, error: 40009 });
  await apiError(client('pst_unknown').watchPlants().next(), { status: 401, error: 40101 });
  await apiError(client(await token('alice', { scopes: ['plants:write'] })).watchPlants().next(), { status: 403, error: 40300 });
});

test('410 for an id the feed no longer keeps, or never had; 429 past the streams one token may open', async (t) => {
  const { client, token, store } = await served(t, { feedMaxStreamsPerToken: 1 });
  const alice = client(await token('alice'));
  const feed = follow(t, alice);
  await feed.next();
  await alice.create({ id: 1, name: 'p1' });
  const [one] = await feed.take(1);
  await apiError(alice.watchPlants().next(), { status: 429, error: 42902 });
  await follow(t, client(await token('alice'))).next(); // another token of the same user has its own share
  await alice.create({ id: 2, name: 'p2' }); // after `one`: what a resume from it would need
  // On PostgreSQL p2 is final only once every older transaction on the server has ended: the sweep's
  // mark must be past `one` for the cut to be.
  const after = parseFeedId(one!.id)!;
  await eventually(async () => (compareFeed((await store.feed.feedBounds()).head, after) > 0 ? true : undefined), 'p2 final');
  // The retention's sweep: the first marks where the log ends now, the second removes what is before it.
  await store.feed.sweepFeed(new Date());
  await store.feed.sweepFeed(new Date(Date.now() + 60_000));
  const again = client(await token('alice')); // a token with no stream open: its refusals are the ids'
  await apiError(again.watchPlants({ since: one!.id }).next(), { status: 410, error: 41000 });
  await apiError(again.watchPlants({ since: '99999999' }).next(), { status: 410, error: 41000 });
});

test('a revoked token ends the stream, and the reconnect\'s 401 is thrown', async (t) => {
  const { client, store } = await served(t);
  const { secret, record } = await issueToken(store, { user: 'alice' });
  const feed = follow(t, client(secret));
  await feed.next();
  assert.equal(await store.tokens.revokeToken(record.id), true);
  await apiError(feed.feed.next(), { status: 401, error: 40101 });
});

test('a stream the server drops is reconnected from the last event id, and goes on without gap or repeat', async (t) => {
  const { app, client, token, events } = await served(t);
  const resumedFrom = () => events.filter((e) => e.phase === 'request' && e.url.startsWith('/plants/events')).map((e) => new URL(e.url, 'http://x').searchParams.get('since'));
  const alice = client(await token('alice'));
  const feed = follow(t, alice);
  await feed.next();
  await alice.create({ id: 1, name: 'p1' });
  const [one] = await feed.take(1);
  app.server.closeAllConnections(); // as a proxy restarting, or a network fault, would
  await alice.create({ id: 2, name: 'p2' }); // while the feed is away
  const [two] = await feed.take(1);
  await alice.create({ id: 3, name: 'p3' });
  assert.deepEqual(what([two!, ...(await feed.take(1))]), ['plant.created 2 p2', 'plant.created 3 p3']);
  assert.deepEqual(resumedFrom(), [null, one!.id]);
});
