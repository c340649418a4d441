import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import type { OpeningStore } from '../../store/store.js';
import { ApiError, ERRORS, RETRY_AFTER } from '../errors.js';

/**
 * The readiness gate: one onRequest hook, in the scope of the routes that use the store, that answers
 * 503 50301 with Retry-After until the store is open. Routes outside that scope (/healthz,
 * /openapi.json) answer while starting. A store that is open when the app is built needs no gate, and its
 * requests pay nothing for it.
 */
export function readinessGate(scope: FastifyInstance, store: OpeningStore): void {
  if (store.isOpen) return;
  const gate: onRequestHookHandler = (_request, _reply, done) => {
    if (store.isOpen) return done();
    done(new ApiError(ERRORS.notServing, ERRORS.notServing.message, RETRY_AFTER));
  };
  scope.addHook('onRequest', gate);
}
