import type { FastifyBaseLogger } from 'fastify';
import {
  decodeProtectedHeader, errors, jwtVerify,
  type CryptoKey, type FlattenedJWSInput, type JWSHeaderParameters, type JWTPayload, type JWTVerifyOptions,
} from 'jose';
import type { Config } from '../../config/load.js';
import { isScope, NO_TOKEN_ID, userNameProblem, type Principal, type Scope } from '../../domain/principal.js';
import { ApiError, ERRORS } from '../errors.js';
import { ProviderKeys, type KeySet } from './jwks.js';
import { Refusal, type Verdict, type Verifier } from './verifier.js';

/** The settings of JWT verification (the JWT_* rows of the configuration table). */
export type JwtSettings = Pick<
  Config,
  'jwtIssuer' | 'jwtJwksUrl' | 'jwtAudience' | 'jwtAlgorithms' | 'jwtClockSkewMs' | 'jwtUserClaim' | 'jwtDefaultScopes'
>;

/** Whether JWTs are on: a key source is configured (config/load.ts then guarantees an audience). */
export function jwtConfigured(settings: JwtSettings): boolean {
  return settings.jwtIssuer !== null || settings.jwtJwksUrl !== null;
}

/** The scope a JWT carries to be an admin (`token create --admin`); not a Scope of opaque tokens. */
export const ADMIN_SCOPE = 'plants:admin';

/**
 * How long a verified JWT is trusted without checking it again (never past its `exp`): the bound on how
 * late a key the provider withdrew stops working for tokens already seen, on top of the refresh period.
 */
export const VERIFIED_TTL_MS = 60_000;
const VERIFIED_MAX_ENTRIES = 10_000;
/** JWTs are up to MAX_HEADER_SIZE long: the remembered ones are bounded in characters too. */
const VERIFIED_MAX_CHARS = 16 * 1024 * 1024;

// Three base64url parts; the signature may be empty (alg "none"), so that such a token is refused as
// a disallowed algorithm rather than as an unknown opaque token.
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/**
 * What remembered JWTs are keyed by: the last characters of the signature. A Map keyed by the whole
 * token would hash all of its ~800 characters on every request (each one is a new string); the key
 * is a few random characters instead, and the entry holds the token, compared whole (a copy of memory).
 * Two tokens with one tail only take turns in the map: neither is ever taken for the other.
 */
const TAIL = 24;
const tailOf = (token: string): string => token.slice(-TAIL);

interface Verified {
  readonly token: string;
  readonly principal: Principal;
  /** Trusted until then: the token's exp, or VERIFIED_TTL_MS after verification, whichever is first. */
  readonly until: number;
}

/** What a refusal tells the client, by check (printable ASCII, no quotes: it goes in a challenge). */
const DESCRIPTIONS = {
  malformed: 'malformed JWT',
  alg: 'JWT signature algorithm (alg) is not allowed',
  signature: 'JWT signature verification failed',
  unknownKey: 'no key of the identity provider matches the JWT (kid)',
  unusableKey: 'the identity provider\'s key for this JWT (kid) cannot be used',
  ambiguousKey: 'JWT names no key (kid) and several keys of the identity provider could have signed it',
  iss: 'JWT issuer (iss) is not the one configured',
  aud: 'JWT audience (aud) does not include this API',
  expired: 'JWT has expired (exp)',
  nbf: 'JWT is not valid yet (nbf)',
  noExp: 'JWT has no expiry (exp)',
  claim: 'JWT claim is invalid',
  claimType: 'JWT claim has the wrong type',
  user: 'JWT user claim is missing or not a valid user name',
} as const;

const refusal = (reason: keyof typeof DESCRIPTIONS, description: string = DESCRIPTIONS[reason]): Refusal =>
  new Refusal(`jwt: ${reason}`, undefined, description);

