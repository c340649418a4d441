import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Principal, Scope } from '../../domain/principal.js';
import type { Store } from '../../store/store.js';
import { ApiError, ERRORS } from '../errors.js';
import { clientAddress } from '../client-address.js';
import type { AuthFailureLimit } from './limits.js';
import { JwtVerifier, jwtConfigured, type JwtSettings } from './jwt.js';
import { OpaqueTokenVerifier } from './opaque.js';
import { Refusal, type Done, type Hook, type Verdict, type Verifier } from './verifier.js';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Who is calling; set by `authenticate` on every route that has it in its onRequest hooks, and only
     * read by handlers behind it (elsewhere it is null, whatever the type says).
     */
    principal: Principal;
  }
}

export const REALM = 'plantstore';

// RFC 6750 §2.1: credentials = "Bearer" 1*SP b64token; the scheme is case-insensitive (RFC 9110 §11.1).
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
const BEARER_SCHEME = /^bearer(?: |$)/i;

/** The token of an Authorization header, when it is a bearer credential. */
export function bearerOf(header: string | undefined): string | undefined {
  return header === undefined ? undefined : BEARER.exec(header)?.[1];
}

/**
 * Whether a bearer token still authenticates with `scope` now, as the first verifier that accepts it says
 * (a long-lived answer, a feed stream, checks its token again while it lasts).
 */
export async function stillValid(list: readonly Verifier[], token: string, scope: Scope): Promise<boolean> {
  const verifier = list.find((v) => v.accepts(token));
  if (verifier === undefined) return false;
  const verdict = await verifier.verify(token, Date.now());
  return !(verdict instanceof Refusal) && verdict.scopes.includes(scope);
}

const challenge = (params = ''): Record<string, string> => ({
  'www-authenticate': `Bearer realm="${REALM}"${params}`,
});


/**
 * The verifiers, first match wins: JWTs (jwt.ts, by their shape) when JWT_ISSUER or JWT_JWKS_URL is
 * set, then opaque tokens, which take anything else. Without JWT settings the list has one verifier,
 * which the hook then calls without asking (see `only` below): opaque tokens cost what they did before.
 * `jwtCooldownMs` shortens the unknown-kid refetch cooldown, `jwtFetchTimeoutMs` a key set fetch's time
 * bound (tests only).
 */
export function verifiers(
  store: Store,
  settings?: JwtSettings,
  log?: FastifyBaseLogger,
  { jwtCooldownMs, jwtFetchTimeoutMs }: { jwtCooldownMs?: number | undefined; jwtFetchTimeoutMs?: number | undefined } = {},
): readonly Verifier[] {
  const opaque = new OpaqueTokenVerifier(store);
  if (settings === undefined || log === undefined || !jwtConfigured(settings)) return [opaque];
  return [new JwtVerifier(settings, log, { cooldownMs: jwtCooldownMs, fetchTimeoutMs: jwtFetchTimeoutMs }), opaque];
}

export interface AuthenticationOptions {
  readonly store: Store;
  readonly failures?: AuthFailureLimit | undefined;
  /** Default: `verifiers(store)`. */
  readonly verifiers?: readonly Verifier[] | undefined;
}

/**
 * Declares `request.principal` (so every request object has the same shape) and makes the hook that
 * establishes it from the Authorization header. A refusal is counted by `failures` (a wrong token is a
 * guess) and answered 401, or 429 once the address is over its limit.
 */
