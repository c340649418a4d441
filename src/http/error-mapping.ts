/**
 * What anything thrown while handling a request is answered with, as a row of the error table: the store's
 * errors, Fastify's own, and a request that fails its route's schema, whose ajv message is put in words a
 * client can act on. Apart from the table (errors.ts) because it knows the forms the schemas check (the
 * patterns of the domain, the webhooks and the plant listing's cursor) and the store's error classes,
 * which the table, imported by nearly every module of http/, should not drag in.
 */
import type { FastifyError } from 'fastify';
import { DURATION, DURATION_RULE } from '../domain/duration.js';
import { STORABLE_TEXT } from '../domain/plant.js';
import { StoreNotOpenError, StoreUnavailableError } from '../store/store.js';
import { OVERLAP, OVERLAP_RULE, RFC3339, SINCE_RULE } from '../webhooks/operations.js';
import { URL_FORM, URL_FORM_RULE } from '../webhooks/register.js';
import { ApiError, ERRORS, RETRY_AFTER, type ErrorRow } from './errors.js';
import { CURSOR_PATTERN, CURSOR_REFUSED } from './routes/plants/cursor-form.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The row a body that fails this route's schema is answered with. Default: invalidNewPlant (40002),
     * the plant routes' row; the webhook routes say invalidWebhook (40005), POST /tokens invalidTokenRequest (40007).
     */
    invalidBody?: ErrorRow;
  }
}

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
