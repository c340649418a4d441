import type { FastifyInstance } from 'fastify';
import { ApiError, ERRORS } from './errors.js';

/**
 * RFC 9110 §15.5.6: a method the target resource does not support is 405 with an Allow header, not
 * Fastify's 404. Call the returned function once every route is declared; it adds a catch-all route
 * for the remaining methods of each URL.
 */
export function trackAllowedMethods(app: FastifyInstance, handledElsewhere: readonly string[] = []): () => void {
  const allowed = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    const methods = allowed.get(route.url) ?? new Set<string>();
    for (const m of [route.method].flat()) methods.add(m);
    allowed.set(route.url, methods);
  });
  return () => {
    for (const [url, methods] of allowed) {
      const allow = [...methods].sort().join(', ');
      app.route({
        method: app.supportedMethods.filter((m) => !methods.has(m) && !handledElsewhere.includes(m)),
        url,
        schema: { hide: true },
        handler: async (_request, reply) => {
          reply.header('allow', allow);
          throw new ApiError(ERRORS.methodNotAllowed);
        },
      });
    }
  };
}
