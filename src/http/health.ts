import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { StoreUnavailableError, type Store } from '../store/store.js';
import { errorResponses } from './schemas.js';

const Status = Type.Object({ status: Type.String() }, { additionalProperties: false });

/** For load balancers and orchestrators; no token needed, nothing about the data revealed. */
export async function healthRoutes(app: FastifyInstance, { store }: { store: Store }): Promise<void> {
  app.get(
    '/healthz',
    {
      schema: {
        summary: 'Liveness: the process is up',
        tags: ['operations'],
        response: { 200: Status },
      },
    },
    async () => ({ status: 'ok' }),
  );

  app.get(
    '/readyz',
    {
      schema: {
        summary: 'Readiness: the store answers; route traffic here',
        tags: ['operations'],
        response: { 200: Status, ...errorResponses() },
      },
    },
    async () => {
      try {
        await store.ping();
      } catch (error) {
        // Whatever the reason, the answer to "can this instance serve?" is no.
        throw error instanceof StoreUnavailableError ? error : new StoreUnavailableError(error);
      }
      return { status: 'ready' };
    },
  );
}
