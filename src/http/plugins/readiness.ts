import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import { StoreNotOpenError, type Store } from '../../store/store.js';
import { ApiError, ERRORS, RETRY_AFTER } from '../errors.js';

/** The members of the Store interface that are methods (everything but `backend`). */
type StoreMethod = Exclude<keyof Store, 'backend'>;

/**
 * The store of a server that listens before its store is open (PostgreSQL may take a while to accept
 * connections; see server.ts). Route plugins are registered before listen and receive `handle`, a Store
 * whose methods become the real store's own methods, bound, when `open()` is called: no call is
 * forwarded by hand and, once open, a call costs what a call to the real store costs. Until then the
 * readiness gate (below) answers every route that uses the store, so the handle's methods are never
 * reached; should one be (a timer), it rejects with StoreNotOpenError, which is answered 503 50301.
 */
export class LateStore {
  readonly handle: Store;
  #open = false;

  constructor() {
    const notOpen = (): Promise<never> => Promise.reject(new StoreNotOpenError());
    const handle: Record<string, unknown> = { backend: 'not open', close: () => Promise.resolve() };
    for (const name of STORE_METHODS) if (name !== 'close') handle[name] = notOpen;
    // Holds no page: the caller goes on to listPlants, which rejects.
    handle.cachedPage = () => undefined;
    // Not a promise: a worker registers its wake-up when it starts, once the store is open (server.ts).
    handle.onEventsQueued = () => {
      throw new StoreNotOpenError();
    };
    this.handle = handle as unknown as Store; // every member of Store is set above (STORE_METHODS is exhaustive)
  }

  get isOpen(): boolean {
    return this.#open;
  }

  open(store: Store): void {
    const handle = this.handle as unknown as Record<string, unknown>;
    for (const name of STORE_METHODS) handle[name] = store[name].bind(store);
    handle.backend = store.backend;
    this.#open = true;
  }
}

/** Exhaustive by construction: adding a method to Store without listing it here fails to compile. */
const METHOD_SET: Record<StoreMethod, true> = {
  createPlant: true, listPlants: true, cachedPage: true, deletePlant: true, createToken: true, findTokenByHash: true,
  listTokens: true, revokeToken: true, hit: true, cursorKey: true, onEventsQueued: true, createWebhook: true,
  listWebhooks: true, deleteWebhook: true, listDeliveryAttempts: true, claimDeliveries: true, recordAttempts: true,
  releaseDeliveries: true, sweepWebhooks: true, webhookBacklog: true, ping: true, close: true,
};
const STORE_METHODS = Object.keys(METHOD_SET) as StoreMethod[];

/**
 * The readiness gate: one onRequest hook, in the scope of the routes that use the store, that answers
 * 503 50301 with Retry-After until the store is open. Routes outside that scope (/healthz,
 * /openapi.json) answer while starting. A store that is open when the app is built needs no gate, and its
 * requests pay nothing for it.
 */
export function readinessGate(scope: FastifyInstance, store: LateStore): void {
  if (store.isOpen) return;
  const gate: onRequestHookHandler = (_request, _reply, done) => {
    if (store.isOpen) return done();
    done(new ApiError(ERRORS.notServing, ERRORS.notServing.message, RETRY_AFTER));
  };
  scope.addHook('onRequest', gate);
}
