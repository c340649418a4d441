import { errorOfAnswer, NOT_AN_API_ERROR, PlantStoreError } from './error.js';

export interface RetryPolicy {
  /** Attempts after the first one. */
  readonly retries: number;
  /** The longest wait before one retry. */
  readonly maxRetryDelayMs: number;
}

export interface Outgoing {
  readonly method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  readonly url: URL;
  readonly headers: Headers;
  readonly body?: string;
  readonly signal?: AbortSignal | undefined;
}

/** An answer read to its end, other than a retried 429 or 503. */
export interface Answer {
  readonly status: number;
  readonly statusText: string;
  readonly headers: Headers;
  readonly text: string;
  /**
   * Whether an earlier attempt may have been carried out by the server though its answer was not seen
   * (a network failure, or a 503 whose cause may come after the store wrote: 50300 or another server's).
   */
  readonly uncertain: boolean;
}

/**
 * 503s raised before the request reaches its handler, so nothing of it was carried out: not serving,
 * identity provider out of reach, too many connections from this address.
 */
const REFUSED_BEFORE_HANDLING = new Set([50301, 50302, 50303]);
/** The first wait when the server names none (no Retry-After, or a network failure); doubled each retry. */
const BACKOFF_START_MS = 500;

/** A Retry-After value (RFC 9110 §10.2.3: delay-seconds or an HTTP-date) in milliseconds from now. */
export function retryAfterMs(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^[0-9]+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * Exponential from `startMs`, with jitter so that clients cut off together do not come back together.
 * The feed starts from the server's `retry:` value instead.
 */
export function backoffMs(retry: number, maxMs: number, startMs: number = BACKOFF_START_MS): number {
  const ms = Math.min(maxMs, startMs * 2 ** retry);
  return ms / 2 + (Math.random() * ms) / 2;
}

export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** undici says "fetch failed" and puts the socket's error (ECONNREFUSED, …) in its own cause. */
const socketError = (cause: unknown) => (cause as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;

export function networkFailure(cause: unknown): PlantStoreError {
  const inner = socketError(cause);
  const detail = typeof inner?.code === 'string' ? inner.code : typeof inner?.message === 'string' ? inner.message : undefined;
  const message = cause instanceof Error ? cause.message : String(cause);
  return new PlantStoreError(0, NOT_AN_API_ERROR, `network failure: ${message}${detail === undefined ? '' : ` (${detail})`}`, { cause });
}

/**
 * Sends a request, retrying what the server asked to have retried (429, 503) after its Retry-After, and
 * network failures after a backoff, at most `retries` times. A wait the server asks for beyond
 * maxRetryDelayMs is not waited for: that error is thrown at once. An abort of `signal` rejects with
 * its reason, at any point.
 */
export async function send(fetchImpl: typeof fetch, request: Outgoing, policy: RetryPolicy): Promise<Answer> {
  const { method, url, headers, body, signal } = request;
  let uncertain = false;
  for (let retry = 0; ; retry++) {
    signal?.throwIfAborted();
    let answer: Omit<Answer, 'uncertain'>;
    try {
      // No redirects: the API has none, and a redirected POST would arrive as a GET without its body.
      const response = await fetchImpl(url, { method, headers, body: body ?? null, signal: signal ?? null, redirect: 'manual' });
      answer = { status: response.status, statusText: response.statusText, headers: response.headers, text: await response.text() };
    } catch (cause) {
      if (signal?.aborted) throw signal.reason;
      if (retry >= policy.retries) throw networkFailure(cause);
      // A refused connection carried no request; any other failure may have come after the server acted.
      if (socketError(cause)?.code !== 'ECONNREFUSED') uncertain = true;
      await sleep(backoffMs(retry, policy.maxRetryDelayMs), signal);
      continue;
    }
    if (answer.status !== 429 && answer.status !== 503) return { ...answer, uncertain };
    const asked = retryAfterMs(answer.headers.get('retry-after'));
    const error = errorOfAnswer(answer.status, answer.statusText, answer.text, asked);
    const wait = asked ?? backoffMs(retry, policy.maxRetryDelayMs);
    if (retry >= policy.retries || wait > policy.maxRetryDelayMs) throw error;
    if (answer.status === 503 && !REFUSED_BEFORE_HANDLING.has(error.error)) uncertain = true;
    await sleep(wait, signal);
  }
}
