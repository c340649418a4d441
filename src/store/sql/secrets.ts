import { randomBytes } from 'node:crypto';
import type { SecretStore } from '../store.js';

/**
 * The secrets facet of both backends. The cursor key is stored once per store, by whichever handle asks
 * first, with one upsert whose no-op update makes RETURNING give the stored key to every handle
 * (instances starting together included); `upsert` is the backend's statement for it, given a new random
 * key, and returns the key stored.
 */
export class SqlSecrets implements SecretStore {
  readonly #upsert: (key: Buffer) => Promise<Buffer | undefined>;
  #cursorKey: Buffer | undefined;

  constructor(upsert: (key: Buffer) => Promise<Buffer | undefined>) {
    this.#upsert = upsert;
  }

  /** Read once per handle. */
  async cursorKey(): Promise<Buffer> {
    if (this.#cursorKey === undefined) {
      const key = await this.#upsert(randomBytes(32));
      if (key === undefined) throw new Error('the cursor key upsert returned no row');
      this.#cursorKey = key;
    }
    return this.#cursorKey;
  }
}
