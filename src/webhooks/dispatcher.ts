import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from '../config/load.js';
import type { Store } from '../store/store.js';
import { Attempts, type DeliveryObserver } from './attempts.js';
import { Claims } from './claims.js';
import { DueTimer } from './due-timer.js';
import { Recorder } from './recorder.js';
import { Sender } from './sender.js';
import { StoreHealth } from './store-health.js';

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
  /**
   * The lease's fixed part, beyond twice the timeout; LEASE_MARGIN_MS unless given. An option, not a
   * user setting: tests shorten it to see a lease end without waiting out the production margin.
   */
  readonly leaseMarginMs?: number | undefined;
};

/** A claim outlives the attempt by this much beyond twice its timeout (a queued wait plus the attempt). */
const LEASE_MARGIN_MS = 30_000;

/**
 * Delivers the events the store queues (the transactional outbox): claims due events under a lease
 * (claims.ts), sends one attempt each within the slots (attempts.ts, sender.ts), and records how each
 * ended, in batches (recorder.ts). Each part has its own named states and checked transitions; this
 * composes them. Made, woken and stopped by its service (service.ts), which owns the poll, the sweep's
 * timer and the store's wake-up.
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
  readonly #retentionMs: number;
  readonly #log: Logger;
  readonly #health: StoreHealth;
  readonly #due = new DueTimer(() => this.#claims.wake());
  readonly #claims: Claims;
  readonly #attempts: Attempts;
  readonly #recorder: Recorder;
  #stopping: Promise<void> | null = null;

  constructor(store: Store, settings: DispatcherSettings, logger: Logger) {
    this.#store = store;
    this.#retentionMs = settings.webhookRetentionMs;
    this.#log = logger.child({ component: 'webhooks' });
    this.#health = new StoreHealth(this.#log);
    const leaseMs = 2 * settings.webhookTimeoutMs + (settings.leaseMarginMs ?? LEASE_MARGIN_MS);
    const sender = new Sender({
      timeoutMs: settings.webhookTimeoutMs,
      allowPrivate: settings.webhookAllowPrivate,
      userAgent: settings.userAgent,
      connectionsPerOrigin: settings.webhookEndpointConcurrency,
    });
    this.#recorder = new Recorder(store.outbox, this.instance, this.#health, {
      due: (at) => this.#due.add(at),
      released: () => this.#claims.wake(),
    });
    this.#attempts = new Attempts(store.outbox, sender, {
      instance: this.instance,
      leaseMs,
      concurrency: settings.webhookConcurrency,
      endpointConcurrency: settings.webhookEndpointConcurrency,
      retryScheduleMs: settings.webhookRetryScheduleMs,
      observer: settings.observer,
    }, {
      finished: (finished) => this.#recorder.add(finished),
      expired: (delivery) => this.#recorder.release(delivery),
      freed: (room) => {
        if (this.#claims.backlog || room) this.#claims.wake(false);
      },
    }, this.#log);
    this.#claims = new Claims(store.outbox, {
      instance: this.instance,
      leaseMs,
      timeoutMs: settings.webhookTimeoutMs,
      concurrency: settings.webhookConcurrency,
      endpointConcurrency: settings.webhookEndpointConcurrency,
    }, this.#attempts, this.#health);
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
    const claim = this.#claims.stop();
    this.#attempts.stopStarting();
    this.#due.stop();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - Date.now()))));
    // Events waiting for a slot are not started now; a claim under way adds its events to them. (One that
    // answers after the deadline, from a store that hangs, leaves its events to their lease.)
    if (claim) await Promise.race([claim, late]);
    await this.#attempts.drain(late);
    clearTimeout(timer);
    await this.#attempts.release();
    await this.#recorder.close();
    await this.#attempts.close();
  }

  /** Looks for due events now (a commit queued some, or the poll): an idle dispatcher claims at once. */
  wake(): void {
    this.#claims.wake();
  }

  /** The endpoint was deleted: its events waiting here are dropped (nothing to release: the store removed them). */
  forget(endpointId: string): void {
    this.#attempts.forget(endpointId);
  }

  /** Removes delivered and failed events past WEBHOOK_RETENTION (the service calls it now and then). */
  async sweep(): Promise<void> {
    try {
      const removed = await this.#store.outbox.sweepWebhooks(new Date(Date.now() - this.#retentionMs));
      if (removed > 0) this.#log.info({ removed }, 'removed webhook events past their retention');
    } catch (err) {
      this.#health.down(err, 'removing old webhook events failed');
    }
  }
}
