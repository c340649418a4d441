import type { FastifyBaseLogger } from 'fastify';
import { compareFeed, type FeedPosition } from '../domain/feed.js';
import type { FeedStore } from '../store/store.js';
import { eventText, FeedStream, type EndReason } from './stream.js';

/** Events per read of the log: one write to a stream carries at most this many. */
export const READ_PAGE = 500;
/** The hub reads again this often while it feeds streams, for what a lost notification would miss. */
const POLL_MS = 1000;
/**
 * A commit was announced but its events are not final yet (PostgreSQL: an older transaction still runs):
 * read again after this, doubling up to the poll.
 */
const FIRST_RETRY_MS = 2;
/**
 * Writing to every stream costs the event loop a system call per stream, which it takes from the
 * requests: after a fan-out that took T, the next waits GAP_FACTOR × T (at most MAX_GAP_MS), so that
 * under a stream of creates the fan-outs take a bounded share of the loop and each carries more events.
 * A change after a quiet moment is sent at once.
 */
const GAP_FACTOR = 3;
const MAX_GAP_MS = 25;
/** Tokens of open streams are checked again this often: a revoked one is refused within REVOCATION_WITHIN_MS. */
const RECHECK_MS = 1000;
/** The retention's sweep runs this often (it marks where the log ends, and removes what is older than kept). */
const SWEEP_MS = 60_000;

export interface FeedSettings {
  readonly feedRetentionMs: number;
  readonly feedHeartbeatMs: number;
  readonly feedMaxStreams: number;
  readonly feedMaxStreamsPerToken: number;
}

/** Who watches the feed from outside (metrics): told of every stream opened and ended, and events sent. */
export interface FeedObserver {
  opened(): void;
  ended(reason: EndReason | 'client'): void;
  sent(events: number): void;
}

export interface FeedHubOptions {
  readonly feed: FeedStore;
  readonly settings: FeedSettings;
  readonly log: FastifyBaseLogger;
  readonly observer?: FeedObserver | undefined;
}

/** Why a stream cannot be opened now. */
export type Refused = 'token-limit' | 'instance-limit';

/**
 * The live feed of one app (GET /plants/events): its streams, and one reader of the log for all of
 * them. A new stream first catches up on its own (reading its user's events from where it resumes),
 * then joins the live ones, which the hub feeds from one read per change of the log, each event written
 * once as text and sent to every stream that may see it. The hub reads only while it has live streams.
 */
export class FeedHub {
  readonly #feed: FeedStore;
  readonly #settings: FeedSettings;
  readonly #log: FastifyBaseLogger;
  /** Whether a bearer token still authenticates, with the scope the feed needs (checkTokensWith). */
  #recheck: (bearer: string) => Promise<boolean> = async () => true;
  readonly #observer: FeedObserver | undefined;
  readonly #streams = new Set<FeedStream>();
  readonly #live = new Set<FeedStream>();
  readonly #perKey = new Map<string, number>();
  /** How far the live streams have been fed; undefined while there are none. */
  #head: FeedPosition | undefined;
  /** The latest transaction announced (FeedStore.onFeedChanged). */
  #wanted = 0n;
  #reading = false;
  #again = false;
  #retryMs = FIRST_RETRY_MS;
  #retry: NodeJS.Timeout | undefined;
  /** No fan-out before this (performance.now()): see GAP_FACTOR. */
  #quietUntil = 0;
  #gap: NodeJS.Timeout | undefined;
  readonly #timers: NodeJS.Timeout[] = [];
  #listening = false;
  #closed = false;

