/**
 * The live feed of plants (GET /plants/events, server-sent events) as an async iterator that reconnects
 * by itself. Read with fetch rather than EventSource: a browser's EventSource cannot send the
 * Authorization header, and Node.js has none.
 */
import { errorOfAnswer, unexpectedAnswer } from './error.js';
import { parseWithExactInteger } from './ids.js';
import { SseParser, type ServerSentEvent } from './sse.js';
import { backoffMs, networkFailure, retryAfterMs, sleep, type RetryPolicy } from './transport.js';

/** A plant as the feed carries it: with its id, the exact int64. */
export interface FeedPlant {
  id: bigint;
  name: string;
  tag?: string;
}

/**
 * What watchPlants yields. `ready` comes first, once: the position the feed continues after (the
 * `since` given, or the end of the log when the watch began), for "list, then follow". Then each
 * plant's creation and deletion, in order; `id` is the event's, to resume from with `since`.
 */
export type FeedEvent =
  | { type: 'ready'; id: string }
  | { type: 'plant.created' | 'plant.deleted'; id: string; plant: FeedPlant };

export interface WatchOptions {
  /** Continue after this event id (a `ready` or plant event's `id`); without it, the feed starts now. */
  since?: string | undefined;
  /** Ends the iteration (it returns; nothing is thrown) and closes the stream. */
  signal?: AbortSignal | undefined;
  /**
   * A stream that brings nothing for this long, not even a heartbeat, is taken for a dead connection
   * (one cut without a word, as mobile networks and NATs do) and reconnected, in ms; default 45 000,
   * three of the server's default heartbeats; 0: never.
   */
  idleTimeoutMs?: number | undefined;
}

const DEFAULT_IDLE_TIMEOUT_MS = 45_000;

/** How a stream that opened came to an end. */
type Ending = 'dropped' | 'reconnect' | 'revoked';

/** The API's code for a token that has as many streams open as it may (429). */
const STREAMS_LIMITED = 42902;

interface State {
  /** The id to continue after: the last event's, or `since` until one came. */
  resume: string | undefined;
  readyYielded: boolean;
  /** The server's `retry:` (ms), the wait before reconnecting; kept across streams. */
  retryMs: number | undefined;
}

const EVENT_STREAM = /^text\/event-stream\s*(;|$)/i;

function plantEvent(event: ServerSentEvent, type: 'plant.created' | 'plant.deleted'): FeedEvent {
  const parsed = parseWithExactInteger(event.data, 'id');
  const name = parsed?.object.name;
  const tag = parsed?.object.tag;
  if (parsed === undefined || typeof name !== 'string' || (tag !== undefined && typeof tag !== 'string')) {
    throw unexpectedAnswer(200, `a plant in the ${type} event ${JSON.stringify(event.lastEventId)}`);
  }
  return { type, id: event.lastEventId, plant: tag === undefined ? { id: parsed.value, name } : { id: parsed.value, name, tag } };
}

function endReason(data: string): unknown {
  try {
    return (JSON.parse(data) as { reason?: unknown } | null)?.reason;
  } catch {
    return undefined;
  }
}

/** What a stream reader's read() gives (named so: Node.js's own types do not name it). */
type Piece = Awaited<ReturnType<ReadableStreamDefaultReader<Uint8Array>['read']>>;

/** The next piece of a stream, or 'idle' when none came within `ms` (0: however long it takes). */
async function nextWithin(reader: ReadableStreamDefaultReader<Uint8Array>, ms: number): Promise<Piece | 'idle'> {
  if (ms === 0) return reader.read();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const idle = new Promise<'idle'>((resolve) => {
    timer = setTimeout(() => resolve('idle'), ms);
  });
  try {
    return await Promise.race([reader.read(), idle]);
  } finally {
    clearTimeout(timer);
  }
}

/** Yields one stream's events until it ends, and says how it ended. */
async function* read(body: ReadableStream<Uint8Array>, state: State, signal: AbortSignal, idleMs: number): AsyncGenerator<FeedEvent, Ending, undefined> {
  const parser = new SseParser();
  const reader = body.getReader();
  try {
    for (;;) {
      let chunk: Piece | 'idle';
      try {
        chunk = await nextWithin(reader, idleMs);
      } catch {
        return 'dropped'; // the connection broke (or the watch was aborted: the caller looks)
      }
      if (chunk === 'idle') return 'dropped'; // the read left waiting ends as the reader is cancelled
      const events = chunk.done ? parser.end() : parser.push(chunk.value);
      if (parser.retryMs !== undefined) state.retryMs = parser.retryMs;
      for (const event of events) {
        // Aborted while the consumer had an event: the others read with it are not given.
        if (signal.aborted) return 'dropped';
        // Every event's id counts, one of a type this client skips too, as EventSource's Last-Event-ID.
        if (event.lastEventId !== '') state.resume = event.lastEventId;
        if (event.type === 'ready') {
          if (!state.readyYielded && state.resume !== undefined) {
            state.readyYielded = true;
            yield { type: 'ready', id: state.resume };
          }
        } else if (event.type === 'plant.created' || event.type === 'plant.deleted') {
          yield plantEvent(event, event.type);
        } else if (event.type === 'end') {
          // slow-reader, shutting-down, or one this client does not know: reconnect from the last id.
          return endReason(event.data) === 'token-revoked' ? 'revoked' : 'reconnect';
        }
        // Another event type is one a later server added: skipped.
      }
      if (chunk.done) return 'dropped';
    }
  } finally {
    // Closes the connection when the iteration stops early (break, an abort, an end event).
    reader.cancel().catch(() => undefined);
  }
}

