import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { mock, test, type TestContext } from 'node:test';
import { pino } from 'pino';
import type { ClaimedDelivery, ClaimRequest } from '../../src/domain/webhook.js';
import type { Store } from '../../src/store/store.js';
import { Attempts, type AttemptEvents } from '../../src/webhooks/attempts.js';
import { Claims, type Holder } from '../../src/webhooks/claims.js';
import { TransitionError } from '../../src/webhooks/machine.js';
import { outcomeOf } from '../../src/webhooks/outcome.js';
import { Recorder } from '../../src/webhooks/recorder.js';
import { Sender } from '../../src/webhooks/sender.js';
import { StoreHealth } from '../../src/webhooks/store-health.js';
import { silentLogger, testStore } from '../helpers/app.js';
import { add, register } from '../helpers/webhook-dispatch.js';
import { receiver } from '../helpers/webhook-receiver.js';

// The dispatcher's parts (src/webhooks/claims.ts, attempts.ts, recorder.ts) driven one at a time against a
// real store, through each state their tables name; every transition is listed in test/unit/webhook-states.

const INSTANCE = 'dsp_states';
const LEASE_MS = 60_000;

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** One event of a new endpoint at `url`, claimed by INSTANCE. */
async function claimedEvent(store: Store, url: string): Promise<ClaimedDelivery> {
  const { endpoint } = await register(store, url);
  await add(store, 'alice', { id: 1n, name: 'fern' });
  const [delivery] = await store.outbox.claimDeliveries({ instance: INSTANCE, limit: 10, perEndpoint: 10, busy: [], leaseMs: LEASE_MS });
  assert.ok(delivery);
  assert.equal(delivery.endpointId, endpoint.id);
  return delivery;
}

function sender(t: TestContext): Sender {
  const s = new Sender({ timeoutMs: 10_000, allowPrivate: true, userAgent: 'plantstore/test', connectionsPerOrigin: 4 });
  t.after(() => s.close().catch(() => undefined));
  return s;
}

const quiet: AttemptEvents = { finished: () => undefined, expired: () => undefined, freed: () => undefined };

function attemptsOf(t: TestContext, store: Store, events: AttemptEvents = quiet, log = silentLogger): Attempts {
  return new Attempts(store.outbox, sender(t), {
    instance: INSTANCE, leaseMs: LEASE_MS, concurrency: 4, endpointConcurrency: 4, retryScheduleMs: [60_000],
  }, events, log);
}

test('claims: a wake-up claims at once, news during a claim makes another follow it, spaced out, and a stop is final', async (t) => {
  const { store } = await testStore(t);
  // Date only, frozen at the real time: the store and the spacing timer run as usual, and the spacing's
  // wait is known (the claim's own duration does not count against it).
  mock.timers.enable({ apis: ['Date'], now: Date.now() });
  t.after(() => mock.timers.reset());
  const attempts = attemptsOf(t, store);
  let gate = deferred();
  const calls: { state: string; request: ClaimRequest }[] = [];
  let called = deferred();
  let claims: Claims | undefined;
  const outbox = {
    claimDeliveries: async (request: ClaimRequest) => {
      calls.push({ state: claims!.state, request });
      called.resolve();
      await gate.promise;
      return store.outbox.claimDeliveries(request);
    },
  };
  let accepted = deferred();
  const holder: Holder = {
    get inFlight() { return attempts.inFlight; },
    get held() { return attempts.held; },
    busy: () => attempts.busy(),
    accept: (...args) => {
      const got = attempts.accept(...args);
      accepted.resolve();
      return got;
    },
    start: (ids) => attempts.start(ids),
  };
  claims = new Claims(outbox, { instance: INSTANCE, leaseMs: LEASE_MS, timeoutMs: 1000, concurrency: 4, endpointConcurrency: 4 }, holder, new StoreHealth(silentLogger));
  assert.equal(claims.state, 'idle');

  claims.wake();
  assert.equal(claims.state, 'claiming');
  await called.promise;
  claims.wake(false); // room freed by an attempt: the claim under way answers for it
  assert.equal(claims.state, 'claiming');
  claims.wake(); // news: may be events the claim did not see
  assert.equal(claims.state, 'claimingAgain');
  claims.wake();
  assert.equal(claims.state, 'claimingAgain');

  called = deferred();
  gate.resolve();
  await accepted.promise;
  // The claim ended, and the one the news asked for waits out the interval since the last.
  assert.equal(claims.state, 'spacing');
  claims.wake();
  assert.equal(claims.state, 'spacing');
  assert.equal(calls.length, 1);

  accepted = deferred();
  gate = deferred();
  mock.timers.tick(10); // CLAIM_INTERVAL_MS: the spacing timer's claim finds it has passed
  await called.promise;
  assert.equal(calls.length, 2);
  assert.deepEqual(calls.map((c) => c.state), ['claiming', 'claiming']);
  gate.resolve();
  await accepted.promise;
  assert.equal(claims.state, 'idle');
  assert.equal(claims.backlog, false);

  // A wake-up now plans a claim (the last was just made); a stop cancels it.
  claims.wake();
  assert.equal(claims.state, 'spacing');
  await claims.stop();
  assert.equal(claims.state, 'stopped');
  claims.wake();
  assert.equal(claims.state, 'stopped');
  assert.throws(() => claims.stop(), TransitionError);
  assert.equal(calls.length, 2);
});

