import type { FastifyInstance, preValidationHookHandler } from 'fastify';
import { EXACT_INT64, parseInt64 } from '../../domain/int64.js';
import { ApiError, ERRORS } from '../errors.js';
import { keepIdLiteral } from './json.js';

const DECIMAL = /^\d{1,15}$/;

/**
 * Query strings of routes that read them (those with a querystring schema) are checked strictly:
 *
 * - Percent-encoding must be valid and decode to UTF-8 (RFC 3986 §2.1, WHATWG URL). Fastify's parser keeps
 *   a badly encoded name or value as it was written, so `?tag=%C3` would have listed the tag "%C3" (and its
 *   next link would have named another tag, "%25C3"). Checked only when the query holds a '%'.
 * - With ajv's coercion off (see app.ts), integer parameters are converted here, and only from plain
 *   decimal digits: ajv's own coercion would also take "0x10", " 5" or "1e2". Anything else stays a
 *   string and fails the schema's `type: integer` with a 400.
 */
export function strictQuery(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const properties = (route.schema?.querystring as { properties?: Record<string, { type?: unknown }> } | undefined)
      ?.properties;
    if (properties === undefined) return;
    const integers = Object.entries(properties)
      .filter(([, schema]) => schema.type === 'integer')
      .map(([name]) => name);
    const check: preValidationHookHandler = (request, _reply, done) => {
      const bad = badlyEncoded(request.url);
      if (bad !== undefined) return done(new ApiError(ERRORS.invalidQuery, `${ERRORS.invalidQuery.message}: ${bad} is not valid percent-encoded UTF-8`));
      const query = request.query as Record<string, unknown>;
      for (const name of integers) {
        const value = query[name];
        if (typeof value === 'string' && DECIMAL.test(value)) query[name] = Number(value);
      }
      done();
    };
    route.preValidation = [check, ...[route.preValidation ?? []].flat()];
  });
}

/**
 * Path ids declared as exact int64 integers (`type: integer` with the EXACT_INT64 keyword, as DELETE
 * /plants/{id} is, and as the published document has it) are read from their digits: a decimal int64 in
 * plain digits becomes a number, so that `type: integer` takes it, and its digits are kept for the
 * keyword, which hands on the exact bigint (past 2^53 too). Anything else stays a string and fails the
 * schema: 400 40004.
 */
export function exactPathIds(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const properties = (route.schema?.params as { properties?: Record<string, Record<string, unknown>> } | undefined)?.properties;
    const exact = Object.entries(properties ?? {}).filter(([, schema]) => schema.type === 'integer' && schema[EXACT_INT64] === true);
    if (exact.length === 0) return;
    // The keyword reads the literal of an object's `id` only (a body's id, or this one).
    if (exact.length > 1 || exact[0]?.[0] !== 'id') throw new Error(`${route.url}: only a path parameter named id can be an exact int64`);
    const read: preValidationHookHandler = (request, _reply, done) => {
      const params = request.params as Record<string, unknown>;
      const digits = params.id;
      if (typeof digits === 'string' && parseInt64(digits) !== null) {
        params.id = Number(digits);
        keepIdLiteral(params, digits);
      }
      done();
    };
    route.preValidation = [read, ...[route.preValidation ?? []].flat()];
  });
}

/** Which parameter of the URL's query (`tag`, or `the name "%ZZ"`) has bad percent-encoding, if one does. */
export function badlyEncoded(url: string): string | undefined {
  const start = url.indexOf('?');
  if (start < 0 || !url.includes('%', start)) return undefined;
  for (const pair of url.slice(start + 1).split('&')) {
    const equals = pair.indexOf('=');
    const name = equals < 0 ? pair : pair.slice(0, equals);
    const decodedName = decoded(name);
    if (decodedName === undefined) return `the parameter name ${show(name)}`;
    if (equals >= 0 && decoded(pair.slice(equals + 1)) === undefined) return decodedName;
  }
  return undefined;
}

function decoded(text: string): string | undefined {
  if (!text.includes('%')) return text;
  try {
    // Throws on a '%' not followed by two hex digits and on bytes that are not UTF-8 (overlong forms,
    // surrogates, cut-short sequences).
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}

const show = (text: string): string => JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
