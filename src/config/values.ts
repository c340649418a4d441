import { isIP } from 'node:net';
import { isScope, type Scope } from '../domain/principal.js';
import { ConfigError } from './error.js';

// The typed values of the settings that are more than a number, a duration or on/off, and how their
// text is read: the option table (options.ts) names these parsers, and the code that uses a value
// imports its type from here.

/** At most `limit` events per `windowMs`, counted in fixed windows. */
export interface Rate {
  readonly limit: number;
  readonly windowMs: number;
}

export const RATE = /^([1-9]\d{0,8})\/(second|minute|hour)$/;
const WINDOW_MS = { second: 1000, minute: 60_000, hour: 3_600_000 } as const;

export function rateRefusal(name: string, value: string): string {
  return `${name} must look like 600/minute (or N/second, N/hour) or be off, got "${value}"`;
}

export function parseRate(name: string, value: string): Rate | null {
  if (value === 'off') return null;
  const m = RATE.exec(value);
  if (!m) throw new ConfigError(rateRefusal(name, value));
  return { limit: Number(m[1]), windowMs: WINDOW_MS[m[2] as keyof typeof WINDOW_MS] };
}

/** Fastify's trustProxy: false, or the proxies' addresses/CIDRs (and proxy-addr's named ranges). */
export type TrustProxy = false | string;

export function trustProxyRefusal(value: string): string {
  return `TRUST_PROXY must be off or comma-separated proxy addresses/CIDRs, got "${value}"`;
}

/**
 * Each entry an IP address (node:net's isIP, which takes IPv6 zone ids such as %eth0, so no pattern can
 * say it) with an optional prefix length, or one of proxy-addr's named ranges.
 */
export function parseTrustProxy(value: string): TrustProxy {
  if (value === 'off') return false;
  const valid = (entry: string) => {
    if (['loopback', 'linklocal', 'uniquelocal'].includes(entry)) return true;
    const [address = '', prefix] = entry.split('/');
    return isIP(address) !== 0 && (prefix === undefined || /^\d{1,3}$/.test(prefix));
  };
  if (value.split(',').every((e) => valid(e.trim()))) return value;
  throw new ConfigError(trustProxyRefusal(value));
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
/** LOG_FORMAT: auto is pretty on a terminal, JSON otherwise (src/logger.ts decides). */
export type LogFormatSetting = 'auto' | 'json' | 'pretty';
export const LOG_FORMATS: readonly LogFormatSetting[] = ['auto', 'json', 'pretty'];

/**
 * The asymmetric signature algorithms a key set can verify. `none` and HMAC (HS256, HS384, HS512) are not
 * among them: an HMAC key is a shared secret, and a public key set must never be used as one (the
 * classic "alg confusion" attack).
 */
export const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'] as const;
export type JwtAlgorithm = (typeof JWT_ALGORITHMS)[number];

export function parseJwtAlgorithms(value: string): readonly JwtAlgorithm[] {
  const names = value.split(',').map((a) => a.trim()).filter(Boolean);
  if (names.length === 0) throw new ConfigError('JWT_ALGORITHMS must name at least one algorithm');
  for (const name of names) {
    if (name.toLowerCase() === 'none' || /^HS\d+$/i.test(name)) {
      throw new ConfigError(`JWT_ALGORITHMS: ${name} is never accepted (unsigned, or an HMAC shared secret rather than a key set's public key)`);
    }
    if (!(JWT_ALGORITHMS as readonly string[]).includes(name)) {
      throw new ConfigError(`JWT_ALGORITHMS: unknown algorithm "${name}"; algorithms are ${JWT_ALGORITHMS.join(', ')}`);
    }
  }
  return [...new Set(names)] as JwtAlgorithm[];
}

export function parseJwtDefaultScopes(value: string): readonly Scope[] {
  const names = value.split(/[\s,]+/).filter(Boolean);
  for (const name of names) {
    if (name === 'plants:admin') throw new ConfigError('JWT_DEFAULT_SCOPES must not grant plants:admin (it would make every user of the provider an admin)');
    if (!isScope(name)) throw new ConfigError(`JWT_DEFAULT_SCOPES: unknown scope "${name}"`);
  }
  return [...new Set(names)] as Scope[];
}

const LOOPBACK_HOSTS = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/;

/**
 * A provider URL: https, or http on a loopback address only (a test stand-in, a local provider): keys
 * fetched over plain HTTP from elsewhere could be replaced by anyone on the path. Never with credentials.
 */
export function providerUrlProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not a URL';
  }
  // fetch refuses a URL with credentials, so such a provider could never be reached; and a key set is public.
  if (url.username !== '' || url.password !== '') return 'must not hold a user name or password (user:password@): fetch refuses credentials in a URL, and a key set is public';
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.test(url.hostname)) return null;
  return 'must be an https:// URL (http:// only on a loopback address)';
}