/** A jose error as the refusal it means; anything else is not the token's fault and is rethrown. */
function refusalOf(error: unknown): Refusal {
  if (error instanceof errors.JWTExpired) return refusal('expired');
  if (error instanceof errors.JWTClaimValidationFailed) {
    const claim = error.claim.replace(/[^\x21-\x7e]|["\\]/g, '?').slice(0, 40);
    // jose's "invalid": the claim is there with a value of the wrong type (an nbf of "soon"), which is
    // neither "not valid yet" nor "no expiry".
    if (error.reason === 'invalid') {
      const expected = ['exp', 'nbf', 'iat'].includes(error.claim) ? ' (a number of seconds is expected)' : '';
      return refusal('claimType', `JWT claim ${claim} has the wrong type${expected}`);
    }
    if (error.claim === 'iss') return refusal('iss');
    if (error.claim === 'aud') return refusal('aud');
    if (error.claim === 'nbf') return refusal('nbf');
    if (error.claim === 'exp') return refusal('noExp');
    return refusal('claim', `JWT claim ${claim} is invalid`);
  }
  if (error instanceof errors.JOSEAlgNotAllowed) return refusal('alg');
  if (error instanceof errors.JWSSignatureVerificationFailed) return refusal('signature');
  if (error instanceof errors.JWKSNoMatchingKey) return refusal('unknownKey');
  if (error instanceof errors.JWKSMultipleMatchingKeys) return refusal('ambiguousKey');
  if (error instanceof errors.JOSEError) return refusal('malformed');
  throw error;
}

/** The 503's message when the provider's key set holds no key this server can use. */
const NO_USABLE_KEY = 'The identity provider publishes no key this server can use to verify this JWT; retry (see Retry-After)';

/** The key `header` names in `keys`, or undefined when none matches; UnusableKey for a key left out. */
async function lookUp(keys: KeySet, header: JWSHeaderParameters, input: FlattenedJWSInput): Promise<CryptoKey | undefined> {
  try {
    return await keys.lookup(header, input);
  } catch (error) {
    if (!(error instanceof errors.JWKSNoMatchingKey)) throw error;
    if (typeof header.kid === 'string' && keys.unusable.has(header.kid)) throw new UnusableKey();
    return undefined;
  }
}

/** plantstore's scopes among a JWT's `scope` (space-separated) and `scp` (array, or space-separated). */
function grantsOf(payload: JWTPayload): { scopes: Scope[]; admin: boolean } {
  const words: string[] = [];
  const add = (value: unknown): void => {
    if (typeof value === 'string') words.push(...value.split(' '));
    else if (Array.isArray(value)) for (const v of value) if (typeof v === 'string') words.push(v);
  };
  add(payload.scope);
  add(payload.scp);
  return { scopes: [...new Set(words.filter(isScope))], admin: words.includes(ADMIN_SCOPE) };
}

/** Refuses unknown keys with the provider unreachable: 503, which the client retries, never 401. */
class ProviderUnavailable extends Error {}
/**
 * The provider publishes no key this server can use (none imports, or none is of JWT_ALGORITHMS): no JWT
 * can be verified, whatever it is, so it is not the token's fault. 503 as for an unreachable provider.
 */
class NoUsableKey extends Error {}
/** The token names a key the provider publishes but this server cannot use (key-screen.ts): a refusal. */
class UnusableKey extends Error {}

/**
 * JWT access tokens from the team's identity provider: signature by the provider's published
 * keys (jwks.ts), `iss`, `aud`, `exp`/`nbf` with JWT_CLOCK_SKEW, the allowed algorithms; the user from
 * JWT_USER_CLAIM and plantstore's scopes. A verified token is remembered until its `exp` (at most
 * VERIFIED_TTL_MS), so that the next request with it costs one Map lookup and is answered synchronously.
 */
export class JwtVerifier implements Verifier {
  readonly #settings: JwtSettings;
  readonly #options: JWTVerifyOptions;
  readonly #keys: ProviderKeys;
  readonly #verified = new Map<string, Verified>();
  #verifiedChars = 0;
  /** Verifications in flight, so that concurrent requests with one new token share one. */
  readonly #pending = new Map<string, Promise<Verdict>>();

  constructor(
    settings: JwtSettings,
    log: FastifyBaseLogger,
    { cooldownMs, fetchTimeoutMs }: { cooldownMs?: number | undefined; fetchTimeoutMs?: number | undefined } = {},
  ) {
    this.#settings = settings;
    this.#options = {
      ...(settings.jwtIssuer === null ? {} : { issuer: settings.jwtIssuer }),
      ...(settings.jwtAudience === null ? {} : { audience: settings.jwtAudience }),
      algorithms: [...settings.jwtAlgorithms],
      clockTolerance: settings.jwtClockSkewMs / 1000,
      // An access token without an expiry would be valid forever (RFC 9068 §2.2 requires exp).
      requiredClaims: ['exp'],
    };
    this.#keys = new ProviderKeys({
      issuer: settings.jwtIssuer, jwksUrl: settings.jwtJwksUrl, algorithms: settings.jwtAlgorithms, log, cooldownMs, fetchTimeoutMs,
    });
  }

  /** The JWT shape; an opaque token is told apart by its prefix before any pattern runs. */
  accepts(token: string): boolean {
    // A remembered token had the shape when it was verified: one lookup instead of the regex over a
    // JWT's ~800 characters. (A remembered token seldom gets here: authenticate asks `known` first.)
    return !token.startsWith('pst_') && (this.#remembered(token) !== undefined || JWT_SHAPE.test(token));
  }

  known(token: string, now: number): Principal | undefined {
    const known = this.#remembered(token);
    return known !== undefined && now < known.until ? known.principal : undefined;
  }

  verify(token: string, now: number): Verdict | Promise<Verdict> {
    const known = this.#remembered(token);
    if (known !== undefined) {
      if (now < known.until) return known.principal;
      this.#forget(known);
    }
    let pending = this.#pending.get(token);
    if (pending === undefined) {
      pending = this.#verify(token, now).finally(() => this.#pending.delete(token));
      this.#pending.set(token, pending);
    }
    return pending;
  }

  close(): void {
    this.#keys.close();
  }

  async #verify(token: string, now: number): Promise<Verdict> {
    // The algorithm is checked before any key lookup, so that "none" or HS256 never causes a fetch.
    let alg: unknown;
    try {
      alg = decodeProtectedHeader(token).alg;
    } catch {
      return refusal('malformed');
    }
    if (typeof alg !== 'string' || !this.#options.algorithms?.includes(alg)) return refusal('alg');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, (header, input) => this.#key(header, input, now), { ...this.#options, currentDate: new Date(now) }));
    } catch (error) {
      if (error instanceof ProviderUnavailable || error instanceof NoUsableKey) {
        const message = error instanceof NoUsableKey ? NO_USABLE_KEY : ERRORS.identityProviderUnavailable.message;
        throw new ApiError(ERRORS.identityProviderUnavailable, message, {
          'retry-after': String(this.#keys.retryAfterSeconds(Date.now())),
        });
      }
      if (error instanceof UnusableKey) return refusal('unusableKey');
      return refusalOf(error);
    }
    const user = payload[this.#settings.jwtUserClaim];
    if (typeof user !== 'string') return refusal('user');
    // The rule's reason is ASCII without quotes (it names a code point as U+XXXX): fit for the challenge.
    const problem = userNameProblem(user);
    if (problem !== null) return refusal('user', `JWT user claim is not a valid user name: it ${problem}`);
    const grants = grantsOf(payload);
    const scopes = grants.scopes.length === 0 && !grants.admin ? [...this.#settings.jwtDefaultScopes] : grants.scopes;
    const principal: Principal = { tokenId: NO_TOKEN_ID, user, scopes, admin: grants.admin };
    // jwtVerify required exp; remembered never past it (the skew is left to a fresh verification).
    this.#remember({ token, principal, until: Math.min((payload.exp as number) * 1000, now + VERIFIED_TTL_MS) });
    return principal;
  }

  /**
   * The key from the cached set; for an unknown kid, or while the set holds no usable key, the set
   * fetched again (cooldown permitting).
   */
  async #key(header: JWSHeaderParameters, input: FlattenedJWSInput, now: number): Promise<CryptoKey> {
    const cached = this.#keys.keys;
    if (cached !== undefined && cached.usable > 0) {
      const key = await lookUp(cached, header, input);
      if (key !== undefined) return key;
    }
    const reachable = await this.#keys.refetchForUnknownKey(now);
    const fresh = this.#keys.keys;
    if (fresh !== undefined && fresh !== cached && fresh.usable > 0) {
      const key = await lookUp(fresh, header, input);
      if (key !== undefined) return key;
      throw new errors.JWKSNoMatchingKey();
    }
    if (!reachable) throw new ProviderUnavailable();
    if (fresh !== undefined && fresh.usable === 0) throw new NoUsableKey();
    throw new errors.JWKSNoMatchingKey();
  }

  #remembered(token: string): Verified | undefined {
    const entry = this.#verified.get(tailOf(token));
    return entry?.token === token ? entry : undefined;
  }

  #remember(entry: Verified): void {
    if (entry.until <= Date.now()) return;
    const other = this.#verified.get(tailOf(entry.token));
    if (other !== undefined) this.#forget(other);
    while (this.#verified.size >= VERIFIED_MAX_ENTRIES || this.#verifiedChars + entry.token.length > VERIFIED_MAX_CHARS) {
      const oldest = this.#verified.values().next();
      if (oldest.done) break;
      this.#forget(oldest.value);
    }
    this.#verified.set(tailOf(entry.token), entry);
    this.#verifiedChars += entry.token.length;
  }

  #forget(entry: Verified): void {
    const tail = tailOf(entry.token);
    if (this.#verified.get(tail) !== entry) return;
    this.#verified.delete(tail);
    this.#verifiedChars -= entry.token.length;
  }
}
