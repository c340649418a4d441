import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import { ApiError, ERRORS } from './errors.js';

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
      // A wildcard route (the CORS preflight's OPTIONS *) answers for every path; it makes no resource.
      return route !== null && route.params['*'] === undefined;
    });
    if (allowed.length === 0) throw new ApiError(ERRORS.routeNotFound);
    reply.header('allow', allowed.sort().join(', '));
    throw new ApiError(ERRORS.methodNotAllowed);
  };
}
