import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyError } from 'fastify';
import { Type } from 'typebox';
import { DURATION, DURATION_RULE } from '../domain/duration.js';
import { STORABLE_TEXT } from '../domain/plant.js';
import { CURSOR_PATTERN, CURSOR_REFUSED } from './routes/plants/cursor-form.js';
import { SECURITY_HEADERS } from './plugins/security-headers.js';
import { StoreNotOpenError, StoreUnavailableError } from '../store/store.js';
import { OVERLAP, OVERLAP_RULE, RFC3339, SINCE_RULE } from '../webhooks/operations.js';
import { URL_FORM, URL_FORM_RULE } from '../webhooks/register.js';

export interface ErrorRow {
  readonly status: number;
  /** HTTP status × 100 + a detail number: stable, documented, int32. */
  readonly code: number;
  /** The default message, and the meaning documented in docs/api.md and /openapi.json. */
  readonly message: string;
}

/**
 * Every error this API can answer, one row each. The error table of docs/api.md is checked against this
 * one by test/contract/docs.test.ts, and /openapi.json is generated from it.
 */
export const ERRORS = {
  badRequest: { status: 400, code: 40000, message: 'The request is malformed (URL, headers or framing)' },
  malformedJson: { status: 400, code: 40001, message: 'The request body is not valid JSON (or not UTF-8, or empty)' },
  invalidNewPlant: { status: 400, code: 40002, message: 'The request body is not a valid NewPlant' },
  invalidQuery: { status: 400, code: 40003, message: 'A query parameter (limit, tag, cursor) is invalid' },
  invalidPath: { status: 400, code: 40004, message: 'The plant id in the path is not a 64-bit integer' },
  invalidWebhook: { status: 400, code: 40005, message: 'The request body is not a valid webhook endpoint (url, description)' },
  privateDestination: {
    status: 400, code: 40006,
    message: 'The webhook URL points at a loopback, private, link-local, unspecified or multicast address (WEBHOOK_ALLOW_PRIVATE)',
  },
  invalidTokenRequest: { status: 400, code: 40007, message: 'The request body is not a valid token request' },
  invalidWebhookOperation: {
    status: 400, code: 40008, message: 'The request body is not a valid webhook operation (since: an RFC 3339 time; overlap: 0 or a duration up to 7d)',
  },
  missingToken: { status: 401, code: 40100, message: 'A bearer token is required' },
  invalidToken: { status: 401, code: 40101, message: 'The bearer token is unknown, expired or revoked' },
  insufficientScope: { status: 403, code: 40300, message: 'The token lacks the scope this operation needs' },
  adminRequired: { status: 403, code: 40301, message: 'This operation needs an admin token (token create --admin, or a JWT with plants:admin)' },
  routeNotFound: { status: 404, code: 40400, message: 'No such route' },
  plantNotFound: { status: 404, code: 40401, message: 'The caller has no plant with this id' },
  webhookNotFound: { status: 404, code: 40402, message: 'The caller has no webhook endpoint with this id' },
  tokenNotFound: { status: 404, code: 40403, message: 'The caller has no unrevoked token with this id' },
  webhookEventNotFound: {
    status: 404, code: 40404, message: 'The webhook endpoint has no event with this id that it still receives (kept WEBHOOK_RETENTION after it ends)',
  },
  methodNotAllowed: { status: 405, code: 40500, message: 'Method not allowed on this route (see the Allow header)' },
  requestTimeout: { status: 408, code: 40800, message: 'The request was not received in time' },
  idConflict: { status: 409, code: 40900, message: 'A different plant with this id already exists' },
  webhookLimit: { status: 409, code: 40901, message: 'The user already has as many webhook endpoints as allowed (WEBHOOK_MAX_PER_USER)' },
  webhookDisabled: { status: 409, code: 40902, message: 'The webhook endpoint is disabled: enable it first (PATCH with "enabled": true)' },
  webhookQueueFull: {
    status: 409, code: 40903,
    message: 'This would pass the events test, resend and recover may have queued for the user (WEBHOOK_MAX_QUEUED_PER_USER); nothing was queued',
  },
  bodyTooLarge: { status: 413, code: 41300, message: 'The request body is larger than the limit (MAX_BODY_SIZE)' },
  urlTooLong: { status: 414, code: 41400, message: 'The request URL is longer than the limit (MAX_URL_LENGTH)' },
  unsupportedMediaType: { status: 415, code: 41500, message: 'The request body must be application/json (UTF-8)' },
  expectationFailed: { status: 417, code: 41700, message: 'The Expect header asks for something other than 100-continue' },
  rateLimited: { status: 429, code: 42900, message: 'Too many requests with this token; see Retry-After' },
  authFailuresLimited: { status: 429, code: 42901, message: 'Too many failed authentications from this address; see Retry-After' },
  headersTooLarge: { status: 431, code: 43100, message: 'The request headers are too large (MAX_HEADER_SIZE)' },
  internal: { status: 500, code: 50000, message: 'Internal error' },
  storeUnavailable: { status: 503, code: 50300, message: 'The store is unavailable; retry shortly' },
  notServing: { status: 503, code: 50301, message: 'This instance is starting or shutting down; retry (another instance)' },
  identityProviderUnavailable: {
    status: 503, code: 50302,
    message: 'The identity provider cannot be reached to fetch the key this JWT names; retry (see Retry-After)',
  },
  tooManyConnections: {
    status: 503, code: 50303,
    message: 'The server is near MAX_CONNECTIONS and this client address holds its share (MAX_CONNECTIONS_PER_ADDRESS); retry (see Retry-After)',
  },
} as const satisfies Record<string, ErrorRow>;

