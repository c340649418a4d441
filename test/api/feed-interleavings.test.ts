import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { compareFeed, parseFeedId } from '../../src/domain/feed.js';
import type { NewPlant } from '../../src/domain/plant.js';
import { webhookBody } from '../../src/domain/webhook.js';
import { bearer, create } from '../helpers/app.js';
import { served } from '../helpers/client.js';
import { subscribe, type EventStream, type ServerSentEvent } from '../helpers/sse.js';

/**
 * The feed's promise to a client that drops and resumes, checked over random interleavings: whatever the
 * moments it reconnects (with Last-Event-ID, with since, with both) among creates, replays, conflicts and
 * deletes of its user's plants and another user's, what its streams carried, end to end, is exactly its
 * user's committed events, in commit order: none missed, none twice, none of the other user's. The
 * writes go through app.inject, the stream through a real socket (the app listens on a loopback port).
 */

/** Runs, each a fresh pair of users on one app; few and small, to keep the suite quick. */
const RUNS = 30;
const IDS = 4;

/**
 * Writes go one after another; `wait: false` leaves one in flight while the next steps that are not
 * writes (a reconnect, a settle) go on, so that a reconnect may race its commit.
 */
type Op =
  | { readonly kind: 'create'; readonly mine: boolean; readonly id: number; readonly name: string; readonly tag: boolean; readonly wait: boolean }
  | { readonly kind: 'delete'; readonly mine: boolean; readonly id: number; readonly wait: boolean }
  /** The client drops its stream and resumes from the last id it received. */
  | { readonly kind: 'reconnect'; readonly with: 'header' | 'since' | 'both' }
  /** The client reads until it has every event so far, so that a reconnect may come after as well as amid them. */
  | { readonly kind: 'settle' };

const id = fc.integer({ min: 1, max: IDS });
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('create' as const), mine: fc.boolean(), id, name: fc.constantFrom('fern', 'moss'), tag: fc.boolean(), wait: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), mine: fc.boolean(), id, wait: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('reconnect' as const), with: fc.constantFrom('header' as const, 'since' as const, 'both' as const) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'settle' as const }) },
);

const what = (e: ServerSentEvent) => `${e.type} ${e.data}`;

test('a client reconnecting at random moments receives exactly its user\'s committed events, in order, once each', async (t) => {
  const { app, url, token } = await served(t);
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 24 }), async (ops) => {
      run++;
      const users = { mine: `user${run}`, other: `other${run}` };
      const tokens = { mine: await token(users.mine), other: await token(users.other) };
      /** What each user holds now, by id, as the server should. */
      const held = { mine: new Map<number, NewPlant>(), other: new Map<number, NewPlant>() };
      /** The user's committed events, as the feed must carry them. */
      const expected: string[] = [];
      /** What the streams closed so far carried, end to end (plant events only). */
      const carried: ServerSentEvent[] = [];

      let { feed, ready } = await subscribe(t, url, { token: tokens.mine });
      const firstReady = ready;
      /** The plant events `feed` brought (its ready first is checked when it opens). */
      const plantEvents = (reader: EventStream) => reader.events.slice(1);
      const untilCount = (n: number) => feed.takeUntil(() => carried.length + plantEvents(feed).length >= n);

      /** The write in flight, if any; its failure is the run's, when it is awaited. */
      let writing: Promise<void> = Promise.resolve();
      const write = async (o: Extract<Op, { kind: 'create' | 'delete' }>): Promise<void> => {
        const who = o.mine ? 'mine' : 'other';
        const plants = held[who];
        const before = plants.get(o.id);
        if (o.kind === 'create') {
          // Names by user, so that another user's plant is told apart at once in a failure.
          const plant: NewPlant = { id: BigInt(o.id), name: `${o.name} of ${who}`, ...(o.tag ? { tag: 't' } : {}) };
          const res = await create(app, tokens[who], { id: o.id, name: plant.name, ...(o.tag ? { tag: 't' } : {}) });
          if (before === undefined) {
            assert.equal(res.statusCode, 200, res.body);
            plants.set(o.id, plant);
            if (who === 'mine') expected.push(`plant.created ${webhookBody(plant)}`);
          } else {
            // A replay of the same plant (no event), or a conflict.
            assert.equal(res.statusCode, webhookBody(before) === webhookBody(plant) ? 200 : 409, res.body);
          }
        } else {
          const res = await app.inject({ method: 'DELETE', url: `/plants/${o.id}`, headers: bearer(tokens[who]) });
          assert.equal(res.statusCode, before === undefined ? 404 : 204, res.body);
          if (before !== undefined) {
            plants.delete(o.id);
            if (who === 'mine') expected.push(`plant.deleted ${webhookBody(before)}`);
          }
        }
      };

      for (const o of ops) {
        if (o.kind === 'create' || o.kind === 'delete') {
          await writing;
          writing = write(o);
          writing.catch(() => undefined); // awaited later: the next write's turn, a settle, the end
          if (o.wait) await writing;
        } else if (o.kind === 'settle') {
          await writing;
          if (carried.length + plantEvents(feed).length < expected.length) await untilCount(expected.length);
        } else {
          // What has arrived, and the id it ends with, taken together: the client resumes from it.
          carried.push(...plantEvents(feed));
          const last = feed.lastEventId;
          feed.close();
          const from = o.with === 'header' ? { lastEventId: last } : o.with === 'since' ? { since: last } : { lastEventId: last, since: firstReady };
          ({ feed, ready } = await subscribe(t, url, { token: tokens.mine, ...from }));
          assert.equal(ready, last, 'ready names where the stream continues');
        }
      }
      await writing;

      // A last create: once it has come, everything before it has too, and anything twice would show.
      const end: NewPlant = { id: 1000n, name: 'end' };
      assert.equal((await create(app, tokens.mine, { id: 1000, name: 'end' })).statusCode, 200);
      expected.push(`plant.created ${webhookBody(end)}`);
      await feed.takeUntil((e) => e.type === 'plant.created' && e.data === webhookBody(end));
      carried.push(...plantEvents(feed));
      feed.close();

      assert.deepEqual(carried.map(what), expected, `the streams of ${ops.length} steps, end to end`);
      for (let i = 1; i < carried.length; i++) {
        assert.ok(compareFeed(parseFeedId(carried[i - 1]!.lastEventId)!, parseFeedId(carried[i]!.lastEventId)!) < 0, 'ids in the log\'s order');
      }
    }),
    { numRuns: RUNS },
  );
});
