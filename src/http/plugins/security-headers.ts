import type { FastifyInstance } from 'fastify';

/**
 * On every answer: JSON is never to be sniffed as something else, never framed, never executed as a
 * document, and never cached (lists are private to their token). Node adds no X-Powered-By, nor does
 * Fastify.
 */
export const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'cache-control': 'no-store',
} as const;

/**
 * The one hook that sets them: onSend runs for every answer Fastify sends through a route's context,
 * the not-found/405 handler's and the error handler's included, whatever plugin added the route and
 * whenever. Two kinds of answer run no hook, and use SECURITY_HEADERS directly: Fastify's frameworkErrors
 * (a URL it cannot decode, before routing; app.ts) and answers written on the socket by hand (protocol.ts).
 */
export function securityHeaders(app: FastifyInstance): void {
  app.addHook('onSend', (_request, reply, payload, done) => {
    reply.headers(SECURITY_HEADERS);
    done(null, payload);
  });
}
