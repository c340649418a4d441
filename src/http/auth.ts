/**
 * Authentication, as the steps a route lists in its onRequest hooks:
 *
 *   onRequest: [...auth.identify, requireScope('plants:read'), ...auth.throttle]
 *
 * - identify: the failed-authentication block (rate-limit.ts), then `authenticate` (auth/authenticate.ts),
 *   which parses the Authorization header, asks a `Verifier` (auth/verifier.ts; opaque tokens in
 *   auth/opaque.ts) and sets `request.principal`;
 * - requireScope: the route's own scope;
 * - throttle: the per-token RATE_LIMIT (rate-limit.ts).
 * A limit that is configured off adds no step at all.
 */
import type { FastifyInstance } from 'fastify';
import type { Store } from '../store/store.js';
import { authentication, type Hook } from './auth/authenticate.js';
import type { Verifier } from './auth/verifier.js';
import { limitTokenRate, refuseBlockedAddress, type AuthFailureLimit, type TokenRateLimit } from './rate-limit.js';

export { REALM, requireScope, verifiers } from './auth/authenticate.js';
export { Refusal, type Verdict, type Verifier } from './auth/verifier.js';
export { TOKEN_CACHE_TTL_MS } from './auth/opaque.js';

export interface AuthLimits {
  readonly failures?: AuthFailureLimit | undefined;
  readonly tokenRate?: TokenRateLimit | undefined;
}

export interface AuthSteps {
  /** Establishes `request.principal`, or answers 401/429. */
  readonly identify: readonly Hook[];
  /** Counts the request against its token's budget. */
  readonly throttle: readonly Hook[];
}

/** The steps of one app; they share one token cache. Call once per app, before its routes. */
export function bearerAuth(
  app: FastifyInstance,
  store: Store,
  { failures, tokenRate }: AuthLimits = {},
  verifiers?: readonly Verifier[],
): AuthSteps {
  const authenticate = authentication(app, { store, failures, verifiers });
  return {
    identify: failures ? [refuseBlockedAddress(failures), authenticate] : [authenticate],
    throttle: tokenRate ? [limitTokenRate(tokenRate)] : [],
  };
}