export const ERROR_ROWS: readonly ErrorRow[] = Object.values(ERRORS);

/** The table of every row, in Markdown: the `Error` schema's description in /openapi.json, and docs/api.md's table. */
export function errorTableMarkdown(): string {
  const rows = ERROR_ROWS.map((r) => `| ${r.code} | ${r.status} | ${r.message} |`);
  return ['| error | status | meaning |', '|---|---|---|', ...rows].join('\n');
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The row a body that fails this route's schema is answered with. Default: invalidNewPlant (40002),
     * the plant routes' row; the webhook routes say invalidWebhook (40005), POST /tokens invalidTokenRequest (40007).
     */
    invalidBody?: ErrorRow;
  }
}

export class ApiError extends Error {
  readonly row: ErrorRow;
  readonly headers: Readonly<Record<string, string>>;

  constructor(row: ErrorRow, message: string = row.message, headers: Readonly<Record<string, string>> = {}) {
    super(message);
    this.row = row;
    this.headers = headers;
  }

  /** Fastify reads this to decide the status of errors raised before a handler runs. */
  get statusCode(): number {
    return this.row.status;
  }
}

export const ErrorSchema = Type.Object(
  {
    error: Type.Integer({
      format: 'int32',
      enum: ERROR_ROWS.map((r) => r.code),
      description: 'HTTP status × 100 + detail; see the table in this schema\'s description',
    }),
    message: Type.String(),
  },
  {
    $id: 'Error',
    additionalProperties: false,
    // The whole table lives here, in a section of its own further down /docs, so that the page opens on
    // Authorize and the operations rather than on thirty rows of codes.
    description: [
      'The body of every non-2xx answer. `error` is stable: the HTTP status × 100 + a detail number; `message` adds detail ' +
        'for the client (which field, which scope), and a 5xx\'s carries a request id, never internal text.',
      '',
      errorTableMarkdown(),
    ].join('\n'),
  },
);

/** A store outage is usually brief (a failover, a restart); clients may retry after this many seconds. */
export const RETRY_AFTER = { 'retry-after': '2' };

const BY_FASTIFY_CODE: Record<string, ErrorRow> = {
  FST_ERR_BAD_URL: ERRORS.badRequest,
  FST_ERR_CTP_BODY_TOO_LARGE: ERRORS.bodyTooLarge,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ERRORS.unsupportedMediaType,
  FST_ERR_CTP_EMPTY_JSON_BODY: ERRORS.malformedJson,
};

/** The rows of validation errors outside the body (whose row is the route's: see toApiError). */
const BY_VALIDATION_CONTEXT: Record<string, ErrorRow> = {
  querystring: ERRORS.invalidQuery,
  params: ERRORS.invalidPath,
};

type ValidationDetail = NonNullable<FastifyError['validation']>[number];

