import { FACETS, type Facet, type Store } from '../store.js';

/** A facet's methods by name, each as the function its object holds (unbound). */
export type Methods = ReadonlyMap<string, (...args: never[]) => unknown>;

/**
 * The methods of a facet object, found on the object itself (a wrapper's) and along its prototype chain
 * (a backend's class), by their string names: what a wrapper goes through instead of a list of its own,
 * so that a method added to a facet reaches every wrapper without an edit there. Symbol-keyed members
 * (a capability such as `assertReadable`) are not operations and are left out.
 */
export function methodsOf(facet: object): Methods {
  const methods = new Map<string, (...args: never[]) => unknown>();
  for (let o: object | null = facet; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o) as object | null) {
    for (const name of Object.getOwnPropertyNames(o)) {
      const value = Object.getOwnPropertyDescriptor(o, name)?.value as unknown;
      if (name !== 'constructor' && typeof value === 'function' && !methods.has(name)) {
        methods.set(name, value as (...args: never[]) => unknown);
      }
    }
  }
  return methods;
}

/**
 * `store` with the facets in `replaced` put in place of its own; every other facet is the store's own
 * object, as it is, and `close` is the store's unless given.
 */
export function withFacets(store: Store, replaced: Partial<Store>, close: () => Promise<void> = () => store.close()): Store {
  const wrapped: Record<string, unknown> = { backend: store.backend };
  for (const facet of FACETS) wrapped[facet] = replaced[facet] ?? store[facet];
  wrapped.close = close;
  return wrapped as unknown as Store;
}

