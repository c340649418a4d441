import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from '../config/load.js';
import type { AttemptResult, ClaimedDelivery } from '../domain/webhook.js';
import type { Store } from '../store/store.js';
import { DueTimer } from './due-timer.js';
import { outcomeOf, toRecord, type Finished } from './outcome.js';
import { Sender } from './sender.js';
import { Slots } from './slots.js';

/** The configuration rows the dispatcher runs on. */
export type DispatcherSettings = Pick<
  Config,
  | 'webhookTimeoutMs' | 'webhookRetryScheduleMs' | 'webhookRetentionMs' | 'webhookConcurrency'
  | 'webhookEndpointConcurrency' | 'webhookAllowPrivate'
> & {
  /** `plantstore/<version>`. */
  readonly userAgent: string;
  /** Metrics: told how each attempt ended (src/metrics/). */
  readonly observer?: DeliveryObserver | undefined;
};

/** Told by the dispatcher how each delivery attempt ended (the metrics count them). */
export interface DeliveryObserver {
  attempted(outcome: AttemptResult['outcome']): void;
}

/** A claim outlives the attempt by this much beyond twice its timeout (a queued wait plus the attempt). */
const LEASE_MARGIN_MS = 30_000;
/**
 * A claim takes up to this many rounds of an endpoint's in-flight cap at once: every claim is a write
 * transaction, and one endpoint with a backlog would otherwise cost one per WEBHOOK_ENDPOINT_CONCURRENCY
 * events. The extra events wait locally for a slot (and are given back if their lease runs short).
 */
const CLAIM_ROUNDS = 8;
/** Events held locally (in flight and waiting) stay within this multiple of WEBHOOK_CONCURRENCY. */
const HELD_FACTOR = CLAIM_ROUNDS;
/**
 * Claims are at least this far apart. Under a stream of creates every commit announces new events; one
 * claim every few milliseconds takes them all at once, instead of one commit per announcement.
 */
const CLAIM_INTERVAL_MS = 10;
/** Attempt results wait at most this long to be recorded together... */
const RECORD_DELAY_MS = 20;
/** ...or until this many are ready. */
const RECORD_BATCH = 256;
/** An event that waited so long that its attempt might outlast its lease is released, not started. */
const START_MARGIN_MS = 5000;

/** The reason the dispatcher aborts attempts at the shutdown deadline (the sender's own timeout has another). */
const SHUTDOWN = Symbol('shutdown');

/** Events of one endpoint held by this instance: in flight, and claimed but waiting for a free slot. */
interface EndpointState {
  readonly id: string;
  /** The endpoint's user: its slots count towards that user's share (slots.ts). */
  readonly user: string;
  active: number;
  /** The store may have more of its events due: it was left out of a claim, or a claim took its maximum. */
  more: boolean;
  readonly waiting: Waiting[];
}

interface Waiting {
  readonly delivery: ClaimedDelivery;
  /** Past this (epoch ms), an attempt started now might outlast the claim: the event is released instead. */
  readonly startBy: number;
}

/**
 * Delivers the events the store queues (the transactional outbox): claims due events under a lease,
 * sends one attempt each (sender.ts), and records how each ended, in batches. Made, woken and stopped by
 * its service (service.ts), which owns the poll, the sweep's timer and the store's wake-up.
 *
 * - Bounded and fair: at most WEBHOOK_CONCURRENCY attempts in flight in all, at most
 *   WEBHOOK_ENDPOINT_CONCURRENCY per endpoint, and no endpoint or user holding more than are left free
 *   (slots.ts). Claims take due events in turns across users and endpoints (the store's order). Claimed
 *   events beyond an endpoint's room wait locally; an endpoint with a full round waiting is left out of
 *   claims (`busy`) and its waiting events do not shrink the claims of others, so a dead or slow receiver
 *   ties up its own share and its own queue only, and never delays the others.
 * - Prompt: the service wakes the dispatcher after a commit that queued events; a timer wakes it when a
 *   retry it scheduled comes due (due-timer.ts); the service's poll finds the rest (expired claims of a
 *   dead instance, other instances' events when no notice of them came). One claim at a time; when a
 *   claim came back full there may be more, so another follows as slots free up.
 * - At least once: an event is recorded only after its attempt. If recording fails (the store is down), the
 *   claims expire and the events are attempted again; on shutdown, whatever was claimed and not attempted
 *   is released.
 * - Nothing on the request path waits for any of this.
 */
export class Dispatcher {
  /** This instance's id: its claims are the ones it may record or release. */
  readonly instance = `dsp_${randomBytes(9).toString('base64url')}`;
  readonly #store: Store;
  readonly #settings: DispatcherSettings;
  readonly #log: Logger;
  readonly #sender: Sender;
  readonly #leaseMs: number;
  readonly #slots: Slots;
  readonly #due = new DueTimer(() => this.#wake());

