import { userNameProblem, type Principal } from '../../domain/principal.js';
import { hashToken, looksLikeToken, REVOCATION_WITHIN_MS, type TokenRecord } from '../../domain/token.js';
import type { Store } from '../../store/store.js';
import { Refusal, type Verdict, type Verifier } from './verifier.js';

/**
 * How long a token read from the store is trusted before it is read again: the bound on how late a
 * revocation (from the CLI, or from another instance) takes effect. An entry's age counts from the start
 * of its read, so a read that was in flight when the token was revoked is trusted no longer than this
 * either. Kept well under the promise (REVOCATION_WITHIN_MS, 5 s), which leaves room for a slow store read and
 * clock steps; docs/tokens.md states both numbers.
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

/**
 * Reads each token from the store at most once per TTL; concurrent lookups of one token share a read.
 *
 * Keyed by the bearer string itself, so that a cached token costs one Map lookup rather than a SHA-256
 * on every request, as the JWT verifier keys its cache by the token too. The store still sees only hashes; the strings live
 * in this process's memory only, for a bounded time: an entry read more than a TTL ago is dropped as
 * soon as any token is read from the store, so a token is held at most a TTL after its last read, or
 * until the next read of a token after that (and at most TOKEN_CACHE_MAX_ENTRIES of them at once).
 * Only strings of a token's shape enter it (`looksLikeToken`), so a key is 47 characters whatever
 * clients send.
 */
class TokenCache {
  /** In order of their reads: the oldest first (an entry read again is deleted and set anew). */
  readonly #entries = new Map<string, CacheEntry>();
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  /** How many tokens it holds (tests). */
  get size(): number {
    return this.#entries.size;
  }

  /** The token's entry when its record was read less than a TTL ago. */
  fresh(token: string, now: number): CacheEntry | undefined {
    const hit = this.#entries.get(token);
    return hit?.value !== undefined && now - hit.at < TOKEN_CACHE_TTL_MS ? hit : undefined;
  }

  get(token: string, now: number): Promise<TokenRecord | null> {
    const hit = this.#entries.get(token);
    if (hit && now - hit.at < TOKEN_CACHE_TTL_MS) return hit.record;
    // No token was ever issued in another shape: such a string is read (and refused) without a place
    // here, not even while its read is in flight, so keys stay token-sized.
    if (!looksLikeToken(token)) return this.#store.tokens.findTokenByHash(hashToken(token));
    const entry: CacheEntry = { at: now, record: this.#store.tokens.findTokenByHash(hashToken(token)) };
    this.#entries.delete(token);
    this.#dropStale(now);
    this.#entries.set(token, entry);
    // Unknown tokens and failed reads are not remembered: a new token works at once, a store hiccup
    // is retried by the next request.
    const forget = (): void => {
      if (this.#entries.get(token) === entry) this.#entries.delete(token);
    };
    entry.record.then((found) => (found ? (entry.value = found) : forget()), forget);
    return entry.record;
  }

  /** Drops the entries read a TTL ago or more (they are at the front), and the oldest one if still full. */
  #dropStale(now: number): void {
    for (const [token, entry] of this.#entries) {
      if (now - entry.at < TOKEN_CACHE_TTL_MS && this.#entries.size < TOKEN_CACHE_MAX_ENTRIES) break;
      this.#entries.delete(token);
    }
  }
}

const principalOf = (record: TokenRecord): Principal => ({
  tokenId: record.id,
  user: record.user,
  scopes: record.scopes,
  admin: record.admin,
});

/**
 * What the client is told of a token whose user name the rule refuses (domain/principal.ts): stored
 * before the rule was, or written into the store by hand. Told, since only the holder of the secret can
 * hear it, and it says what to do.
 */
const INVALID_USER = 'the token user name holds characters no longer accepted (control, format or bidirectional); ask for a new token';

/**
 * Expiry is checked on every use (a cached record does not outlive its token's expiry); the user name
 * once per read, when the principal is made.
 */
function judge(record: TokenRecord | null, now: number, entry?: CacheEntry): Verdict {
  if (record === null) return new Refusal('unknown');
  if (record.revokedAt !== null) return new Refusal('revoked', record.id);
  if (record.expiresAt !== null && record.expiresAt.getTime() <= now) return new Refusal('expired', record.id);
  if (entry?.principal !== undefined) return entry.principal;
  if (userNameProblem(record.user) !== null) return new Refusal('invalidUser', record.id, INVALID_USER);
  const principal = principalOf(record);
  if (entry !== undefined) entry.principal = principal;
  return principal;
}

/**
 * Opaque tokens (`pst_…`, domain/token.ts): looked up by SHA-256 hash in the store, through a cache per app.
 * Any bearer string that no other verifier claims comes here, and is refused as unknown if it is not one.
 */
export class OpaqueTokenVerifier implements Verifier {
  readonly #cache: TokenCache;

  constructor(store: Store) {
    this.#cache = new TokenCache(store);
  }

  /** How many tokens its cache holds (tests). */
  get cachedTokens(): number {
    return this.#cache.size;
  }

  accepts(): boolean {
    return true;
  }

  known(token: string, now: number): Principal | undefined {
    const entry = this.#cache.fresh(token, now);
    if (entry === undefined) return undefined;
    const verdict = judge(entry.value ?? null, now, entry);
    return verdict instanceof Refusal ? undefined : verdict;
  }

  verify(token: string, now: number): Verdict | Promise<Verdict> {
    const known = this.#cache.fresh(token, now);
    if (known) return judge(known.value ?? null, now, known);
    return this.#cache.get(token, now).then((record) => judge(record, now));
  }
}
