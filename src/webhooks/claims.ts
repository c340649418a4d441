import type { ClaimedDelivery } from '../domain/webhook.js';
import type { Store } from '../store/store.js';
import { Machine, TransitionError, type Moves } from './machine.js';
import type { StoreHealth } from './store-health.js';

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
/** An event that waited so long that its attempt might outlast its lease is released, not started. */
const START_MARGIN_MS = 5000;

/**
 * - idle: no claim under way or planned; a wake-up claims at once, or plans one (spacing).
 * - spacing: a claim is planned for when CLAIM_INTERVAL_MS has passed since the last one.
 * - claiming: a claim is under way.
 * - claimingAgain: a claim is under way and news came meanwhile (events queued, the poll): those may be
 *   events it did not see, so another follows it.
 * - stopped: the dispatcher stops; nothing is claimed any more (a claim under way still ends).
 */
export type ClaimState = 'idle' | 'spacing' | 'claiming' | 'claimingAgain' | 'stopped';

export const CLAIM_MOVES: Moves<ClaimState> = {
  idle: ['spacing', 'claiming', 'stopped'],
  spacing: ['idle', 'stopped'],
  claiming: ['claimingAgain', 'idle', 'stopped'],
  claimingAgain: ['idle', 'stopped'],
  stopped: [],
};

/** What claiming needs of the events held locally (attempts.ts). */
export interface Holder {
  /** Attempts in flight. */
  readonly inFlight: number;
  /** Events claimed and not yet attempted, recorded or released. */
  readonly held: number;
  /** Endpoints a claim leaves out, and how many events wait for them (busy endpoints). */
  busy(): { ids: string[]; waiting: number };
  /**
   * Takes in what a claim brought, each to be started by `startBy` (epoch ms), and notes which endpoints
   * may have more due; returns the endpoints that got events.
   */
  accept(claimed: readonly ClaimedDelivery[], startBy: number, busy: readonly string[], perEndpoint: number): Iterable<string>;
  /** Starts what the endpoints' slots allow of their waiting events. */
  start(endpointIds: Iterable<string>): void;
}

export interface ClaimSettings {
  readonly instance: string;
  readonly leaseMs: number;
  readonly timeoutMs: number;
  /** WEBHOOK_CONCURRENCY and WEBHOOK_ENDPOINT_CONCURRENCY. */
  readonly concurrency: number;
  readonly endpointConcurrency: number;
}

/**
 * Claims due events under a lease, one claim at a time, at least CLAIM_INTERVAL_MS apart, and hands them
 * to the holder. Woken after a commit, by the poll, by a due retry, and as room frees up.
 */
export class Claims {
  readonly #state = new Machine<ClaimState>('claims', 'idle', CLAIM_MOVES);
  readonly #outbox: Pick<Store['outbox'], 'claimDeliveries'>;
  readonly #settings: ClaimSettings;
  readonly #holder: Holder;
  readonly #health: StoreHealth;
  /** When the last claim was sent (epoch ms), and the timer that spaces claims out. */
  #lastClaim = 0;
  #timer: NodeJS.Timeout | undefined;
  /** Settles when the last claim has been handled. */
  #done: Promise<void> | null = null;
  #backlog = false;

  constructor(outbox: Pick<Store['outbox'], 'claimDeliveries'>, settings: ClaimSettings, holder: Holder, health: StoreHealth) {
    this.#outbox = outbox;
    this.#settings = settings;
    this.#holder = holder;
    this.#health = health;
  }

  get state(): ClaimState {
    return this.#state.state;
  }

  /** The last claim came back full (or found no room): more may be due, so claim again as slots free up. */
  get backlog(): boolean {
    return this.#backlog;
  }

  /**
   * Claims now, or after the claim under way when `news` (events queued, the poll): those may be events
   * that claim did not see. Room freed by an attempt during a claim needs no second one: the claim's
   * answer says afresh which endpoints have more due, and the next attempt to end wakes it then.
   */
  wake(news = true): void {
    switch (this.#state.state) {
      case 'idle':
        break;
      case 'claiming':
        if (news) this.#state.to('claimingAgain');
        return;
      case 'spacing':
      case 'claimingAgain':
      case 'stopped':
        return;
    }
    const wait = this.#lastClaim + CLAIM_INTERVAL_MS - Date.now();
    if (wait > 0) {
      this.#state.to('spacing');
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.#state.to('idle');
        this.wake();
      }, wait);
      return;
    }
    this.#state.to('claiming');
    this.#done = this.#claim();
  }

  /** Claims no more; the promise settles when a claim under way has been handled. */
  stop(): Promise<void> | null {
    this.#state.to('stopped');
    clearTimeout(this.#timer);
    this.#timer = undefined;
    return this.#done;
  }

  async #claim(): Promise<void> {
    try {
      const { concurrency, endpointConcurrency, leaseMs } = this.#settings;
      // Busy endpoints' waiting events are left out of the bound on what is held: were they counted, a few
      // stuck endpoints' queues would stop every claim, and with them every other endpoint's events.
      const { ids: busy, waiting } = this.#holder.busy();
      const limit = Math.min(concurrency - this.#holder.inFlight, HELD_FACTOR * concurrency - (this.#holder.held - waiting));
      if (limit <= 0) {
        // Full: claim again as soon as an attempt ends.
        this.#backlog = true;
        return;
      }
      const perEndpoint = endpointConcurrency * CLAIM_ROUNDS;
      const claimedAt = Date.now();
      this.#lastClaim = claimedAt;
      const claimed = await this.#outbox.claimDeliveries({
        instance: this.#settings.instance, limit, perEndpoint, busy, leaseMs,
      });
      this.#health.back();
      const startBy = claimedAt + leaseMs - this.#settings.timeoutMs - START_MARGIN_MS;
      const got = this.#holder.accept(claimed, startBy, busy, perEndpoint);
      // Full in all, or for one endpoint, or endpoints left out as busy: the store may have more due, to
      // claim as soon as there is room for it (rather than at the next poll).
      this.#backlog = claimed.length >= limit;
      if (this.#state.state === 'stopped') return;
      this.#holder.start(got);
    } catch (err) {
      // A part driven out of order is a bug to see, not a store outage to wait out.
      if (err instanceof TransitionError) throw err;
      this.#health.down(err, 'claiming webhook deliveries failed');
    } finally {
      // News that came during the claim: another, spaced out by CLAIM_INTERVAL_MS.
      const again = this.#state.state === 'claimingAgain';
      if (this.#state.state !== 'stopped') this.#state.to('idle');
      if (again) this.wake();
    }
  }
}