  readonly #endpoints = new Map<string, EndpointState>();
  /** Endpoints with events waiting while the slots, or their share of them, were taken: in the order they got stuck. */
  readonly #starved = new Set<EndpointState>();
  /** Events whose lease ran short while they waited: released in the next flush. */
  #expiring: ClaimedDelivery[] = [];
  /** Events claimed and not yet attempted, recorded or released. */
  readonly #held = new Set<ClaimedDelivery>();
  /** Endpoints deleted through this app's API, with when: their events are dropped, not sent. */
  readonly #deleted = new Map<string, number>();
  /** Abort handles of the attempts in flight (for the shutdown deadline). */
  readonly #inFlight = new Set<AbortController>();
  #claiming = false;
  /** Settles when the claim under way has been handled. */
  #claimDone: Promise<void> | null = null;
  /** When the last claim was sent (epoch ms), and the timer that spaces claims out. */
  #lastClaim = 0;
  #claimTimer: NodeJS.Timeout | undefined;
  #claimAgain = false;
  /** The last claim came back full: more may be due, so claim again as slots free up. */
  #backlog = false;

  #results: Finished[] = [];
  #flushTimer: NodeJS.Timeout | undefined;
  #flushNow = false;
  #recording: Promise<void> | null = null;

  #stopping: Promise<void> | null = null;
  /** Set when the store failed (claim, record, sweep): one warning per outage, not one per attempt. */
  #storeFailing = false;
  /** Resolves when nothing is in flight (during stop). */
  #idle: (() => void) | null = null;