  constructor({ feed, settings, log, observer }: FeedHubOptions) {
    this.#feed = feed;
    this.#settings = settings;
    this.#log = log.child({ component: 'feed' });
    this.#observer = observer;
    const every = (ms: number, run: () => void): void => {
      const timer = setInterval(run, ms);
      timer.unref();
      this.#timers.push(timer);
    };
    every(settings.feedHeartbeatMs, () => {
      for (const stream of this.#streams) stream.write(': heartbeat\n\n');
    });
    every(POLL_MS, () => this.#pull());
    every(RECHECK_MS, () => void this.#recheckTokens());
    every(SWEEP_MS, () => void this.sweep());
  }

  /** How a token is checked again while its streams are open: the app's verifiers, made after the hub. */
  checkTokensWith(recheck: (bearer: string) => Promise<boolean>): void {
    this.#recheck = recheck;
  }

  get size(): number {
    return this.#streams.size;
  }

  /** Whether a stream for `key` may open now; nothing is counted until `open`. */
  refusal(key: string): Refused | undefined {
    if (this.#streams.size >= this.#settings.feedMaxStreams) return 'instance-limit';
    if ((this.#perKey.get(key) ?? 0) >= this.#settings.feedMaxStreamsPerToken) return 'token-limit';
    return undefined;
  }

  /** Takes over a stream opened (its headers and ready event sent): catches it up, then feeds it live. */
  add(stream: FeedStream): void {
    if (this.#closed) return stream.end('shutting-down');
    // Never counted, never fed: nothing would ever take it out again.
    if (stream.gone) return;
    if (!this.#listening) {
      this.#listening = true;
      this.#feed.onFeedChanged(this.#changed);
    }
    this.#streams.add(stream);
    this.#perKey.set(stream.key, (this.#perKey.get(stream.key) ?? 0) + 1);
    this.#observer?.opened();
    void this.#catchUp(stream);
  }

  /** A stream ended (by the server or its client). */
  readonly ended = (stream: FeedStream, reason: EndReason | 'client'): void => {
    if (!this.#streams.delete(stream)) return;
    this.#live.delete(stream);
    const left = (this.#perKey.get(stream.key) ?? 1) - 1;
    if (left === 0) this.#perKey.delete(stream.key);
    else this.#perKey.set(stream.key, left);
    if (this.#live.size === 0) this.#head = undefined;
    this.#observer?.ended(reason);
  };

  /** Removes what the retention no longer keeps (every instance sweeps; a second sweep finds nothing). */
  async sweep(): Promise<void> {
    try {
      await this.#feed.sweepFeed(new Date(Date.now() - this.#settings.feedRetentionMs));
    } catch (error) {
      this.#log.warn({ err: error }, 'the feed\'s retention sweep failed; it runs again in a minute');
    }
  }

  /** Ends every stream (shutdown): each is told, and resumes elsewhere with its last id. */
  close(): void {
    this.#closed = true;
    for (const timer of this.#timers) clearInterval(timer);
    clearTimeout(this.#retry);
    clearTimeout(this.#gap);
    for (const stream of [...this.#streams]) stream.end('shutting-down');
  }

  readonly #changed = (tx: bigint): void => {
    if (tx > this.#wanted) this.#wanted = tx;
    this.#pull();
  };

  /** Reads the log for the stream up to where the live streams are, then makes it one of them. */
  async #catchUp(stream: FeedStream): Promise<void> {
    try {
      for (;;) {
        const until = this.#head ?? (await this.#feed.feedBounds()).head;
        if (stream.ended) return;
        // Another stream may have joined meanwhile: the live ones are where it says.
        this.#head ??= until;
        if (compareFeed(stream.cursor, this.#head) >= 0) break;
        const target = this.#head;
        // Everyone's events, a page at a time, the stream keeping its user's (FeedStream.send): the log has
        // no index by owner, which every create would pay for.
        const read = await this.#feed.readFeed(stream.cursor, READ_PAGE, null, target);
        if (stream.ended) return;
        const sent = stream.send(read.events, read.events.map(eventText));
        if (sent > 0) this.#observer?.sent(sent);
        if (read.events.length < READ_PAGE) stream.reached(target);
        if (this.#head === undefined) this.#head = stream.cursor;
      }
      stream.live = true;
      this.#live.add(stream);
      // A change announced while it caught up found no live stream to read for.
      this.#pull();
    } catch (error) {
      this.#log.warn({ err: error }, 'a feed stream could not catch up; it is closed (the client resumes with its last id)');
      stream.end('shutting-down');
    }
  }

  /** Reads the log past the live streams' position and sends each event to every stream that may see it. */
  #pull(): void {
    if (this.#reading) {
      this.#again = true;
      return;
    }
    if (this.#live.size === 0 || this.#head === undefined || this.#closed) return;
    const wait = this.#quietUntil - performance.now();
    if (wait > 0) {
      this.#gap ??= setTimeout(() => {
        this.#gap = undefined;
        this.#pull();
      }, Math.ceil(wait));
      return;
    }
    this.#reading = true;
    void this.#read().finally(() => {
      this.#reading = false;
      if (this.#again) this.#pull();
    });
  }

  async #read(): Promise<void> {
    try {
      do {
        this.#again = false;
        const from = this.#head;
        if (from === undefined) return;
        const read = await this.#feed.readFeed(from, READ_PAGE, null);
        // The last live stream may have gone while it read, and another started over from a newer head.
        if (this.#head !== from) {
          this.#again = this.#live.size > 0;
          continue;
        }
        const last = read.events[read.events.length - 1];
        if (last !== undefined) {
          const started = performance.now();
          const texts = read.events.map(eventText);
          let sent = 0;
          for (const stream of this.#live) sent += stream.send(read.events, texts);
          if (sent > 0) this.#observer?.sent(sent);
          this.#head = last.at;
          const took = performance.now() - started;
          this.#quietUntil = performance.now() + Math.min(MAX_GAP_MS, GAP_FACTOR * took);
        }
        if (read.events.length === READ_PAGE) this.#again = true;
        else if (read.settledBefore <= this.#wanted) this.#later();
        else this.#retryMs = FIRST_RETRY_MS;
        // What is left after a fan-out waits for its gap: #pull, after this read, schedules it.
      } while (this.#again && this.#live.size > 0 && performance.now() >= this.#quietUntil);
    } catch (error) {
      this.#log.warn({ err: error }, 'reading the feed failed; reading again shortly');
      this.#retryMs = POLL_MS;
      this.#later();
    }
  }

  /** Reads again soon: a commit announced is not final yet. */
  #later(): void {
    if (this.#retry !== undefined || this.#closed) return;
    const ms = this.#retryMs;
    this.#retryMs = Math.min(ms * 2, POLL_MS);
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      this.#pull();
    }, ms);
    this.#retry.unref();
  }

  /** Ends the streams whose token no longer authenticates (revoked, expired, scope gone). */
  async #recheckTokens(): Promise<void> {
    const byBearer = new Map<string, FeedStream[]>();
    for (const stream of this.#streams) byBearer.set(stream.bearer, [...(byBearer.get(stream.bearer) ?? []), stream]);
    for (const [bearer, streams] of byBearer) {
      let valid = true;
      try {
        valid = await this.#recheck(bearer);
      } catch {
        // The store cannot say now: the stream stays, and is checked again in a second.
      }
      if (!valid) for (const stream of streams) stream.end('token-revoked');
    }
  }
}
