import type { Logger } from 'pino';
import type { AttemptResult, ClaimedDelivery } from '../domain/webhook.js';
import type { Store } from '../store/store.js';
import type { Holder } from './claims.js';
import { Machine, type Moves } from './machine.js';
import { outcomeOf, type Finished } from './outcome.js';
import type { Sender } from './sender.js';
import { Slots } from './slots.js';

/** Told by the dispatcher how each delivery attempt ended (the metrics count them). */
export interface DeliveryObserver {
  attempted(outcome: AttemptResult['outcome']): void;
}

/** The reason attempts are aborted at the shutdown deadline (the sender's own timeout has another). */
const SHUTDOWN = Symbol('shutdown');

/**
 * - running: waiting events start as slots allow.
 * - draining: the dispatcher stops; nothing more starts, attempts in flight may finish.
 * - aborting: the drain deadline passed with attempts in flight; they were aborted, for retry.
 * - drained: nothing is in flight.
 * - released: events claimed and never attempted were given back to the store (or left to their lease).
 * - closed: the sender's connections are closed.
 */
export type AttemptsState = 'running' | 'draining' | 'aborting' | 'drained' | 'released' | 'closed';

export const ATTEMPTS_MOVES: Moves<AttemptsState> = {
  running: ['draining'],
  draining: ['aborting', 'drained'],
  aborting: ['drained'],
  drained: ['released'],
  released: ['closed'],
  closed: [],
};

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

export interface AttemptSettings {
  readonly instance: string;
  readonly leaseMs: number;
  /** WEBHOOK_CONCURRENCY, WEBHOOK_ENDPOINT_CONCURRENCY and WEBHOOK_RETRY_SCHEDULE. */
  readonly concurrency: number;
  readonly endpointConcurrency: number;
  readonly retryScheduleMs: readonly number[];
  readonly observer?: DeliveryObserver | undefined;
}

/** Where what happens to the events goes (the dispatcher wires them to the recorder and to claiming). */
export interface AttemptEvents {
  /** An attempt ended: its result is to be recorded. */
  finished(finished: Finished): void;
  /** An event waited too long for a slot: its claim is to be released. */
  expired(delivery: ClaimedDelivery): void;
  /** A slot freed; `room` when its endpoint has more due in the store and room to queue it. */
  freed(room: boolean): void;
}

/**
 * Runs the attempts of the events claimed, within the instance's slots (slots.ts): waiting events start as
 * their endpoint, its user and the instance have room, endpoints stopped by the shared slots first when
 * one frees up; an event whose lease runs short while it waits is released instead.
 */
export class Attempts implements Holder {
  readonly #state = new Machine<AttemptsState>('attempts', 'running', ATTEMPTS_MOVES);
  readonly #settings: AttemptSettings;
  readonly #outbox: Pick<Store['outbox'], 'releaseDeliveries'>;
  readonly #sender: Pick<Sender, 'send' | 'close'>;
  readonly #events: AttemptEvents;
  readonly #log: Logger;
  readonly #slots: Slots;

  readonly #endpoints = new Map<string, EndpointState>();
  /** Endpoints with events waiting while the slots, or their share of them, were taken: in the order they got stuck. */
  readonly #starved = new Set<EndpointState>();
  /** Events claimed and not yet attempted, recorded or released. */
  readonly #held = new Set<ClaimedDelivery>();
  /** Endpoints deleted through this app's API, with when: their events are dropped, not sent. */
  readonly #deleted = new Map<string, number>();
  /** Abort handles of the attempts in flight (for the shutdown deadline). */
  readonly #inFlight = new Set<AbortController>();
  /** Resolves when nothing is in flight (during the drain). */
  #idle: (() => void) | null = null;

  constructor(
    outbox: Pick<Store['outbox'], 'releaseDeliveries'>,
    sender: Pick<Sender, 'send' | 'close'>,
    settings: AttemptSettings,
    events: AttemptEvents,
    log: Logger,
  ) {
    this.#outbox = outbox;
    this.#sender = sender;
    this.#settings = settings;
    this.#events = events;
    this.#log = log;
    this.#slots = new Slots(settings.concurrency, settings.endpointConcurrency);
  }

  get state(): AttemptsState {
    return this.#state.state;
  }

  get inFlight(): number {
    return this.#inFlight.size;
  }

  get held(): number {
    return this.#held.size;
  }

  /**
   * Endpoints this instance will not take more of now: a full round of their events waits already. With
   * how many events wait for them: those do not count against what a claim may take for the others.
   */
  busy(): { ids: string[]; waiting: number } {
    const cap = this.#settings.endpointConcurrency;
    const ids: string[] = [];
    let waiting = 0;
    for (const [id, state] of this.#endpoints) {
      if (state.waiting.length < cap) continue;
      ids.push(id);
      waiting += state.waiting.length;
    }
    return { ids, waiting };
  }