export function authentication(
  app: FastifyInstance,
  { store, failures, verifiers: list = verifiers(store) }: AuthenticationOptions,
): Hook {
  // Fastify 5 allows no object as a request decoration's initial value, and typing the field
  // `Principal | null` would make every handler behind `authenticate` test what its hooks guarantee: the
  // one cast, here, says "unset until authenticate runs".
  // Another route plugin in the same context may have declared it already (Fastify throws on a second).
  if (!app.hasRequestDecorator('principal')) app.decorateRequest('principal', null as unknown as Principal);
  const only = list.length === 1 ? list[0] : undefined;
  const choose = (token: string): Verifier | undefined => only ?? list.find((v) => v.accepts(token));
  const known = (token: string, now: number): Principal | undefined => {
    for (const v of list) {
      const principal = v.known?.(token, now);
      if (principal !== undefined) return principal;
    }
    return undefined;
  };
  return function authenticate(request, _reply, done) {
    const header = request.headers.authorization;
    // The usual spelling, with a token accepted before: known without the bearer pattern, the verifiers'
    // shape checks or a closure (bench/tools/auth.ts measures the hook). Sound because a verifier knows only b64tokens (see Verifier.known), so
    // "Bearer " + such a token is a header the pattern matches, capturing the same token. Any other
    // header, or a token not known (new, expired, revoked), takes the full path below.
    if (header !== undefined && header.startsWith('Bearer ')) {
      const principal = known(header.slice(7), Date.now());
      if (principal !== undefined) {
        request.principal = principal;
        return done();
      }
    }
    if (header === undefined || !BEARER_SCHEME.test(header)) {
      return done(new ApiError(ERRORS.missingToken, ERRORS.missingToken.message, challenge()));
    }
    const refuse = (refusal: Refusal): void => {
      // For whoever debugs a client: why, and for a known token its id (as in "token list"); never the
      // token itself, nor its hash, which identifies it just as well.
      request.log.debug({ reason: refusal.reason, tokenId: refusal.tokenId }, 'bearer token refused');
      const refused = invalidToken(refusal);
      if (!failures) return done(refused);
      failures.failed(clientAddress(request)).then((limited) => done(limited ?? refused), () => done(refused));
    };
    const accept = (verdict: Verdict): void => {
      if (verdict instanceof Refusal) return refuse(verdict);
      request.principal = verdict;
      done();
    };
    const token = BEARER.exec(header)?.[1];
    const verifier = token === undefined ? undefined : choose(token);
    if (token === undefined || verifier === undefined) return refuse(new Refusal('malformed'));
    const verdict = verifier.verify(token, Date.now());
    if (verdict instanceof Promise) verdict.then(accept, done);
    else accept(verdict);
  };
}

/**
 * The route's scope step, after `authenticate`: 403 with the RFC 6750 §3.1 challenge naming the scope.
 * Bound when the route is declared rather than read from the route options, which Fastify rebuilds on
 * every access.
 */
export function requireScope(required: Scope): Hook {
  const refusal = challenge(`, error="insufficient_scope", scope="${required}"`);
  const message = `${ERRORS.insufficientScope.message}: ${required}`;
  return function checkScope(request, _reply, done) {
    if (request.principal.scopes.includes(required)) return done();
    done(new ApiError(ERRORS.insufficientScope, message, refusal));
  };
}

/**
 * A 401 invalid_token that keeps its Refusal's reason (a fixed word of the verifier's: unknown, revoked,
 * jwt: signature…), which the metrics count refusals by (src/http/plugins/metrics.ts); the client is told only
 * what `invalidToken` says.
 */
export class TokenRefused extends ApiError {
  constructor(
    readonly reason: string,
    message: string,
    headers: Readonly<Record<string, string>>,
  ) {
    super(ERRORS.invalidToken, message, headers);
  }
}

/**
 * 401 invalid_token. An opaque token's refusal says no more than the row (unknown, expired or revoked
 * are not told apart); a JWT's names the check that failed (its Refusal's description).
 */
function invalidToken({ reason, description }: Refusal): ApiError {
  if (description === undefined) {
    return new TokenRefused(
      reason,
      ERRORS.invalidToken.message,
      challenge(`, error="invalid_token", error_description="${ERRORS.invalidToken.message}"`),
    );
  }
  return new TokenRefused(
    reason,
    `The bearer token is invalid: ${description}`,
    challenge(`, error="invalid_token", error_description="${description}"`),
  );
}
