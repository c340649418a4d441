import type { Principal } from '../../domain/principal.js';
import type { Store, TokenRecord } from '../../store/store.js';
import { hashToken, REVOCATION_WITHIN_MS } from '../../tokens.js';
import { Refusal, type Verdict, type Verifier } from './verifier.js';

/**
 * How long a token read from the store is trusted before it is read again: the bound on how late a
 * revocation (from the CLI, or from another instance) takes effect. An entry's age counts from the start
 * of its read, so a read that was in flight when the token was revoked is trusted no longer than this
 * either. Kept well under the promise (REVOCATION_WITHIN_MS, 5 s), which leaves room for a slow store read and
 * clock steps; the README states both numbers.
 */
export const TOKEN_CACHE_TTL_MS = 2000;
if (TOKEN_CACHE_TTL_MS >= REVOCATION_WITHIN_MS) throw new Error('the token cache must not outlive the revocation promise');
const TOKEN_CACHE_MAX_ENTRIES = 10_000;

interface CacheEntry {
  readonly at: number;
  readonly record: Promise<TokenRecord | null>;
  /** The record once read, so that a cached token is checked without waiting on a promise. */
  value?: TokenRecord;
  /** Its principal, built once per read rather than once per request. */
  principal?: Principal;
}

/** Reads each token from the store at most once per TTL; concurrent lookups of one token share a read. */
class TokenCache {
  readonly #entries = new Map<string, CacheEntry>();
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  /** The token's entry when its record was read less than a TTL ago. */
  fresh(hash: string, now: number): CacheEntry | undefined {
    const hit = this.#entries.get(hash);
    return hit?.value !== undefined && now - hit.at < TOKEN_CACHE_TTL_MS ? hit : undefined;
  }

  get(hash: string, now: number): Promise<TokenRecord | null> {
    const hit = this.#entries.get(hash);
    if (hit && now - hit.at < TOKEN_CACHE_TTL_MS) return hit.record;
    const entry: CacheEntry = { at: now, record: this.#store.findTokenByHash(hash) };
    this.#entries.delete(hash);
    if (this.#entries.size >= TOKEN_CACHE_MAX_ENTRIES) {
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
    this.#entries.set(hash, entry);
    // Unknown tokens and failed reads are not remembered: a new token works at once, a store hiccup
    // is retried by the next request.
    const forget = (): void => {
      if (this.#entries.get(hash) === entry) this.#entries.delete(hash);
    };
    entry.record.then((found) => (found ? (entry.value = found) : forget()), forget);
    return entry.record;
  }
}

const principalOf = (record: TokenRecord): Principal => ({
  tokenId: record.id,
  user: record.user,
  scopes: record.scopes,
  admin: record.admin,
});

/** Expiry is checked on every use (a cached record does not outlive its token's expiry). */
function judge(record: TokenRecord | null, now: number, entry?: CacheEntry): Verdict {
  if (record === null) return new Refusal('unknown');
  if (record.revokedAt !== null) return new Refusal('revoked', record.id);
  if (record.expiresAt !== null && record.expiresAt.getTime() <= now) return new Refusal('expired', record.id);
  if (entry === undefined) return principalOf(record);
  return (entry.principal ??= principalOf(record));
}

/**
 * Opaque tokens (`pst_…`, tokens.ts): looked up by SHA-256 hash in the store, through a cache per app.
 * Any bearer string that no other verifier claims comes here, and is refused as unknown if it is not one.
 */
export class OpaqueTokenVerifier implements Verifier {
  readonly #cache: TokenCache;

  constructor(store: Store) {
    this.#cache = new TokenCache(store);
  }

  accepts(): boolean {
    return true;
  }

  verify(token: string, now: number): Verdict | Promise<Verdict> {
    const hash = hashToken(token);
    const known = this.#cache.fresh(hash, now);
    if (known) return judge(known.value ?? null, now, known);
    return this.#cache.get(hash, now).then((record) => judge(record, now));
  }
}
