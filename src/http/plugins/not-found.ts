import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods, preParsingHookHandler } from 'fastify';
import { ApiError, ERRORS } from '../errors.js';

/**
 * The not-found handler. RFC 9110 §15.5.6: a method the target resource does not support is 405 with an
 * Allow header, not 404. Which methods a path supports is asked of the router when no route matched, so a
 * route declared anywhere, at any time, counts: there is nothing to register last, and the request path
 * pays nothing. Methods Fastify does not route at all (PROPFIND, QUERY) arrive here too.
 *
 * `preParsing` decides before the body is looked at: Fastify checks a body before any handler runs, the
 * not-found one included, so a request no route takes was answered about its body (QUERY without
 * Content-Type: 400 in Fastify's words; a body over MAX_BODY_SIZE: 413) instead of 404 or 405. It runs
 * after every onRequest hook (CORS headers, framing checks), and for unmatched requests only. Fastify's
 * types declare only preValidation and preHandler for setNotFoundHandler, but it gives the not-found
 * route every lifecycle hook its options name (test/api/protocol.test.ts fails if that ever changes).
 * `handler` remains for routes that send their request here themselves (reply.callNotFound: a file
 * @fastify/static does not have), whose body was read already.
 */
export function notFoundOrNotAllowed(app: FastifyInstance): {
  readonly hooks: { readonly preParsing: preParsingHookHandler };
  readonly handler: (request: FastifyRequest, reply: FastifyReply) => never;
} {
  const refusal = (request: FastifyRequest, reply: FastifyReply): ApiError => {
    const allowed = app.supportedMethods.filter((method) => {
      const route = app.findRoute({ method: method as HTTPMethods, url: request.url });
      // The CORS preflight's OPTIONS * answers for every path; it makes no resource. Other wildcard
      // routes do (GET /docs/static/*: Swagger UI's files).
      return route !== null && !(method === 'OPTIONS' && route.params['*'] !== undefined);
    });
    // A route of this method that sends its request here (a file @fastify/static does not have) is a 404.
    if (allowed.length === 0 || allowed.includes(request.method)) return new ApiError(ERRORS.routeNotFound);
    reply.header('allow', allowed.sort().join(', '));
    return new ApiError(ERRORS.methodNotAllowed);
  };
  return {
    hooks: { preParsing: (request, reply, _payload, done) => done(refusal(request, reply)) },
    handler: (request, reply) => {
      throw refusal(request, reply);
    },
  };
}
