import type { FastifyReply } from 'fastify';
import type { Rate } from '../../config/values.js';
import { NO_TOKEN_ID, type Principal } from '../../domain/principal.js';
import type { RateCount, Store } from '../../store/store.js';
import type { Hook } from './verifier.js';
import { clientAddress, clientKey } from '../client-address.js';
import { ApiError, ERRORS } from '../errors.js';

/*
 * Our own code rather than @fastify/rate-limit (11.x, evaluated when the limit was added): its headers are the
 * separate `RateLimit-Limit`/`-Remaining`/`-Reset` fields (or X-RateLimit-*), and its `onExceeding`
 * callback is not given the count nor the reply, so the structured IETF `RateLimit`/`RateLimit-Policy`
 * fields we document cannot be written from it without a second store read; it counts every request
 * that reaches its hook, while AUTH_FAILURE_LIMIT counts refusals only and then blocks the address for
 * the rest of the window without a store call; and it costs an async function, a promise and a
 * `request.routeOptions` rebuild per request on the hot path. Its custom-store contract
 * (`incr(key, cb(err, { current, ttl }))`) is what `Store.hit` already is.
 */

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/** IETF draft-ietf-httpapi-ratelimit-headers: the policy, and where the client stands in it. */
function rateHeaders(policy: string, rate: Rate, remaining: number, resetInMs: number): Record<string, string> {
  return {
    'ratelimit-policy': `"${policy}";q=${rate.limit};w=${rate.windowMs / 1000}`,
    ratelimit: `"${policy}";r=${Math.max(0, remaining)};t=${seconds(resetInMs)}`,
  };
}

/**
 * RATE_LIMIT: requests per token per window, counted in the store, so every instance on one
 * PostgreSQL database shares a token's budget (SQLite: one server, counted in memory).
 */
export class TokenRateLimit {
  readonly #store: Store;
  readonly #rate: Rate;

  constructor(store: Store, rate: Rate) {
    this.#store = store;
    this.#rate = rate;
  }

  /** Counts the request; sets the RateLimit headers; throws 429 once the token is over its budget. */
  async check(key: string, reply: FastifyReply): Promise<void> {
    const { count, resetInMs }: RateCount = await this.#store.counters.hit(key, this.#rate.windowMs);
    const headers = rateHeaders('token', this.#rate, this.#rate.limit - count, resetInMs);
    reply.headers(headers);
    if (count > this.#rate.limit) {
      throw new ApiError(ERRORS.rateLimited, ERRORS.rateLimited.message, { ...headers, 'retry-after': String(seconds(resetInMs)) });
    }
  }
}

/**
 * Whose budget a request counts against: an opaque token's own; for JWTs, their user's. A JWT lives
 * minutes and a client fetches a new one as often as it likes, so a budget per JWT (or per `jti`) would
 * reset at every refresh; the user it names is the stable identity. (Keys are per kind: a user's opaque
 * tokens keep their own budgets.)
 */
export function rateKey(principal: Principal): string {
  return principal.tokenId === NO_TOKEN_ID ? `jwt-user:${principal.user}` : `token:${principal.tokenId}`;
}

/** The per-token rate step, after authentication and the scope check (a 403 costs no budget). */
export function limitTokenRate(limit: TokenRateLimit): Hook {
  return function countTokenRequest(request, reply, done) {
    limit.check(rateKey(request.principal), reply).then(() => done(), done);
  };
}

const MAX_BLOCKED = 100_000;

/**
 * AUTH_FAILURE_LIMIT: failed authentications per client address per window. Failures are counted in
 * the store (shared by instances); an address over the limit is then refused everything that needs a
 * token until the window ends, a valid token included, or a lucky guess would still be told apart
 * from the others. Which addresses are blocked is remembered here, so checking costs no store call.
 * An "address" is a client key (http/client-address.ts): an IPv6 client counts by its /64, whose every
 * address it may use in turn.
 */
export class AuthFailureLimit {
  readonly #store: Store;
  readonly #rate: Rate;
  readonly #blockedUntil = new Map<string, number>();

  constructor(store: Store, rate: Rate) {
    this.#store = store;
    this.#rate = rate;
  }

  /** Whether any address may be blocked: when none is, a request is let through without reading its address. */
  get blocking(): boolean {
    return this.#blockedUntil.size > 0;
  }

  /** The 429 to answer if `address`'s client is blocked now, else null. */
  refusal(address: string, now: number): ApiError | null {
    const key = clientKey(address);
    const until = this.#blockedUntil.get(key);
    if (until === undefined) return null;
    if (until <= now) {
      this.#blockedUntil.delete(key);
      return null;
    }
    return this.#error(until - now);
  }

  /** Counts a failure; returns the 429 to answer instead of a 401 once the address's client is over the limit. */
  async failed(address: string): Promise<ApiError | null> {
    const key = clientKey(address);
    const { count, resetInMs } = await this.#store.counters.hit(`auth-failure:${key}`, this.#rate.windowMs);
    if (count <= this.#rate.limit) return null;
    if (this.#blockedUntil.size >= MAX_BLOCKED) this.#forgetExpired();
    this.#blockedUntil.set(key, Date.now() + resetInMs);
    return this.#error(resetInMs);
  }

  #error(retryInMs: number): ApiError {
    return new ApiError(ERRORS.authFailuresLimited, ERRORS.authFailuresLimited.message, {
      ...rateHeaders('failed-auth', this.#rate, 0, retryInMs),
      'retry-after': String(seconds(retryInMs)),
    });
  }

  #forgetExpired(): void {
    const now = Date.now();
    for (const [address, until] of this.#blockedUntil) if (until <= now) this.#blockedUntil.delete(address);
    if (this.#blockedUntil.size >= MAX_BLOCKED) this.#blockedUntil.clear(); // under a flood: start over
  }
}

/**
 * The failed-authentication step, first of a route's authentication steps: a blocked address is answered
 * 429 before its token is even read. (Failures are counted by `authenticate`, which knows of them.)
 */
export function refuseBlockedAddress(limit: AuthFailureLimit): Hook {
  return function refuseBlocked(request, _reply, done) {
    if (!limit.blocking) return done();
    done(limit.refusal(clientAddress(request), Date.now()) ?? undefined);
  };
}