test('attempts: a stop drains what is in flight, aborts it at the deadline, releases what waited, then closes, in that order only', async (t) => {
  const { store } = await testStore(t);
  const rx = await receiver(t, () => 'hang');
  const delivery = await claimedEvent(store, rx.url);
  const logged: { msg: string; state: string }[] = [];
  let attempts: Attempts | undefined;
  const log = pino({ level: 'info' }, new Writable({
    write(chunk: Buffer, _encoding, done) {
      logged.push({ msg: (JSON.parse(chunk.toString()) as { msg: string }).msg, state: attempts!.state });
      done();
    },
  }));
  const finished: unknown[] = [];
  let freed = 0;
  attempts = attemptsOf(t, store, { finished: (f) => finished.push(f), expired: () => undefined, freed: () => void freed++ }, log);
  assert.equal(attempts.state, 'running');
  await assert.rejects(attempts.release(), TransitionError);
  await assert.rejects(attempts.close(), TransitionError);

  attempts.start(attempts.accept([delivery], Date.now() + LEASE_MS, [], 32));
  assert.equal(attempts.inFlight, 1);
  assert.equal(attempts.held, 1);
  await rx.waitFor(1);

  attempts.stopStarting();
  assert.equal(attempts.state, 'draining');
  assert.throws(() => attempts.stopStarting(), TransitionError);
  await assert.rejects(attempts.release(), TransitionError);
  const deadline = deferred();
  const drained = attempts.drain(deadline.promise);
  assert.equal(attempts.state, 'draining');
  deadline.resolve();
  await drained;
  assert.equal(attempts.state, 'drained');
  assert.deepEqual(logged, [{ msg: 'webhook attempts still in flight at the drain deadline; aborting them for retry', state: 'aborting' }]);
  // Aborted for the shutdown: not a result to record, and held until it is released.
  assert.deepEqual(finished, []);
  assert.equal(freed, 1);
  assert.equal(attempts.inFlight, 0);
  assert.equal(attempts.held, 1);

  await assert.rejects(attempts.close(), TransitionError);
  await attempts.release();
  assert.equal(attempts.state, 'released');
  assert.equal(attempts.held, 0);
  // Released: due again at once, for any instance.
  const again = await store.outbox.claimDeliveries({ instance: 'dsp_other', limit: 10, perEndpoint: 10, busy: [], leaseMs: LEASE_MS });
  assert.deepEqual(again.map((d) => d.eventId), [delivery.eventId]);
  await attempts.close();
  assert.equal(attempts.state, 'closed');
  await assert.rejects(attempts.close(), TransitionError);
});

test('attempts: with nothing in flight, a drain goes straight to drained without aborting', async (t) => {
  const { store } = await testStore(t);
  const attempts = attemptsOf(t, store);
  attempts.stopStarting();
  await attempts.drain(new Promise(() => undefined));
  assert.equal(attempts.state, 'drained');
});

test('recorder: results wait for a delay or a full batch, one recording at a time, and nothing is collected once closed', async (t) => {
  const { store } = await testStore(t);
  const delivery = await claimedEvent(store, 'http://127.0.0.1:9/hook');
  const due = deferred<number>();
  let released = deferred();
  const recorder = new Recorder(store.outbox, INSTANCE, new StoreHealth(silentLogger), {
    due: (at) => due.resolve(at),
    released: () => released.resolve(),
  });
  assert.equal(recorder.state, 'idle');
  assert.equal(recorder.writeState, 'ready');

  // One result: recorded after the delay; its retry's due time is passed on once it is recorded.
  const result = outcomeOf(delivery, { status: 500, error: 'HTTP 500' }, new Date(), [60_000], Date.now());
  assert.equal(result.result.outcome, 'retry');
  recorder.add(result);
  assert.equal(recorder.state, 'delayed');
  const at = await due.promise;
  assert.ok(at >= result.retryAt! - 1, 'the retry is due no earlier than its schedule');
  assert.equal(recorder.state, 'idle');
  // Told from within the recording; a flush waits for it to end, then has nothing to record.
  await recorder.flush();
  assert.equal(recorder.writeState, 'ready');
  const list = await store.webhooks.listDeliveryAttempts(delivery.endpointId, null, 10);
  assert.deepEqual(list?.map((a) => [a.attempt, a.status, a.state]), [[1, 500, 'pending']]);

  // A full batch is recorded on the next turn, without waiting out the delay.
  for (let i = 0; i < 255; i++) recorder.release(delivery);
  assert.equal(recorder.state, 'delayed');
  recorder.release(delivery);
  assert.equal(recorder.state, 'immediate');
  recorder.release(delivery);
  assert.equal(recorder.state, 'immediate');
  await released.promise;
  assert.equal(recorder.state, 'idle');
  await recorder.flush();
  assert.equal(recorder.writeState, 'ready');

  // A recording under way: the next waits for it.
  released = deferred();
  recorder.release(delivery);
  assert.equal(recorder.state, 'delayed');
  const first = recorder.flush();
  assert.equal(recorder.writeState, 'writing');
  recorder.release(delivery);
  const second = recorder.flush();
  assert.equal(recorder.writeState, 'writing');
  await first;
  await second;
  assert.equal(recorder.writeState, 'ready');

  await recorder.close();
  assert.equal(recorder.state, 'closed');
  assert.throws(() => recorder.add(result), TransitionError);
  assert.throws(() => recorder.release(delivery), TransitionError);
  await assert.rejects(recorder.close(), TransitionError);
});
