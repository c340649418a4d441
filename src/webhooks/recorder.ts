import type { ClaimedDelivery } from '../domain/webhook.js';
import type { Store } from '../store/store.js';
import { Machine, type Moves } from './machine.js';
import { toRecord, type Finished } from './outcome.js';
import type { StoreHealth } from './store-health.js';

/** Attempt results wait at most this long to be recorded together... */
const RECORD_DELAY_MS = 20;
/** ...or until this many are ready. */
const RECORD_BATCH = 256;

/**
 * When the next recording starts:
 * - idle: nothing collected waits for one (a recording may be under way: see WriteState).
 * - delayed: results are collected; a timer records them RECORD_DELAY_MS after the first.
 * - immediate: a full batch is collected; it is recorded on the next turn of the event loop.
 * - closed: the dispatcher stops; its last recording takes everything, and nothing is collected after.
 */
export type RecordState = 'idle' | 'delayed' | 'immediate' | 'closed';

export const RECORD_MOVES: Moves<RecordState> = {
  idle: ['delayed', 'immediate', 'closed'],
  delayed: ['idle', 'immediate', 'closed'],
  immediate: ['idle', 'closed'],
  closed: [],
};

/** Whether a recording is under way: one at a time, the next batch after it. */
export type WriteState = 'ready' | 'writing';

export const WRITE_MOVES: Moves<WriteState> = {
  ready: ['writing'],
  writing: ['ready'],
};

/** Told what a recording did (the dispatcher wires them to the due timer and to claiming). */
export interface RecordEvents {
  /** A recorded retry is due at this time (epoch ms). */
  due(at: number): void;
  /** Claims were released: their events are due at once. */
  released(): void;
}

/**
 * Records attempt results, and releases the claims of events that waited too long, in batches: those of up
 * to RECORD_DELAY_MS in one transaction (at once when a full batch is ready). Each recording is a commit,
 * and on SQLite a synchronous one, during which no attempt progresses. A wait this short changes nothing
 * for anyone reading the attempts.
 */
export class Recorder {
  readonly #state = new Machine<RecordState>('recorder', 'idle', RECORD_MOVES);
  readonly #write = new Machine<WriteState>('recording', 'ready', WRITE_MOVES);
  readonly #outbox: Pick<Store['outbox'], 'recordAttempts' | 'releaseDeliveries'>;
  readonly #instance: string;
  readonly #health: StoreHealth;
  readonly #events: RecordEvents;
  #results: Finished[] = [];
  /** Events whose lease ran short while they waited: released in the next recording. */
  #expiring: ClaimedDelivery[] = [];
  #timer: NodeJS.Timeout | undefined;
  #immediate: NodeJS.Immediate | undefined;
  /** The recording under way (WriteState writing). */
  #writing: Promise<void> | null = null;

  constructor(outbox: Pick<Store['outbox'], 'recordAttempts' | 'releaseDeliveries'>, instance: string, health: StoreHealth, events: RecordEvents) {
    this.#outbox = outbox;
    this.#instance = instance;
    this.#health = health;
    this.#events = events;
  }

  get state(): RecordState {
    return this.#state.state;
  }

  get writeState(): WriteState {
    return this.#write.state;
  }

  add(finished: Finished): void {
    this.#results.push(finished);
    this.#schedule();
  }

  /** Gives back an event that waited too long for a slot, with the next recording. */
  release(delivery: ClaimedDelivery): void {
    this.#expiring.push(delivery);
    this.#schedule();
  }

  /** Collects nothing more; records everything collected. */
  async close(): Promise<void> {
    this.#state.to('closed');
    clearTimeout(this.#timer);
    clearImmediate(this.#immediate);
    await this.flush();
  }

  #schedule(): void {
    const state = this.#state.state;
    if (this.#results.length + this.#expiring.length >= RECORD_BATCH) {
      if (state === 'immediate') return;
      clearTimeout(this.#timer);
      this.#state.to('immediate');
      this.#immediate = setImmediate(() => {
        this.#state.to('idle');
        void this.flush();
      });
      return;
    }
    // A recording planned already takes these too: it takes everything collected when it starts.
    if (state === 'delayed' || state === 'immediate') return;
    this.#state.to('delayed');
    this.#timer = setTimeout(() => {
      this.#state.to('idle');
      void this.flush();
    }, RECORD_DELAY_MS);
  }

  /** Records every collected result (and releases expiring claims); one at a time, the next batch after it. */
  async flush(): Promise<void> {
    while (this.#write.state === 'writing') await this.#writing;
    if (this.#results.length === 0 && this.#expiring.length === 0) return;
    const now = Date.now();
    const batch = this.#results.map((finished) => toRecord(finished, now));
    const expiring = this.#expiring;
    this.#results = [];
    this.#expiring = [];
    const release = expiring.length === 0 ? Promise.resolve() : this.#outbox.releaseDeliveries(this.#instance, expiring);
    const record = batch.length === 0 ? Promise.resolve() : this.#outbox.recordAttempts(this.#instance, batch);
    this.#write.to('writing');
    this.#writing = Promise.all([release, record]).then(
      () => {
        this.#health.back();
        // The store counted each retry's delay from its own clock during the recording, so it is due by
        // now plus that delay: the timer claims it then. Released events are due at once.
        const recorded = Date.now();
        for (const r of batch) if (r.retryInMs !== null) this.#events.due(recorded + r.retryInMs);
        if (expiring.length > 0) this.#events.released();
      },
      // The attempts happened but are not recorded: their claims expire and they are made again
      // (at least once; the receiver deduplicates by webhook-id).
      (err: unknown) => this.#health.down(err, 'recording webhook attempts failed; they will be retried when their lease ends'),
    );
    try {
      await this.#writing;
    } finally {
      this.#writing = null;
      this.#write.to('ready');
    }
    if (this.#results.length > 0) await this.flush();
  }
}
