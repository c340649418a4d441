import http from 'node:http';
import type { TestContext } from 'node:test';
// The client package's parser, the one watchPlants reads with: a test that needs more control than
// watchPlants gives (which instance, Last-Event-ID or since, when to drop, the end event) reads with it.
import { SseParser, type ServerSentEvent } from '../../packages/client/src/sse.js';
import { HANG_MS } from './eventually.js';

export type { ServerSentEvent };

export interface FeedRequest {
  /** Sent as `?since=`. */
  readonly since?: string | undefined;
  /** Sent as the Last-Event-ID header. */
  readonly lastEventId?: string | undefined;
}

/** How a stream ended: `complete` when the server ended the response (its last chunk came), not when it was cut. */
export interface Closed {
  readonly complete: boolean;
}

/** One GET /plants/events, read as it arrives. */
export interface FeedReader {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  /** Every event received so far, in order (ready, plant events, end; heartbeats are comments, never events). */
  readonly received: readonly ServerSentEvent[];
  /** The body of an answer other than 200 (an Error body), once it has all arrived. */
  body(): Promise<string>;
  /** The next event not taken yet, waiting for it; rejects if the stream ends first. One wait at a time. */
  next(): Promise<ServerSentEvent>;
  /** Takes events until one that `until` accepts, which is the last of those returned. */
  takeUntil(until: (event: ServerSentEvent) => boolean): Promise<ServerSentEvent[]>;
  /** The id to resume from: the last id of an event received (as EventSource's Last-Event-ID). */
  readonly lastEventId: string;
  /** Settles once the response has ended, whoever ended it. */
  readonly closed: Promise<Closed>;
  /** Drops the connection, as a client going away does. */
  close(): void;
}

/**
 * Opens GET /plants/events on `base` with `token`, resolving once the answer's head has arrived; closed
 * when the test ends. A test waits for what it needs (next, takeUntil, closed); a wait that passes
 * HANG_MS is a hang, and fails with what the stream brought.
 */
export function openFeed(t: TestContext, base: string, token: string, { since, lastEventId }: FeedRequest = {}): Promise<FeedReader> {
  const url = new URL('/plants/events', base);
  if (since !== undefined) url.searchParams.set('since', since);
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'text/event-stream' };
  if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
  return new Promise((resolve, reject) => {
    // agent: false: a connection of its own, so that dropping it drops this stream alone.
    const req = http.get(url, { headers, agent: false });
    t.after(() => req.destroy());
    req.on('error', reject);
    req.on('response', (res) => {
      req.off('error', reject);
      // A cut connection errors the request: the stream's end, which `closed` says.
      req.on('error', () => undefined);
      const parser = new SseParser();
      const received: ServerSentEvent[] = [];
      let taken = 0;
      let text = '';
      let ended = false;
      let wake: (() => void) | undefined;
      const arrived = (events: ServerSentEvent[]) => {
        received.push(...events);
        wake?.();
      };
      res.on('data', (chunk: Buffer) => {
        if (res.statusCode === 200) arrived(parser.push(chunk));
        else text += chunk.toString('utf8');
      });
      const closed = new Promise<Closed>((done) => {
        res.on('close', () => {
          ended = true;
          if (res.statusCode === 200) arrived(parser.end());
          wake?.();
          done({ complete: res.complete });
        });
      });
      const shown = () => `${url.pathname}${url.search} received ${JSON.stringify(received)}`;
      const next = async (): Promise<ServerSentEvent> => {
        if (taken === received.length) {
          if (ended) throw new Error(`the stream ended before the next event: ${shown()}`);
          if (wake !== undefined) throw new Error('a stream is read by one wait at a time');
          let hang: NodeJS.Timeout | undefined;
          try {
            await new Promise<void>((woken, hung) => {
              wake = woken;
              hang = setTimeout(() => hung(new Error(`no event in ${HANG_MS} ms: ${shown()}`)), HANG_MS);
            });
          } finally {
            wake = undefined;
            clearTimeout(hang);
          }
          return next();
        }
        return received[taken++] as ServerSentEvent;
      };
      resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        received,
        body: async () => {
          await closed;
          return text;
        },
        next,
        async takeUntil(until) {
          const events: ServerSentEvent[] = [];
          for (;;) {
            const event = await next();
            events.push(event);
            if (until(event)) return events;
          }
        },
        get lastEventId() {
          return parser.lastEventId;
        },
        closed,
        close: () => req.destroy(),
      });
    });
  });
}

/** Opens a stream that must be answered 200, and takes its ready event; returns the reader and the ready id. */
export async function subscribe(t: TestContext, base: string, token: string, from: FeedRequest = {}): Promise<{ feed: FeedReader; ready: string }> {
  const feed = await openFeed(t, base, token, from);
  if (feed.status !== 200) throw new Error(`GET /plants/events answered ${feed.status}: ${await feed.body()}`);
  const first = await feed.next();
  if (first.type !== 'ready') throw new Error(`the first event is ${JSON.stringify(first)}, not ready`);
  return { feed, ready: first.lastEventId };
}
