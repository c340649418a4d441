import type { components } from './generated/openapi.js';

/** The body of every non-2xx answer of the API. */
export type ErrorBody = components['schemas']['Error'];

/** `error` of a PlantStoreError that is not an API error body: a network failure, or another server's answer. */
export const NOT_AN_API_ERROR = 0;

/**
 * Every failure the client reports: an API error (`status` the HTTP status, `error` the numeric code of
 * the API's error table, `message` the server's), another server's answer (a proxy's 502 page: `error` 0,
 * the body's text is not kept), an answer that is not what the API sends (`error` 0), or a network
 * failure (`status` 0, `error` 0, the underlying error as `cause`).
 */
export class PlantStoreError extends Error {
  override readonly name = 'PlantStoreError';
  /** The HTTP status; 0 when no answer came (a network failure). */
  readonly status: number;
  /** The API's numeric error code (HTTP status × 100 + detail, e.g. 40401); 0 when the answer had none. */
  readonly error: number;
  /**
   * How long the server asked to wait before trying again (its Retry-After, in milliseconds), when it
   * said so: set on 429 and 503 answers the client did not retry (retries exhausted, or a wait beyond
   * maxRetryDelayMs).
   */
  readonly retryAfterMs: number | undefined;

  constructor(status: number, error: number, message: string, options: { cause?: unknown; retryAfterMs?: number | undefined } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = status;
    this.error = error;
    this.retryAfterMs = options.retryAfterMs;
  }
}

function isErrorBody(value: unknown): value is ErrorBody {
  if (typeof value !== 'object' || value === null) return false;
  const { error, message } = value as Record<string, unknown>;
  return Number.isInteger(error) && typeof message === 'string';
}

/** The error a non-success answer stands for, from its status and the text of its body. */
export function errorOfAnswer(status: number, statusText: string, text: string, retryAfterMs?: number): PlantStoreError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (isErrorBody(body)) return new PlantStoreError(status, body.error, body.message, { retryAfterMs });
  const described = statusText === '' ? `HTTP ${status}` : `HTTP ${status} ${statusText}`;
  return new PlantStoreError(status, NOT_AN_API_ERROR, `${described}: the answer is not a Plant Store error body`, { retryAfterMs });
}

/** A success status whose body is not what the API sends (a proxy's page, a truncated answer). */
export function unexpectedAnswer(status: number, expected: string): PlantStoreError {
  return new PlantStoreError(status, NOT_AN_API_ERROR, `HTTP ${status}: the answer is not ${expected}`);
}