  accept(claimed: readonly ClaimedDelivery[], startBy: number, busy: readonly string[], perEndpoint: number): Iterable<string> {
    const counts = new Map<string, number>();
    for (const delivery of claimed) {
      // Its endpoint was deleted while the claim was under way: the store removed the event with it.
      if (this.#deleted.has(delivery.endpointId)) continue;
      this.#held.add(delivery);
      counts.set(delivery.endpointId, (counts.get(delivery.endpointId) ?? 0) + 1);
      this.#endpoint(delivery).waiting.push({ delivery, startBy });
    }
    const left = new Set(busy);
    for (const [id, state] of this.#endpoints) state.more = left.has(id) || (counts.get(id) ?? 0) >= perEndpoint;
    return counts.keys();
  }

  start(endpointIds: Iterable<string>): void {
    for (const id of endpointIds) this.#pump(id);
  }

  /** The endpoint was deleted: its events waiting here are dropped (nothing to release: the store removed them). */
  forget(endpointId: string): void {
    const now = Date.now();
    this.#deleted.set(endpointId, now);
    // Claims are short-lived: past a lease, no claim made before the deletion can still come back.
    for (const [id, at] of this.#deleted) if (now - at > this.#settings.leaseMs) this.#deleted.delete(id);
    const state = this.#endpoints.get(endpointId);
    if (!state) return;
    for (const { delivery } of state.waiting) this.#held.delete(delivery);
    state.waiting.length = 0;
    this.#starved.delete(state);
    if (state.active === 0) this.#endpoints.delete(endpointId);
  }

  /** Starts nothing more; waiting events stay held, to be released. */
  stopStarting(): void {
    this.#state.to('draining');
  }

  /**
   * Lets the attempts in flight finish until `late` settles (the drain deadline), then aborts the rest:
   * they are released (their attempt counts as before), not recorded as failures.
   */
  async drain(late: Promise<void>): Promise<void> {
    if (this.#inFlight.size > 0) {
      const idle = new Promise<void>((resolve) => (this.#idle = resolve));
      await Promise.race([idle, late]);
      if (this.#inFlight.size > 0) {
        this.#state.to('aborting');
        this.#log.warn({ inFlight: this.#inFlight.size }, 'webhook attempts still in flight at the drain deadline; aborting them for retry');
        for (const controller of this.#inFlight) controller.abort(SHUTDOWN);
        await idle;
      }
    }
    this.#state.to('drained');
  }

  /** Gives back every event claimed and not attempted: due again at once, for this or another instance. */
  async release(): Promise<void> {
    this.#state.to('released');
    const unattempted = [...this.#held];
    this.#held.clear();
    if (unattempted.length === 0) return;
    await this.#outbox.releaseDeliveries(this.#settings.instance, unattempted).catch((err: unknown) => {
      // Their claims expire instead; the events are attempted again then.
      this.#log.warn({ err, events: unattempted.length }, 'could not release webhook claims; they will be retried when their lease ends');
    });
  }

  /** Closes the sender's connections. */
  async close(): Promise<void> {
    this.#state.to('closed');
    await this.#sender.close().catch(() => undefined);
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
    while (state.waiting.length > 0 && this.#state.state === 'running') {
      const stop = this.#slots.check(state.active, state.user);
      if (stop === 'endpoint') break;
      if (stop === 'instance') {
        this.#starved.add(state);
        return;
      }
      const { delivery, startBy } = state.waiting.shift() as Waiting;
      if (now > startBy) {
        // Another attempt must not overlap a new claim of it: given back instead.
        this.#held.delete(delivery);
        this.#events.expired(delivery);
        continue;
      }
      state.active++;
      this.#slots.take(state.user);
      void this.#attempt(delivery, state);
    }
    this.#starved.delete(state);
    if (state.active === 0 && state.waiting.length === 0) this.#endpoints.delete(endpointId);
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
      const finished = outcomeOf(delivery, result, at, this.#settings.retryScheduleMs, Date.now());
      this.#settings.observer?.attempted(finished.result.outcome);
      this.#events.finished(finished);
    }
    if (this.#inFlight.size === 0 && this.#idle) this.#idle();
    // A slot freed: endpoints that waited for one go first, longest waiting first; then this one.
    for (const starved of this.#starved) {
      if (this.#slots.full) break;
      this.#pump(starved.id);
    }
    this.#pump(delivery.endpointId);
    this.#events.freed(this.#roomFor(state));
  }

  /** The endpoint has more due in the store and room to queue it: a claim would get some. */
  #roomFor(state: EndpointState): boolean {
    return state.more && state.waiting.length < this.#settings.endpointConcurrency;
  }
}
