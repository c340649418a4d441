import { importJWK, type CryptoKey, type JSONWebKeySet, type JWK } from 'jose';

/*
 * A key set is screened when it is fetched, not when a token names a key: jose imports a key on first
 * use, and a key WebCrypto refuses (an EC point off its curve) or one jose refuses to verify with (an RSA
 * modulus under 2048 bits, RFC 7518 §3.3, which some providers still publish) would otherwise fail every
 * request naming it with an exception that is not the token's fault, nor a refusal. Screened, such a key
 * is left out of the set, warned of once, and a token naming it is refused like any other bad token.
 */

type Jwk = JSONWebKeySet['keys'][number];

/** The key type (and curve) each algorithm JWT_ALGORITHMS may name verifies with. */
const KEY_OF: Readonly<Record<string, { kty: string; crv?: string }>> = {
  RS256: { kty: 'RSA' }, RS384: { kty: 'RSA' }, RS512: { kty: 'RSA' },
  PS256: { kty: 'RSA' }, PS384: { kty: 'RSA' }, PS512: { kty: 'RSA' },
  ES256: { kty: 'EC', crv: 'P-256' }, ES384: { kty: 'EC', crv: 'P-384' }, ES512: { kty: 'EC', crv: 'P-521' },
  EdDSA: { kty: 'OKP' }, Ed25519: { kty: 'OKP', crv: 'Ed25519' },
};

const MIN_RSA_BITS = 2048;

export interface ScreenedKeys {
  /** The set to verify with: every key but the unusable ones. */
  readonly set: JSONWebKeySet;
  /** How many keys verify with one of the allowed algorithms: none means no JWT can be verified. */
  readonly usable: number;
  /** The keys left out, by kid (null: a key without one), and why. */
  readonly unusable: ReadonlyMap<string | null, string>;
}

/**
 * The allowed algorithms a key is meant for: its `alg` if it names one, else all of its type and curve.
 * None for a key of another purpose (`use: enc`, key_ops without verify) or of an algorithm not allowed:
 * such a key is no one's concern here, and stays in the set (jose never picks it).
 */
function algorithmsFor(jwk: Jwk, allowed: readonly string[]): string[] {
  if (jwk.use !== undefined && jwk.use !== 'sig') return [];
  if (Array.isArray(jwk.key_ops) && !jwk.key_ops.includes('verify')) return [];
  return allowed.filter((alg) => {
    const key = KEY_OF[alg];
    return key !== undefined && key.kty === jwk.kty && (key.crv === undefined || key.crv === jwk.crv) && (jwk.alg === undefined || jwk.alg === alg);
  });
}

/** Why the key cannot verify with `alg`, or null when it can. */
async function problemOf(jwk: Jwk, alg: string): Promise<string | null> {
  try {
    const key = await importJWK(jwk as JWK, alg);
    const bits = (key as CryptoKey).algorithm as { modulusLength?: unknown };
    if (jwk.kty === 'RSA' && (typeof bits.modulusLength !== 'number' || bits.modulusLength < MIN_RSA_BITS)) {
      return `an RSA key of ${String(bits.modulusLength)} bits (at least ${MIN_RSA_BITS} are required)`;
    }
    return null;
  } catch (error) {
    return `cannot be imported for ${alg} (${error instanceof Error ? error.message : String(error)})`;
  }
}

/** The key set with the keys no allowed algorithm can verify with taken out (see the comment above). */
export async function screenKeys(keys: readonly Jwk[], allowed: readonly string[]): Promise<ScreenedKeys> {
  const kept: Jwk[] = [];
  const unusable = new Map<string | null, string>();
  let usable = 0;
  for (const jwk of keys) {
    const algorithms = algorithmsFor(jwk, allowed);
    let problem: string | null = null;
    for (const alg of algorithms) {
      problem = await problemOf(jwk, alg);
      if (problem === null) break;
    }
    if (problem === null) {
      kept.push(jwk);
      if (algorithms.length > 0) usable += 1;
    } else {
      unusable.set(typeof jwk.kid === 'string' ? jwk.kid : null, problem);
    }
  }
  return { set: { keys: kept }, usable, unusable };
}
