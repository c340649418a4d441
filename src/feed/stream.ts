import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { compareFeed, feedId, type FeedEvent, type FeedPosition } from '../domain/feed.js';

/** Why the server ended a stream, as its last event says (docs/feed.md). */
export type EndReason = 'slow-reader' | 'shutting-down' | 'token-revoked';

const END_MESSAGES: Record<EndReason, string> = {
  'slow-reader': 'The stream was not read fast enough; reconnect with the last event id to go on',
  'shutting-down': 'This instance is shutting down; reconnect with the last event id (another instance may answer)',
  'token-revoked': 'The token was revoked or has expired',
};

/**
 * Bytes a stream may have written and not yet taken by its client: past it the client is a slow reader,
 * sent its last event and closed (it resumes with its last id). So the server holds for a stream at most
 * this plus one write (one read of the log, READ_PAGE events in hub.ts), whatever the client does; the
 * kernel's socket buffers come before it.
 */
export const STREAM_BUFFER_BYTES = 256 * 1024;
/** A stream ended but not taken by its client within this is cut. */
const END_GRACE_MS = 5000;

/** How a reader retries a dropped stream (the SSE `retry` field). */
export const RETRY_MS = 2000;

/** One event as the stream writes it. */
export function eventText(event: FeedEvent): string {
  return `event: ${event.deleted ? 'plant.deleted' : 'plant.created'}\nid: ${feedId(event.at)}\ndata: ${event.body}\n\n`;
}

/** One subscriber's stream: its response, who it is for, and how far it has been sent. */
export class FeedStream {
  readonly #res: ServerResponse;
  /** The user whose events it gets; null for an admin's (every user's). */
  readonly owner: string | null;
  /** The bearer token it was opened with, checked again while it is open (revocation, expiry). */
  readonly bearer: string;
  /** The per-token limit's key. */
  readonly key: string;
  /** The last position sent (or known to hold nothing for it). */
  cursor: FeedPosition;
  /** Set once it is caught up and fed by the hub's reads. */
  live = false;
  #ended = false;
  readonly #onEnded: (stream: FeedStream, reason: EndReason | 'client') => void;

  constructor(
    res: ServerResponse, who: { owner: string | null; bearer: string; key: string }, start: FeedPosition,
    onEnded: (stream: FeedStream, reason: EndReason | 'client') => void,
  ) {
    this.#res = res;
    this.owner = who.owner;
    this.bearer = who.bearer;
    this.key = who.key;
    this.cursor = start;
    this.#onEnded = onEnded;
    res.on('close', () => this.#ending('client'));
  }

  get ended(): boolean {
    return this.#ended;
  }

  /**
   * Its client went away before the hub took it (while the route waited on the store): its response's
   * close event came before this stream listened for it.
   */
  get gone(): boolean {
    const socket = this.#res.socket;
    return this.#res.destroyed || socket === null || socket.destroyed;
  }

  /** The opening: the retry delay, and the position it continues after. */
  open(headers: OutgoingHttpHeaders): void {
    this.#res.writeHead(200, headers);
    this.write(`retry: ${RETRY_MS}\n\nevent: ready\nid: ${feedId(this.cursor)}\ndata: {}\n\n`);
  }

  /** Sends the events of `events` (in order) it may see and has not been sent; returns how many. */
  send(events: readonly FeedEvent[], texts: readonly string[]): number {
    let out = '';
    let sent = 0;
    events.forEach((event, i) => {
      if (compareFeed(event.at, this.cursor) <= 0) return;
      this.cursor = event.at;
      if (this.owner !== null && event.owner !== this.owner) return;
      out += texts[i];
      sent++;
    });
    if (out !== '') this.write(out);
    return sent;
  }

  /** Nothing more for it up to `at`: what it was read up to when none of the events there were its own. */
  reached(at: FeedPosition): void {
    if (compareFeed(at, this.cursor) > 0) this.cursor = at;
  }

  write(text: string): void {
    if (this.#ended) return;
    this.#res.write(text);
    if (this.#res.writableLength > STREAM_BUFFER_BYTES) this.end('slow-reader');
  }

  /** Ends the stream with its last event saying why; the client is given a moment to take it, then cut. */
  end(reason: EndReason): void {
    if (this.#ended) return;
    const res = this.#res;
    res.end(`event: end\ndata: ${JSON.stringify({ reason, message: END_MESSAGES[reason] })}\n\n`);
    const cut = setTimeout(() => res.destroy(), END_GRACE_MS);
    cut.unref();
    res.once('close', () => clearTimeout(cut));
    this.#ending(reason);
  }

  #ending(reason: EndReason | 'client'): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#onEnded(this, reason);
  }
}
