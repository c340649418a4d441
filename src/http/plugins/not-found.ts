import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import { ApiError, ERRORS } from '../errors.js';

/**
 * The not-found handler. RFC 9110 §15.5.6: a method the target resource does not support is 405 with an
 * Allow header, not 404. Which methods a path supports is asked of the router when no route matched, so a
 * route declared anywhere, at any time, counts: there is nothing to register last, and the request path
 * pays nothing. Methods Fastify does not route at all (PROPFIND) arrive here too.
 */
export function notFoundOrNotAllowed(app: FastifyInstance): (request: FastifyRequest, reply: FastifyReply) => never {
  return (request, reply) => {
    const allowed = app.supportedMethods.filter((method) => {
      const route = app.findRoute({ method: method as HTTPMethods, url: request.url });
      // The CORS preflight's OPTIONS * answers for every path; it makes no resource. Other wildcard
      // routes do (GET /docs/static/*: Swagger UI's files).
      return route !== null && !(method === 'OPTIONS' && route.params['*'] !== undefined);
    });
    // A route of this method that sends its request here (a file @fastify/static does not have) is a 404.
    if (allowed.length === 0 || allowed.includes(request.method)) throw new ApiError(ERRORS.routeNotFound);
    reply.header('allow', allowed.sort().join(', '));
    throw new ApiError(ERRORS.methodNotAllowed);
  };
}
