/**
 * Authentication, as the steps a route lists in its onRequest hooks:
 *
 *   onRequest: [...auth.identify, requireScope('plants:read'), ...auth.throttle]
 *
 * - identify: the failed-authentication block (auth/limits.ts), then `authenticate` (auth/hooks.ts),
 *   which parses the Authorization header, asks a `Verifier` (auth/verifier.ts; opaque tokens in
 *   auth/opaque.ts) and sets `request.principal`;
 * - requireScope: the route's own scope;
 * - throttle: the per-token RATE_LIMIT (auth/limits.ts).
 * A limit that is configured off adds no step at all.
 */
import type { FastifyInstance } from 'fastify';
import type { Store } from '../../store/store.js';
import { authentication } from './hooks.js';
import type { Hook, Verifier } from './verifier.js';
import { limitTokenRate, refuseBlockedAddress, type AuthFailureLimit, type TokenRateLimit } from './limits.js';

export { REALM, requireScope, verifiers } from './hooks.js';
export { Refusal, type Verdict, type Verifier } from './verifier.js';
export { TOKEN_CACHE_TTL_MS } from './opaque.js';

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
