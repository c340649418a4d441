import type { FastifyRequest } from 'fastify';
import type { Principal, Scope } from '../domain/principal.js';
import type { Store, TokenRecord } from '../store/store.js';
import { hashToken } from '../tokens.js';
import { ApiError, ERRORS } from './errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the authentication hook on every route that declares `config.scope`. */
    principal: Principal;
  }
  interface FastifyContextConfig {
    /** The scope a route requires; routes with one require a bearer token. */
    scope?: Scope;
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

/** Reads each token from the store at most once per TTL; concurrent lookups of one token share a read. */
class TokenCache {
  readonly #entries = new Map<string, { at: number; record: Promise<TokenRecord | null> }>();
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  get(hash: string, now: number): Promise<TokenRecord | null> {
    const hit = this.#entries.get(hash);
    if (hit && now - hit.at < TOKEN_CACHE_TTL_MS) return hit.record;
    const record = this.#store.findTokenByHash(hash);
    this.#entries.delete(hash);
    if (this.#entries.size >= TOKEN_CACHE_MAX_ENTRIES) {
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
    const entry = { at: now, record };
    this.#entries.set(hash, entry);
    // Unknown tokens and failed reads are not remembered: a new token works at once, a store hiccup
    // is retried by the next request.
    const forget = (): void => {
      if (this.#entries.get(hash) === entry) this.#entries.delete(hash);
    };
    record.then((found) => found ?? forget(), forget);
    return record;
  }
}

/** An onRequest hook: establishes `request.principal` and checks the route's scope. */
export function bearerAuth(store: Store): (request: FastifyRequest) => Promise<void> {
  const cache = new TokenCache(store);
  return async function authenticate(request) {
    const required = request.routeOptions.config.scope;
    if (required === undefined) return;
    const header = request.headers.authorization;
    if (header === undefined || !BEARER_SCHEME.test(header)) {
      throw new ApiError(ERRORS.missingToken, ERRORS.missingToken.message, challenge());
    }
    const token = BEARER.exec(header)?.[1];
    const now = Date.now();
    const record = token === undefined ? null : await cache.get(hashToken(token), now);
    if (record === null || record.revokedAt !== null || (record.expiresAt !== null && record.expiresAt.getTime() <= now)) {
      throw new ApiError(
        ERRORS.invalidToken,
        ERRORS.invalidToken.message,
        challenge(`, error="invalid_token", error_description="${ERRORS.invalidToken.message}"`),
      );
    }
    if (!record.scopes.includes(required)) {
      throw new ApiError(
        ERRORS.insufficientScope,
        `${ERRORS.insufficientScope.message}: ${required}`,
        challenge(`, error="insufficient_scope", scope="${required}"`),
      );
    }
    request.principal = { tokenId: record.id, user: record.user, scopes: record.scopes, admin: record.admin };
  };
}
