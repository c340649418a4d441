import type { NewTokenRecord, TokenRecord, TokenStore } from '../store.js';
import type { Dialect } from './dialect.js';
import { tokenOf, tokenValues, type TokenRow } from './statements.js';

/**
 * How a backend runs the token statements (statements.ts): reads as it reads, writes as it writes
 * (SQLite's write queue, a pooled PostgreSQL statement). A read hands its rows to `map` where it has
 * them, so that the caller gets one promise, as from a read of the backend's own.
 */
export interface TokenDriver {
  /** `tokenByHash`: the token with this hash, or undefined. */
  byHash<T>(hash: string, map: (row: TokenRow | undefined) => T): Promise<T>;
  /** `tokens`, or `userTokens` when a user is given. */
  list<T>(user: string | undefined, map: (rows: TokenRow[]) => T): Promise<T>;
  /** `insertToken` with these values; its row. */
  insert(values: unknown[]): Promise<TokenRow | undefined>;
  /**
   * `revokeToken`, or `revokeUserToken` when a user is given; true when it revoked one. Then its user's
   * all-users endpoints may have lost their reach: the backend withdraws their other users' events
   * (withdrawEvents, all-users.ts) as it can, in the same transaction or right after.
   */
  revoke(id: number, user: string | undefined): Promise<boolean>;
}

/** The tokens facet of both backends, over their TokenDriver. */
export class SqlTokens implements TokenStore {
  readonly #d: Dialect;
  readonly #driver: TokenDriver;
  readonly #found: (row: TokenRow | undefined) => TokenRecord | null;
  readonly #listed: (rows: TokenRow[]) => TokenRecord[];

  constructor(d: Dialect, driver: TokenDriver) {
    this.#d = d;
    this.#driver = driver;
    this.#found = (row) => (row === undefined ? null : tokenOf(d, row));
    this.#listed = (rows) => rows.map((row) => tokenOf(d, row));
  }

  async createToken(t: NewTokenRecord): Promise<TokenRecord> {
    const row = await this.#driver.insert(tokenValues(this.#d, t, new Date()));
    if (!row) throw new Error('token insert returned no row');
    return tokenOf(this.#d, row);
  }

  findTokenByHash(hash: string): Promise<TokenRecord | null> {
    return this.#driver.byHash(hash, this.#found);
  }

  listTokens(user?: string): Promise<TokenRecord[]> {
    return this.#driver.list(user, this.#listed);
  }

  revokeToken(id: number, user?: string): Promise<boolean> {
    return this.#driver.revoke(id, user);
  }
}
