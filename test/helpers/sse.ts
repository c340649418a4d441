import { request, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
// The client package's parser (WHATWG §9.2.6), from its sources: test/unit/sse-parser.test.ts checks it.
import { SseParser, type ServerSentEvent } from '../../packages/client/src/sse.js';
import type { RawAnswer } from './raw-http.js';

export type { ServerSentEvent } from '../../packages/client/src/sse.js';

/**
 * Past this, a wait on a stream is taken for a hang (as eventually's bound): far beyond what any wait in
 * the suite needs on a loaded machine. A test's own timing promises are asserted by the test.
 */
const HANG_MS = 60_000;

export interface FeedRequest {
  readonly token?: string;
  /** The `since` query parameter, as it is (not encoded: tests send what they mean). */
  readonly since?: string;
  /** The Last-Event-ID header; an array sends the header once per value. */
  readonly lastEventId?: string | readonly string[];
  /** Nothing is read off the connection until `resume()`: a client that stopped reading. */
  readonly paused?: boolean;
}

/** The app's address, listening on a loopback port of its own first when it is not yet. */
export async function listening(app: FastifyInstance): Promise<string> {
  if (!app.server.listening) await app.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
}

/**
 * GET /plants/events over a real connection of its own (app.inject cannot stream), closed when the test
 * ends; `to` is an app (listening first if it is not yet) or a server's address (a server process).
 * Resolves once the answer's head has arrived, whatever its status.
 */
export async function openFeed(t: TestContext, to: FastifyInstance | string, { token, since, lastEventId, paused = false }: FeedRequest = {}): Promise<EventStream> {
  const base = typeof to === 'string' ? to : await listening(to);
  const headers: Record<string, string | string[]> = {};
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  if (lastEventId !== undefined) headers['last-event-id'] = typeof lastEventId === 'string' ? lastEventId : [...lastEventId];
  const path = `/plants/events${since === undefined ? '' : `?since=${since}`}`;
  // agent: false, a connection of its own (with Connection: close): one stream's connection is never
  // another request's, and it closes with its answer.
  const req = request(`${base}${path}`, { headers, agent: false });
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    req.once('response', resolve);
    req.once('error', reject);
    req.end();
  });
  const stream = new EventStream(res, paused);
  t.after(() => stream.close());
  return stream;
}

/**
 * One answer of GET /plants/events as a client reads it: everything received as text (the fields,
 * comments and blank lines as sent), and the events it makes, parsed as a browser does. Waits are
 * for what arrives, never for a time.
 */
export class EventStream {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** Everything received so far. */
  text = '';
  /** The events received so far, in order. */
  readonly events: ServerSentEvent[] = [];
  /** Resolves when the answer is over: `ended` when the server finished it, `cut` when the connection went first. */
  readonly finished: Promise<'ended' | 'cut'>;
  readonly #res: IncomingMessage;
  readonly #parser = new SseParser();
  readonly #decoder = new TextDecoder();
  readonly #waiters = new Set<() => boolean>();
  #end: 'ended' | 'cut' | undefined;
  #taken = 0;
  #reading = false;

  constructor(res: IncomingMessage, paused: boolean) {
    this.#res = res;
    this.status = res.statusCode ?? 0;
    this.headers = res.headers;
    res.on('error', () => undefined); // a cut connection: `finished` says so
    this.finished = new Promise((resolve) => {
      res.once('close', () => {
        this.#end = res.complete ? 'ended' : 'cut';
        this.#changed();
        resolve(this.#end);
      });
    });
    if (paused) res.pause();
    else this.resume();
  }

  /** Reads the connection (again): what the kernel and the client's buffers held first. */
  resume(): void {
    if (!this.#reading) {
      this.#reading = true;
      this.#res.on('data', (bytes: Buffer) => {
        this.text += this.#decoder.decode(bytes, { stream: true });
        this.events.push(...this.#parser.push(bytes));
        this.#changed();
      });
    }
    this.#res.resume();
  }

  /** Drops the connection (as a client that goes away). */
  close(): void {
    this.#res.destroy();
  }

  /**
   * Resolves with the first value `check` returns other than undefined, looked at again as each piece
   * of the stream arrives; rejects when the stream is over first (or at the hang bound), with what it got.
   */
  until<T>(check: () => T | undefined, what: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const fail = (why: string) => reject(new Error(`${what}: ${why}; the stream received:\n${this.text.slice(-3000)}`));
      const timer = setTimeout(() => {
        this.#waiters.delete(look);
        fail(`not reached in ${HANG_MS} ms`);
      }, HANG_MS);
      const look = (): boolean => {
        let value: T | undefined;
        try {
          value = check();
        } catch (error) {
          clearTimeout(timer);
          reject(error as Error);
          return true;
        }
        if (value === undefined && this.#end === undefined) return false;
        clearTimeout(timer);
        if (value !== undefined) resolve(value);
        else fail(`the stream was over (${this.#end})`);
        return true;
      };
      if (!look()) this.#waiters.add(look);
    });
  }

  /** The next event not taken yet. */
  next(): Promise<ServerSentEvent> {
    const i = this.#taken++;
    return this.until(() => this.events[i], `event ${i + 1}`);
  }

  /** Takes events until one that `until` accepts, which is the last of those returned. */
  async takeUntil(until: (event: ServerSentEvent) => boolean): Promise<ServerSentEvent[]> {
    const taken: ServerSentEvent[] = [];
    for (;;) {
      const event = await this.next();
      taken.push(event);
      if (until(event)) return taken;
    }
  }

  /** The id a client resumes from: the last id of the events received (as EventSource's Last-Event-ID). */
  get lastEventId(): string {
    return this.#parser.lastEventId;
  }

  /** The next `n` events not taken yet. */
  async take(n: number): Promise<ServerSentEvent[]> {
    const taken: ServerSentEvent[] = [];
    while (taken.length < n) taken.push(await this.next());
    return taken;
  }

  /** The first event of `type` (from the start of the stream, taken or not). */
  event(type: string): Promise<ServerSentEvent> {
    return this.until(() => this.events.find((e) => e.type === type), `an event ${type}`);
  }

  /** The whole answer of a refusal (a status other than 200), once its body has arrived. */
  async answer(): Promise<RawAnswer> {
    if (this.status === 200) {
      this.close();
      throw new Error('expected a refusal, the stream opened');
    }
    this.resume();
    await this.finished;
    const headers = Object.fromEntries(Object.entries(this.headers).map(([name, value]) => [name, String(value)]));
    return { status: this.status, headers, body: this.text };
  }

  #changed(): void {
    for (const look of [...this.#waiters]) if (look()) this.#waiters.delete(look);
  }
}

/** Opens a stream that must be answered 200, and takes its ready event: the stream, and the ready id. */
export async function subscribe(t: TestContext, to: FastifyInstance | string, request: FeedRequest): Promise<{ feed: EventStream; ready: string }> {
  const feed = await openFeed(t, to, request);
  if (feed.status !== 200) throw new Error(`GET /plants/events answered ${feed.status}: ${(await feed.answer()).body}`);
  const first = await feed.next();
  if (first.type !== 'ready') throw new Error(`the first event is ${JSON.stringify(first)}, not ready`);
  return { feed, ready: first.lastEventId };
}
