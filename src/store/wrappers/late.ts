import { FACETS, StoreNotOpenError, type OpeningStore, type Store } from '../store.js';
import { methodsOf } from './facets.js';

/**
 * The store of a server that listens before its store is open (PostgreSQL may take a while to accept
 * connections; see server.ts). Route plugins are registered before listen and receive `handle`, a Store
 * whose facets become the real store's own facet objects when `open()` is called: nothing is forwarded
 * by hand and, once open, a call costs what a call to the real store costs. Until then the readiness
 * gate (http/plugins/readiness.ts) answers every route that uses the store, so the handle's operations
 * are never reached; should one be (a timer), it rejects with StoreNotOpenError, which is answered 503
 * 50301. A facet object taken from the handle before the open (kept by a verifier, say) is given the
 * real facet's methods, bound, at the open: it works on too, at the cost of one property read more.
 */
export class LateStore implements OpeningStore {
  readonly handle: Store;
  #open = false;
  #eventsListener: (() => void) | undefined;
  #feedListener: ((tx: bigint) => void) | undefined;
  /** The facet objects the handle held before the open. */
  readonly #early: Record<string, object> = {};

  constructor() {
    const handle: Record<string, unknown> = { backend: 'not open', close: () => Promise.resolve() };
    const notOpen = (): Promise<never> => Promise.reject(new StoreNotOpenError());
    const members: Record<string, unknown> = {
      // Holds no page: the caller goes on to listPlants, which rejects.
      cachedPage: () => undefined,
      // Not a promise: kept until the store opens, then handed to it (a rejection here would go unhandled).
      onEventsQueued: (listener: () => void) => {
        this.#eventsListener = listener;
      },
      onFeedChanged: (listener: (tx: bigint) => void) => {
        this.#feedListener = listener;
      },
    };
    // Any method a facet may have, by its name: the handle needs no list of them. Not `then` (a facet is
    // no promise) and nothing an ordinary object has (toString, …).
    const anyMethod = new Proxy(Object.create(null) as object, {
      get: (_target, name) =>
        typeof name !== 'string' || name === 'then' || name in Object.prototype ? undefined : (members[name] ?? notOpen),
    });
    for (const name of FACETS) {
      const facet = Object.create(anyMethod) as object;
      this.#early[name] = facet;
      handle[name] = facet;
    }
    this.handle = handle as unknown as Store; // every member of Store is set above (FACETS is exhaustive)
  }

  get isOpen(): boolean {
    return this.#open;
  }

  open(store: Store): void {
    const handle = this.handle as unknown as Record<string, unknown>;
    for (const name of FACETS) {
      const facet = store[name];
      handle[name] = facet;
      const early = this.#early[name] as Record<string, unknown>;
      for (const [method, unbound] of methodsOf(facet)) early[method] = unbound.bind(facet);
    }
    handle.backend = store.backend;
    handle.close = () => store.close();
    if (this.#eventsListener) store.outbox.onEventsQueued(this.#eventsListener);
    if (this.#feedListener) store.feed.onFeedChanged(this.#feedListener);
    this.#open = true;
  }
}