/**
 * Follows the feed at `url` for good: after a dropped stream, an `end` asking to reconnect, a 503 or a
 * network failure it reconnects with the last event id received (as `since`), waiting the server's
 * `retry:` first. Attempts that open no stream are bounded by the policy's retries (a stream that
 * opens starts the count again) and backed off from the server's `retry:`; a 503's Retry-After beyond
 * maxRetryDelayMs is thrown. A reconnect's 429 42902 is retried as a 503 is. Every other refusal (400,
 * 401, 403, 410, 429…) is thrown as a PlantStoreError; a revoked token ends with the reconnect's 401.
 */
export async function* watch(
  fetchImpl: typeof fetch, url: URL, headers: Headers, policy: RetryPolicy, { since, signal, idleTimeoutMs = DEFAULT_IDLE_TIMEOUT_MS }: WatchOptions,
): AsyncGenerator<FeedEvent, void, undefined> {
  if (!(idleTimeoutMs >= 0 && Number.isFinite(idleTimeoutMs))) throw new RangeError('idleTimeoutMs must be 0 or more');
  if (signal?.aborted) return;
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  const state: State = { resume: since, readyYielded: false, retryMs: undefined };
  /** Attempts in a row that opened no stream. */
  let failures = 0;
  /** A stream was open before: its reconnect may find the old one still counted (see below). */
  let opened = false;
  let wait = 0;
  try {
    for (;;) {
      if (wait > 0) await sleep(wait, controller.signal);
      // The resume point travels as `since`, which the server takes as it takes Last-Event-ID: a page may
      // send a query to another origin, where a Last-Event-ID header the server's CORS_ORIGINS answer does
      // not allow would be refused by the browser before the request left (a network failure, retried in vain).
      const target = new URL(url);
      if (state.resume !== undefined) target.searchParams.set('since', state.resume);
      let response: Response;
      try {
        response = await fetchImpl(target, { method: 'GET', headers, signal: controller.signal, redirect: 'manual' });
      } catch (cause) {
        if (signal?.aborted) return;
        if (failures >= policy.retries) throw networkFailure(cause);
        wait = backoffMs(failures++, policy.maxRetryDelayMs, state.retryMs);
        continue;
      }
      if (response.status !== 200) {
        const asked = retryAfterMs(response.headers.get('retry-after'));
        // A body cut off is no reason to lose the status: it is reported without the server's message.
        const error = errorOfAnswer(response.status, response.statusText, await response.text().catch(() => ''), asked);
        // Only a 503 says another attempt may be served (this instance is full, or not serving yet), and,
        // on a reconnect, a 429 42902: the stream just lost may still count against the token's limit
        // until the server finds it gone.
        if (response.status !== 503 && !(opened && error.error === STREAMS_LIMITED)) throw error;
        wait = asked ?? backoffMs(failures, policy.maxRetryDelayMs, state.retryMs);
        if (failures >= policy.retries || wait > policy.maxRetryDelayMs) throw error;
        failures++;
        continue;
      }
      if (response.body === null || !EVENT_STREAM.test(response.headers.get('content-type') ?? '')) {
        await response.body?.cancel();
        throw unexpectedAnswer(200, 'an event stream');
      }
      failures = 0;
      opened = true;
      const ending = yield* read(response.body, state, controller.signal, idleTimeoutMs);
      if (signal?.aborted) return;
      // A revoked token: at once, for the 401 that says so. Otherwise after the server's wait, jittered
      // (every reader of an instance that stops is told to reconnect at the same moment).
      wait = ending === 'revoked' ? 0 : backoffMs(0, policy.maxRetryDelayMs, state.retryMs);
    }
  } catch (error) {
    // An abort rejects whatever was awaited (the fetch, a read, a wait) with its reason: the watch just ends.
    if (signal?.aborted) return;
    throw error;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    controller.abort();
  }
}
