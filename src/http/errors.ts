export interface ErrorRow {
  readonly status: number;
  /** HTTP status × 100 + a detail number: stable, documented, int32. */
  readonly code: number;
  /** The default message, and the meaning documented in docs/api.md and /openapi.json. */
  readonly message: string;
  /**
   * The `reason` label plantstore_auth_refusals_total counts this row's refusals under
   * (http/plugins/metrics.ts); rows without one are not counted there. A 401 invalid_token has none: it
   * is counted by its verifier's reason instead (unknown, expired, jwt_signature…).
   */
  readonly metricLabel?: string;
}

/**
 * Every error this API can answer, one row each. The error table of docs/api.md is checked against this
 * one by test/contract/docs.test.ts, /openapi.json is generated from it (http/schemas.ts), and the refusal
 * metric's labels are its `metricLabel` column.
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
  invalidEventId: {
    status: 400, code: 40009, message: 'The Last-Event-ID header or the since parameter is not an event id of the feed (GET /plants/events)',
  },
  missingToken: { status: 401, code: 40100, message: 'A bearer token is required', metricLabel: 'missing_token' },
  invalidToken: { status: 401, code: 40101, message: 'The bearer token is unknown, expired or revoked' },
  insufficientScope: { status: 403, code: 40300, message: 'The token lacks the scope this operation needs', metricLabel: 'insufficient_scope' },
  adminRequired: {
    status: 403, code: 40301, message: 'This operation needs an admin token (token create --admin, or a JWT with plants:admin)',
    metricLabel: 'admin_required',
  },
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
  feedExpired: {
    status: 410, code: 41000,
    message: 'The feed no longer keeps the events after this id (FEED_RETENTION), or it is not one of its ids: list the plants again, then watch from the new stream\'s ready id',
  },
  bodyTooLarge: { status: 413, code: 41300, message: 'The request body is larger than the limit (MAX_BODY_SIZE)' },
  urlTooLong: { status: 414, code: 41400, message: 'The request URL is longer than the limit (MAX_URL_LENGTH)' },
  unsupportedMediaType: { status: 415, code: 41500, message: 'The request body must be application/json (UTF-8)' },
  expectationFailed: { status: 417, code: 41700, message: 'The Expect header asks for something other than 100-continue' },
  rateLimited: { status: 429, code: 42900, message: 'Too many requests with this token; see Retry-After', metricLabel: 'rate_limit' },
  authFailuresLimited: {
    status: 429, code: 42901, message: 'Too many failed authentications from this address; see Retry-After', metricLabel: 'failure_limit',
  },
  tooManyStreams: {
    status: 429, code: 42902, message: 'This token already has as many feed streams open on this instance as allowed (FEED_MAX_STREAMS_PER_TOKEN)',
  },
  headersTooLarge: { status: 431, code: 43100, message: 'The request headers are too large (MAX_HEADER_SIZE)' },
  internal: { status: 500, code: 50000, message: 'Internal error' },
  storeUnavailable: { status: 503, code: 50300, message: 'The store is unavailable; retry shortly' },
  notServing: { status: 503, code: 50301, message: 'This instance is starting or shutting down; retry (another instance)' },
  identityProviderUnavailable: {
    status: 503, code: 50302,
    message: 'The identity provider cannot be reached to fetch the key this JWT names; retry (see Retry-After)',
    metricLabel: 'provider_unavailable',
  },
  tooManyConnections: {
    status: 503, code: 50303,
    message: 'The server is near MAX_CONNECTIONS and this client address holds its share (MAX_CONNECTIONS_PER_ADDRESS); retry (see Retry-After)',
  },
  feedFull: {
    status: 503, code: 50304, message: 'This instance has as many feed streams open as allowed (FEED_MAX_STREAMS); retry (another instance), see Retry-After',
  },
} as const satisfies Record<string, ErrorRow>;

export const ERROR_ROWS: readonly ErrorRow[] = Object.values(ERRORS);

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

/** A store outage is usually brief (a failover, a restart); clients may retry after this many seconds. */
export const RETRY_AFTER = { 'retry-after': '2' };

