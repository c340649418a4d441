import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Principal, Scope } from '../domain/principal.js';
import type { Store, TokenRecord } from '../store/store.js';
import { hashToken } from '../tokens.js';
import { ApiError, ERRORS } from './errors.js';
import type { AuthFailureLimit, TokenRateLimit } from './rate-limit.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the hook from `requireScope` on every route that has one. */
    principal: Principal;
  }
}

export const REALM = 'plantstore';
/**
 * How long a token looked up in the store is trusted before it is read again. It bounds how late a
 * revocation (from the CLI, or from another instance) takes effect; the promise is 5 seconds.
 */
export const TOKEN_CACHE_TTL_MS = 2000;
const TOKEN_CACHE_MAX_ENTRIES = 10_000;

// RFC 6750 §2.1: credentials = "Bearer" 1*SP b64token; the scheme is case-insensitive (RFC 9110 §11.1).
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
const BEARER_SCHEME = /^bearer(?: |$)/i;

const challenge = (params = ''): Record<string, string> => ({
  'www-authenticate': `Bearer realm="${REALM}"${params}`,
});

interface CacheEntry {
  readonly at: number;
  readonly record: Promise<TokenRecord | null>;
  /** The record once read, so that a cached token is checked without waiting on a promise. */
  value?: TokenRecord;
}

/** Reads each token from the store at most once per TTL; concurrent lookups of one token share a read. */
class TokenCache {
  readonly #entries = new Map<string, CacheEntry>();
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  /** The token's record when it was read less than a TTL ago. */
  fresh(hash: string, now: number): TokenRecord | undefined {
    const hit = this.#entries.get(hash);
    return hit && now - hit.at < TOKEN_CACHE_TTL_MS ? hit.value : undefined;
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

type Done = (error?: Error) => void;

type Hook = (request: FastifyRequest, reply: FastifyReply, done: Done) => void;

export interface AuthLimits {
  readonly failures?: AuthFailureLimit | undefined;
  readonly tokenRate?: TokenRateLimit | undefined;
}

/**
 * Makes onRequest hooks that establish `request.principal` and check one scope; all hooks of one app
 * share a token cache. Callback-style, so that a token read less than a TTL ago is checked
 * synchronously, with no promise per request; the scope is bound here rather than read from the route
 * options, which Fastify rebuilds on every access.
 */
export function bearerAuth(store: Store, { failures, tokenRate }: AuthLimits = {}): (required: Scope) => Hook {
  const cache = new TokenCache(store);
  return (required) => function authenticate(request, reply, done) {
    const now = Date.now();
    const refused = failures?.refusal(request.ip, now);
    if (refused) return done(refused);
    const header = request.headers.authorization;
    if (header === undefined || !BEARER_SCHEME.test(header)) {
      return done(new ApiError(ERRORS.missingToken, ERRORS.missingToken.message, challenge()));
    }
    const fail = (reason: 'malformed' | 'unknown' | 'revoked' | 'expired', tokenId?: number): void => {
      // For whoever debugs a client: why, and for a known token its id (as in "token list"); never the
      // token itself, nor its hash, which identifies it just as well.
      request.log.debug({ reason, tokenId }, 'bearer token refused');
      // A wrong token is a guess: counted, and once there are too many, answered 429 instead.
      if (!failures) return done(invalidToken());
      failures.failed(request.ip).then((limited) => done(limited ?? invalidToken()), () => done(invalidToken()));
    };
    const token = BEARER.exec(header)?.[1];
    if (token === undefined) return fail('malformed');
    const hash = hashToken(token);
    const check = (record: TokenRecord | null): void => {
      if (record === null) return fail('unknown');
      if (record.revokedAt !== null) return fail('revoked', record.id);
      if (record.expiresAt !== null && record.expiresAt.getTime() <= now) return fail('expired', record.id);
      if (!record.scopes.includes(required)) {
        return done(
          new ApiError(
            ERRORS.insufficientScope,
            `${ERRORS.insufficientScope.message}: ${required}`,
            challenge(`, error="insufficient_scope", scope="${required}"`),
          ),
        );
      }
      request.principal = { tokenId: record.id, user: record.user, scopes: record.scopes, admin: record.admin };
      if (!tokenRate) return done();
      tokenRate.check(record.id, reply).then(() => done(), done);
    };
    const known = cache.fresh(hash, now);
    if (known) return check(known);
    cache.get(hash, now).then(check, done);
  };
}

function invalidToken(): ApiError {
  return new ApiError(
    ERRORS.invalidToken,
    ERRORS.invalidToken.message,
    challenge(`, error="invalid_token", error_description="${ERRORS.invalidToken.message}"`),
  );
}