/** Ajv's message, in words a client can act on where ajv's would quote a pattern or hide the choices. */
function validationReason(first: ValidationDetail | undefined): string | undefined {
  if (first?.params.pattern === STORABLE_TEXT) return 'must not contain U+0000 or unpaired surrogates';
  if (first?.params.pattern === DURATION.source) return DURATION_RULE;
  if (first?.params.pattern === URL_FORM) return URL_FORM_RULE;
  if (first?.params.pattern === CURSOR_PATTERN) return CURSOR_REFUSED;
  if (first?.params.pattern === RFC3339) return SINCE_RULE;
  if (first?.params.pattern === OVERLAP) return OVERLAP_RULE;
  // Any other pattern: a regular expression is no message for a client.
  if (first?.keyword === 'pattern') return 'does not have the form it must have';
  if (first?.keyword === 'minLength' && first.params.limit === 1) return 'must not be empty';
  const allowed = first?.params.allowedValues;
  if (Array.isArray(allowed)) return `must be one of ${allowed.join(', ')}`;
  return first?.message;
}

/**
 * Maps anything thrown while handling a request to a row of the table. A body that fails its schema is
 * answered with `invalidBody`: the route's own row (its `config.invalidBody`), else 40002.
 */
export function toApiError(error: unknown, invalidBody: ErrorRow = ERRORS.invalidNewPlant): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof StoreNotOpenError) return new ApiError(ERRORS.notServing, ERRORS.notServing.message, RETRY_AFTER);
  if (error instanceof StoreUnavailableError) return new ApiError(ERRORS.storeUnavailable, ERRORS.storeUnavailable.message, RETRY_AFTER);
  if (!(error instanceof Error)) return new ApiError(ERRORS.internal);
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) {
    const context = fastifyError.validationContext ?? '';
    const row = context === 'body' ? invalidBody : (BY_VALIDATION_CONTEXT[context] ?? ERRORS.badRequest);
    if (row === ERRORS.invalidPath) return new ApiError(row);
    const first = fastifyError.validation[0];
    const field = first?.instancePath.replace(/^\//, '').replaceAll('/', '.') || fastifyError.validationContext;
    return new ApiError(row, `${row.message}: ${field} ${validationReason(first)}`);
  }
  const row = BY_FASTIFY_CODE[fastifyError.code];
  if (row) return new ApiError(row);
  const status = fastifyError.statusCode;
  // Other client errors Fastify raises (bad URL encoding, bad Content-Length): their text is about the
  // request, never about our internals, so it is safe to pass on.
  if (status !== undefined && status >= 400 && status < 500) return new ApiError(ERRORS.badRequest, `${ERRORS.badRequest.message}: ${error.message}`);
  return new ApiError(ERRORS.internal);
}

/**
 * The same security headers as every other answer. No hook can add them here: these answers are written
 * on the socket by hand, since no ServerResponse (and so no Fastify reply) exists for them.
 */
const RAW_HEADERS = Object.entries(SECURITY_HEADERS).map(([name, value]) => `${name}: ${value}\r\n`).join('');

/**
 * Writes an Error answer straight onto a socket that no ServerResponse owns (a parser error, a CONNECT),
 * with the security headers every answer carries, and closes the connection: what follows on it cannot
 * be read as a request.
 */
export function writeRawError(socket: Duplex, row: ErrorRow, message: string = row.message): void {
  const body = JSON.stringify({ error: row.code, message });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${row.status} ${STATUS_CODES[row.status] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\n${RAW_HEADERS}` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/**
 * Errors Node's HTTP parser raises before any route runs (a garbled request line, oversized headers, a
 * request that never finished arriving). Fastify's default answer has a different body shape; this one
 * keeps the contract: every failure carries an Error body.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  // The parser may fail in a request's body after that request was answered (a route that answers
  // before reading the body, then a bad chunk): a second answer would be taken for the answer to the
  // next request. Node's own handler checks the same private field; the answer is flushed, then closed.
  if ((socket as Socket & { _httpMessage?: { headersSent: boolean } | null })._httpMessage?.headersSent) {
    socket.end(() => socket.destroy());
    return;
  }
  // A request answered in full before its body came (a refusal before the body is read), whose body then
  // stalls: Node is discarding the rest of that body (it marks the request `_dumped`), and the request
  // timeout fires on it. A 408 now would be a second answer to one request, which the client would take
  // for the answer to its next one. Everything was said already: close.
  if ((socket as Socket & { parser?: { incoming?: { _dumped?: boolean } | null } | null }).parser?.incoming?._dumped) {
    socket.end(() => socket.destroy());
    return;
  }
  const row =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? ERRORS.requestTimeout
    : error.code === 'HPE_HEADER_OVERFLOW' ? ERRORS.headersTooLarge
    : ERRORS.badRequest;
  writeRawError(socket, row);
}