  constructor(store: Store, settings: DispatcherSettings, logger: Logger) {
    this.#store = store;
    this.#settings = settings;
    this.#log = logger.child({ component: 'webhooks' });
    this.#leaseMs = 2 * settings.webhookTimeoutMs + LEASE_MARGIN_MS;
    this.#slots = new Slots(settings.webhookConcurrency, settings.webhookEndpointConcurrency);
    this.#sender = new Sender({
      timeoutMs: settings.webhookTimeoutMs,
      allowPrivate: settings.webhookAllowPrivate,
      userAgent: settings.userAgent,
      connectionsPerOrigin: settings.webhookEndpointConcurrency,
    });
  }

  /**
   * Stops claiming at once; lets attempts in flight finish until `deadline` (epoch ms), then aborts the
   * rest; releases every event claimed and not attempted (they are due again at once, for this or another
   * instance); records the results. Calling it again returns the same promise.
   */
  stop(deadline: number): Promise<void> {
    this.#stopping ??= this.#stop(deadline);
    return this.#stopping;
  }

  async #stop(deadline: number): Promise<void> {
    clearTimeout(this.#claimTimer);
    this.#due.stop();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - Date.now()))));
    // Events waiting for a slot are not started now; a claim under way adds its events to them. (One that
    // answers after the deadline, from a store that hangs, leaves its events to their lease.)
    if (this.#claimDone) await Promise.race([this.#claimDone, late]);
    if (this.#inFlight.size > 0) {
      const idle = new Promise<void>((resolve) => (this.#idle = resolve));
      await Promise.race([idle, late]);
      clearTimeout(timer);
      if (this.#inFlight.size > 0) {
        this.#log.warn({ inFlight: this.#inFlight.size }, 'webhook attempts still in flight at the drain deadline; aborting them for retry');
        for (const controller of this.#inFlight) controller.abort(SHUTDOWN);
        await idle;
      }
    }
    clearTimeout(timer);
    const unattempted = [...this.#held];
    this.#held.clear();
    if (unattempted.length > 0) {
      await this.#store.outbox.releaseDeliveries(this.instance, unattempted).catch((err: unknown) => {
        // Their claims expire instead; the events are attempted again then.
        this.#log.warn({ err, events: unattempted.length }, 'could not release webhook claims; they will be retried when their lease ends');
      });
    }
    clearTimeout(this.#flushTimer);
    await this.#flush();
    await this.#sender.close().catch(() => undefined);
  }

  /** Looks for due events now (a commit queued some, or the poll): an idle dispatcher claims at once. */
  wake(): void {
    this.#wake();
  }

  /**
   * Claims now, or after the claim under way when `news` (events queued, the poll): those may be events
   * that claim did not see. Room freed by an attempt during a claim needs no second one: the claim's
   * answer says afresh which endpoints have more due (EndpointState.more), and the next attempt to end
   * wakes it then.
   */
  #wake(news = true): void {
    if (this.#stopping) return;
    if (this.#claiming) {
      if (news) this.#claimAgain = true;
      return;
    }
    if (this.#claimTimer) return;
    const wait = this.#lastClaim + CLAIM_INTERVAL_MS - Date.now();
    if (wait > 0) {
      this.#claimTimer = setTimeout(() => {
        this.#claimTimer = undefined;
        this.#wake();
      }, wait);
      return;
    }
    this.#claimDone = this.#claim();
  }

  /**
   * Endpoints this instance will not take more of now: a full round of their events waits already. With
   * how many events wait for them: those do not count against what a claim may take for the others.
   */
  #busy(): { ids: string[]; waiting: number } {
    const cap = this.#settings.webhookEndpointConcurrency;
    const ids: string[] = [];
    let waiting = 0;
    for (const [id, state] of this.#endpoints) {
      if (state.waiting.length < cap) continue;
      ids.push(id);
      waiting += state.waiting.length;
    }
    return { ids, waiting };
  }

  async #claim(): Promise<void> {
    this.#claiming = true;
    this.#claimAgain = false;
    try {
      const concurrency = this.#settings.webhookConcurrency;
      // Busy endpoints' waiting events are left out of the bound on what is held: were they counted, a few
      // stuck endpoints' queues would stop every claim, and with them every other endpoint's events.
      const { ids: busy, waiting } = this.#busy();
      const limit = Math.min(concurrency - this.#inFlight.size, HELD_FACTOR * concurrency - (this.#held.size - waiting));
      if (limit <= 0) {
        // Full: claim again as soon as an attempt ends.
        this.#backlog = true;
        return;
      }
      const perEndpoint = this.#settings.webhookEndpointConcurrency * CLAIM_ROUNDS;
      const claimedAt = Date.now();
      this.#lastClaim = claimedAt;
      const claimed = await this.#store.outbox.claimDeliveries({
        instance: this.instance, limit, perEndpoint, busy, leaseMs: this.#leaseMs,
      });
      this.#storeBack();
      const startBy = claimedAt + this.#leaseMs - this.#settings.webhookTimeoutMs - START_MARGIN_MS;
      const counts = new Map<string, number>();
      for (const delivery of claimed) {
        // Its endpoint was deleted while the claim was under way: the store removed the event with it.
        if (this.#deleted.has(delivery.endpointId)) continue;
        this.#held.add(delivery);
        counts.set(delivery.endpointId, (counts.get(delivery.endpointId) ?? 0) + 1);
        this.#endpoint(delivery).waiting.push({ delivery, startBy });
      }
      // Full in all, or for one endpoint, or endpoints left out as busy: the store may have more due, to
      // claim as soon as there is room for it (rather than at the next poll).
      this.#backlog = claimed.length >= limit;
      const left = new Set(busy);
      for (const [id, state] of this.#endpoints) state.more = left.has(id) || (counts.get(id) ?? 0) >= perEndpoint;
      if (this.#stopping) return;
      for (const id of counts.keys()) this.#pump(id);
    } catch (err) {
      this.#storeDown(err, 'claiming webhook deliveries failed');
    } finally {
      this.#claiming = false;
      // News that came during the claim: another, spaced out by CLAIM_INTERVAL_MS.
      if (this.#claimAgain) this.#wake();
    }
  }

  /** The endpoint was deleted: its events waiting here are dropped (nothing to release: the store removed them). */
  forget(endpointId: string): void {
    const now = Date.now();
    this.#deleted.set(endpointId, now);
    // Claims are short-lived: past a lease, no claim made before the deletion can still come back.
    for (const [id, at] of this.#deleted) if (now - at > this.#leaseMs) this.#deleted.delete(id);
    const state = this.#endpoints.get(endpointId);
    if (!state) return;
    for (const { delivery } of state.waiting) this.#held.delete(delivery);
    state.waiting.length = 0;
    this.#starved.delete(state);
    if (state.active === 0) this.#endpoints.delete(endpointId);
  }

  #endpoint({ endpointId: id, user }: ClaimedDelivery): EndpointState {
    let state = this.#endpoints.get(id);
    if (!state) {
      state = { id, user, active: 0, more: false, waiting: [] };
      this.#endpoints.set(id, state);
    }
    return state;
  }

  /**
   * Starts the endpoint's waiting events while it may take slots (slots.ts). When the instance's slots,
   * or its share of them, stopped it, the endpoint is noted and pumped again when one frees up (#attempt).
   */
  #pump(endpointId: string): void {
    const state = this.#endpoints.get(endpointId);
    if (!state) return;
    const now = Date.now();
    while (state.waiting.length > 0 && !this.#stopping) {
      const stop = this.#slots.check(state.active, state.user);
      if (stop === 'endpoint') break;
      if (stop === 'instance') {
        this.#starved.add(state);
        return;
      }
      const { delivery, startBy } = state.waiting.shift() as Waiting;
      if (now > startBy) {
        this.#expire(delivery);
        continue;
      }
      state.active++;
      this.#slots.take(state.user);
      void this.#attempt(delivery, state);
    }
    this.#starved.delete(state);
    if (state.active === 0 && state.waiting.length === 0) this.#endpoints.delete(endpointId);
  }

  /** Gives back an event that waited too long for a slot: another attempt must not overlap a new claim. */
  #expire(delivery: ClaimedDelivery): void {
    this.#held.delete(delivery);
    this.#expiring.push(delivery);
    this.#scheduleFlush();
  }

  async #attempt(delivery: ClaimedDelivery, state: EndpointState): Promise<void> {
    const controller = new AbortController();
    this.#inFlight.add(controller);
    const at = new Date();
    const result = await this.#sender.send(delivery, controller);
    this.#inFlight.delete(controller);
    state.active--;
    this.#slots.give(state.user);
    // Aborted by the shutdown deadline: released (attempt count as before), not counted as a failure.
    if (controller.signal.reason !== SHUTDOWN || result.status !== null) {
      this.#held.delete(delivery);
      const finished = outcomeOf(delivery, result, at, this.#settings.webhookRetryScheduleMs, Date.now());
      this.#results.push(finished);
      this.#settings.observer?.attempted(finished.result.outcome);
      this.#scheduleFlush();
    }
    if (this.#inFlight.size === 0 && this.#idle) this.#idle();
    // A slot freed: endpoints that waited for one go first, longest waiting first; then this one.
    for (const starved of this.#starved) {
      if (this.#slots.full) break;
      this.#pump(starved.id);
    }
    this.#pump(delivery.endpointId);
    if (this.#backlog || this.#roomFor(state)) this.#wake(false);
  }

  /** The endpoint has more due in the store and room to queue it: a claim would get some. */
  #roomFor(state: EndpointState): boolean {
    return state.more && state.waiting.length < this.#settings.webhookEndpointConcurrency;
  }

  /**
   * Results are recorded together, those of up to RECORD_DELAY_MS in one transaction (at once when a
   * full batch is ready): each recording is a commit, and on SQLite a synchronous one, during which no
   * attempt progresses. A wait this short changes nothing for anyone reading the attempts.
   */
  #scheduleFlush(): void {
    if (this.#results.length + this.#expiring.length >= RECORD_BATCH) {
      clearTimeout(this.#flushTimer);
      this.#flushTimer = undefined;
      if (!this.#flushNow) {
        this.#flushNow = true;
        setImmediate(() => {
          this.#flushNow = false;
          void this.#flush();
        });
      }
      return;
    }
    this.#flushTimer ??= setTimeout(() => {
      this.#flushTimer = undefined;
      void this.#flush();
    }, RECORD_DELAY_MS);
  }

  /** Records every collected result (and releases expiring claims); one at a time, the next batch after it. */
  async #flush(): Promise<void> {
    while (this.#recording) await this.#recording;
    if (this.#results.length === 0 && this.#expiring.length === 0) return;
    const now = Date.now();
    const batch = this.#results.map((finished) => toRecord(finished, now));
    const expiring = this.#expiring;
    this.#results = [];
    this.#expiring = [];
    const release = expiring.length === 0 ? Promise.resolve() : this.#store.outbox.releaseDeliveries(this.instance, expiring);
    const record = batch.length === 0 ? Promise.resolve() : this.#store.outbox.recordAttempts(this.instance, batch);
    this.#recording = Promise.all([release, record]).then(
      () => {
        this.#storeBack();
        // The store counted each retry's delay from its own clock during the recording, so it is due by
        // now plus that delay: the timer claims it then. Released events are due at once.
        const recorded = Date.now();
        for (const r of batch) if (r.retryInMs !== null) this.#due.add(recorded + r.retryInMs);
        if (expiring.length > 0) this.#wake();
      },
      // The attempts happened but are not recorded: their claims expire and they are made again
      // (at least once; the receiver deduplicates by webhook-id).
      (err: unknown) => this.#storeDown(err, 'recording webhook attempts failed; they will be retried when their lease ends'),
    );
    try {
      await this.#recording;
    } finally {
      this.#recording = null;
    }
    if (this.#results.length > 0) await this.#flush();
  }

  /** Removes delivered and failed events past WEBHOOK_RETENTION (the service calls it now and then). */
  async sweep(): Promise<void> {
    try {
      const removed = await this.#store.outbox.sweepWebhooks(new Date(Date.now() - this.#settings.webhookRetentionMs));
      if (removed > 0) this.#log.info({ removed }, 'removed webhook events past their retention');
    } catch (err) {
      this.#storeDown(err, 'removing old webhook events failed');
    }
  }

  #storeDown(err: unknown, message: string): void {
    if (this.#storeFailing) return;
    this.#storeFailing = true;
    this.#log.warn({ err }, message);
  }

  #storeBack(): void {
    if (!this.#storeFailing) return;
    this.#storeFailing = false;
    this.#log.info('webhook delivery resumed');
  }
}
