import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { StoreUnavailableError, type Store } from '../../store/store.js';
import { ApiError, ERRORS } from '../errors.js';
import type { Drain } from '../plugins/shutdown.js';
import { errorResponses, requestErrorResponses, TAG } from '../schemas.js';

const Status = Type.Object({ status: Type.String() }, { additionalProperties: false });

/**
 * For load balancers and orchestrators; no token needed, nothing about the data revealed. Liveness
 * answers from the start (outside the readiness gate, see app.ts); readiness is inside it, so it answers
 * 503 50301 until the store is open.
 */
export async function livenessRoute(app: FastifyInstance): Promise<void> {
  app.get(
    '/healthz',
    {
      schema: {
        summary: 'Liveness: the process is up',
        description: 'For load balancers and orchestrators: 200 as long as the process runs, from its start to its exit. No token.',
        operationId: 'getLiveness',
        tags: [TAG.operations],
        security: [],
        response: { 200: { description: 'The process is up', ...Status }, ...requestErrorResponses() },
      },
    },
    async () => ({ status: 'ok' }),
  );
}

export async function readinessRoute(app: FastifyInstance, { store, drain }: { store: Store; drain: Drain }): Promise<void> {
  app.get(
    '/readyz',
    {
      schema: {
        summary: 'Readiness: the store answers and the instance is not starting or shutting down; route traffic here',
        description:
          'For load balancers and orchestrators: 200 when this instance can serve (its store answers); 503 while it starts or drains ' +
          '(50301) or cannot reach its store (50300). No token.',
        operationId: 'getReadiness',
        tags: [TAG.operations],
        security: [],
        response: { 200: { description: 'This instance can serve', ...Status }, ...errorResponses() },
      },
    },
    async () => {
      // Draining: the load balancer should send new requests elsewhere while these finish.
      if (drain.closing) throw new ApiError(ERRORS.notServing, 'This instance is shutting down');
      try {
        await store.health.ping();
      } catch (error) {
        // Whatever the reason, the answer to "can this instance serve?" is no.
        throw error instanceof StoreUnavailableError ? error : new StoreUnavailableError(error);
      }
      return { status: 'ready' };
    },
  );
}
