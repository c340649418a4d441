import { StoreNotOpenError, type Store } from './store.js';

/**
 * The store a server listens with while the real one opens (PostgreSQL may take a while to accept
 * connections): until `open()`, every operation fails with StoreNotOpenError, answered 503, so
 * /readyz tells a load balancer the truth during start-up. Afterwards it hands each call straight to
 * the real store.
 */
export class DeferredStore implements Store {
  #store: Store | undefined;

  get backend(): string {
    return this.#store?.backend ?? 'not open';
  }

  open(store: Store): void {
    this.#store = store;
  }

  #notOpen(): Promise<never> {
    return Promise.reject(new StoreNotOpenError());
  }

  createPlant(...args: Parameters<Store['createPlant']>): ReturnType<Store['createPlant']> {
    return this.#store ? this.#store.createPlant(...args) : this.#notOpen();
  }

  listPlants(...args: Parameters<Store['listPlants']>): ReturnType<Store['listPlants']> {
    return this.#store ? this.#store.listPlants(...args) : this.#notOpen();
  }

  deletePlant(...args: Parameters<Store['deletePlant']>): ReturnType<Store['deletePlant']> {
    return this.#store ? this.#store.deletePlant(...args) : this.#notOpen();
  }

  createToken(...args: Parameters<Store['createToken']>): ReturnType<Store['createToken']> {
    return this.#store ? this.#store.createToken(...args) : this.#notOpen();
  }

  findTokenByHash(...args: Parameters<Store['findTokenByHash']>): ReturnType<Store['findTokenByHash']> {
    return this.#store ? this.#store.findTokenByHash(...args) : this.#notOpen();
  }

  listTokens(): ReturnType<Store['listTokens']> {
    return this.#store ? this.#store.listTokens() : this.#notOpen();
  }

  revokeToken(...args: Parameters<Store['revokeToken']>): ReturnType<Store['revokeToken']> {
    return this.#store ? this.#store.revokeToken(...args) : this.#notOpen();
  }

  hit(...args: Parameters<Store['hit']>): ReturnType<Store['hit']> {
    return this.#store ? this.#store.hit(...args) : this.#notOpen();
  }

  cursorKey(): ReturnType<Store['cursorKey']> {
    return this.#store ? this.#store.cursorKey() : this.#notOpen();
  }

  ping(): Promise<void> {
    return this.#store ? this.#store.ping() : this.#notOpen();
  }

  async close(): Promise<void> {
    await this.#store?.close();
  }
}
