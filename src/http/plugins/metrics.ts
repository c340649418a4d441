import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { TokenRefused } from '../auth/hooks.js';
import { ApiError } from '../errors.js';
import type { Metrics } from '../../metrics/metrics.js';
import { UNMATCHED } from '../../metrics/requests.js';

/**
 * A verifier's reason as a label value: "unknown", "revoked", "expired", "malformed", or a JWT check as
 * "jwt_signature", "jwt_unknown_key"… (http/auth/jwt.ts). Reasons are fixed words of the code, never
 * anything from the request; anything unexpected is "other", so the label stays bounded whatever happens.
 */
export function reasonLabel(reason: string): string {
  const label = reason.replace(/^jwt: /, 'jwt_').replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  return /^[a-z_]{1,40}$/.test(label) ? label : 'other';
}

/**
 * The HTTP side of the metrics, registered after the plantstore plugin (by server.ts, only when metrics
 * are on): one onResponse hook for every request, one onError hook that counts refusals. Neither changes
 * an answer. The route label is the route's pattern (/plants/:id), never the URL.
 */
export const httpMetrics = fp(
  async function httpMetrics(app: FastifyInstance, { metrics }: { metrics: Metrics }): Promise<void> {
    const requests = metrics.http;
    app.addHook('onResponse', function countRequest(request: FastifyRequest, reply: FastifyReply, done: () => void) {
      requests.observe(request.routeOptions.url ?? UNMATCHED, request.method, reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
    app.addHook('onError', function countRefusal(_request: FastifyRequest, _reply: FastifyReply, error: unknown, done: () => void) {
      if (error instanceof TokenRefused) metrics.refused(reasonLabel(error.reason));
      // A refusal is counted under its row's metricLabel (the error table, http/errors.ts).
      else if (error instanceof ApiError && error.row.metricLabel !== undefined) metrics.refused(error.row.metricLabel);
      done();
    });
  },
  { name: 'plantstore-metrics', fastify: '5.x', dependencies: ['plantstore'] },
);
