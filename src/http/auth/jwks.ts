import type { FastifyBaseLogger } from 'fastify';
import { createLocalJWKSet, type JSONWebKeySet, type JWSHeaderParameters, type FlattenedJWSInput, type CryptoKey } from 'jose';
import { providerUrlProblem } from '../../config/values.js';
import { shownUrl } from '../../domain/shown.js';
import { screenKeys } from './key-screen.js';

/*
 * Our own key cache over jose's createLocalJWKSet, rather than jose's createRemoteJWKSet (evaluated when
 * identity providers came in): once its cache is older than `cacheMaxAge`, createRemoteJWKSet refetches inside the
 * verification and fails it when the provider is down, so cached keys would stop working in an outage;
 * its refetch cooldown counts from the last *successful* fetch, so while the provider fails, every token
 * with an unknown kid would call it again; and it reads no cache headers. Here: keys are refreshed in the
 * background on the provider's Cache-Control max-age (clamped), kept through any outage, and fetched for
 * an unknown kid at most once per cooldown whatever the outcome of the last fetch.
 */

/** At most one key-set fetch per this period for tokens naming an unknown `kid`. */
export const KEY_REFETCH_COOLDOWN_MS = 30_000;
/** The background refresh period is the key set's Cache-Control max-age, clamped to this range… */
export const MIN_REFRESH_MS = 60_000;
export const MAX_REFRESH_MS = 86_400_000;
/** …or this when the answer has no max-age. */
export const DEFAULT_REFRESH_MS = 600_000;
/** After a failed fetch, the background retries after this, doubling up to MAX_RETRY_MS. */
const FIRST_RETRY_MS = 5000;
const MAX_RETRY_MS = 300_000;
const FETCH_TIMEOUT_MS = 5000;
/** A discovery document or key set larger than this is refused (real ones are a few KiB). */
const MAX_DOCUMENT_BYTES = 1 << 20;

export interface ProviderOptions {
  /** Keys by OpenID Connect discovery from this issuer, unless `jwksUrl` names the key set. */
  readonly issuer: string | null;
  readonly jwksUrl: string | null;
  /** JWT_ALGORITHMS: a published key that verifies with none of them is no usable key. */
  readonly algorithms: readonly string[];
  readonly log: FastifyBaseLogger;
  /** KEY_REFETCH_COOLDOWN_MS; tests shorten it. */
  readonly cooldownMs?: number | undefined;
  /** How long one fetch may take, FETCH_TIMEOUT_MS unless given; tests shorten it. */
  readonly fetchTimeoutMs?: number | undefined;
}

type KeyLookup = (header: JWSHeaderParameters, token: FlattenedJWSInput) => Promise<CryptoKey>;

/** The key set of the last successful fetch, screened (key-screen.ts); replaced whole by the next. */
export interface KeySet {
  /** The key for a token's header; rejects with jose's JWKSNoMatchingKey if none. */
  readonly lookup: KeyLookup;
  /** How many of its keys verify with an allowed algorithm: 0 means no JWT can be verified. */
  readonly usable: number;
  /** The kids of the keys left out because they cannot be used (null: keys without one). */
  readonly unusable: ReadonlySet<string | null>;
}

class FetchFailure extends Error {}

/** `max-age` of a Cache-Control value, clamped; no-store/no-cache mean "as often as allowed". */
export function refreshPeriodOf(cacheControl: string | null): number {
  if (cacheControl === null) return DEFAULT_REFRESH_MS;
  if (/(^|[\s,])(no-store|no-cache)([\s,=]|$)/i.test(cacheControl)) return MIN_REFRESH_MS;
  const m = /(?:^|[\s,])max-age\s*=\s*"?(\d{1,10})"?/i.exec(cacheControl);
  if (!m) return DEFAULT_REFRESH_MS;
  return Math.min(MAX_REFRESH_MS, Math.max(MIN_REFRESH_MS, Number(m[1]) * 1000));
}

/** GETs a JSON document, bounded in time and size; redirects are not followed. */
async function fetchJson(url: string, stop: AbortSignal, timeoutMs: number): Promise<{ json: unknown; cacheControl: string | null }> {
  // Every message names the document as shownUrl shows it: a key set URL may carry an API key.
  const where = shownUrl(url);
  let response: Response;
  try {
    response = await fetch(url, {
      headers: { accept: 'application/json, application/jwk-set+json' },
      redirect: 'manual',
      signal: AbortSignal.any([AbortSignal.timeout(timeoutMs), stop]),
    });
  } catch (error) {
    throw new FetchFailure(`${where}: ${(error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : (error as Error).message}`);
  }
  if (response.status !== 200) {
    await response.body?.cancel();
    throw new FetchFailure(`${where}: HTTP ${response.status}`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of response.body ?? []) {
      size += (chunk as Uint8Array).byteLength;
      if (size > MAX_DOCUMENT_BYTES) throw new FetchFailure(`${where}: larger than ${MAX_DOCUMENT_BYTES} bytes`);
      chunks.push(chunk as Uint8Array);
    }
  } catch (error) {
    if (error instanceof FetchFailure) throw error;
    // The timeout (or the connection) ended while the body was arriving: say which document.
    throw new FetchFailure(`${where}: the body did not arrive (${(error as Error).message})`);
  }
  try {
    return { json: JSON.parse(Buffer.concat(chunks).toString('utf8')), cacheControl: response.headers.get('cache-control') };
  } catch {
    throw new FetchFailure(`${where}: not JSON`);
  }
}

/** The discovery document's URL (OpenID Connect Discovery §4: a trailing slash of the issuer is dropped). */
export function discoveryUrl(issuer: string): string {
  return `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
}

/**
 * An identity provider's signing keys: fetched at construction in the background (start-up never waits
 * for the provider), refreshed periodically, and on demand for an unknown `kid` at most once per cooldown.
 * Logs one warning when the provider cannot be reached, and one line when it can again.
 */
export class ProviderKeys {
  readonly #issuer: string | null;
  readonly #configuredJwksUrl: string | null;
  readonly #algorithms: readonly string[];
  readonly #log: FastifyBaseLogger;
  readonly #cooldownMs: number;
  readonly #fetchTimeoutMs: number;
  /** From discovery; forgotten when a fetch fails, so that the next one discovers again. */
  #jwksUrl: string | null;
  #keys: KeySet | undefined;
  #lastAttemptAt = Number.NEGATIVE_INFINITY;
  #inFlight: Promise<void> | undefined;
  /** Whether the last fetch succeeded; undefined before the first ends. */
  #reachable: boolean | undefined;
  #failures = 0;
  #timer: NodeJS.Timeout | undefined;
  /** Aborts a fetch in flight when the app closes, so that it does not hold the process. */
  readonly #stop = new AbortController();

  constructor({ issuer, jwksUrl, algorithms, log, cooldownMs = KEY_REFETCH_COOLDOWN_MS, fetchTimeoutMs = FETCH_TIMEOUT_MS }: ProviderOptions) {
    this.#issuer = issuer;
    this.#algorithms = algorithms;
    this.#configuredJwksUrl = jwksUrl;
    this.#jwksUrl = jwksUrl;
    this.#log = log;
    this.#cooldownMs = cooldownMs;
    this.#fetchTimeoutMs = fetchTimeoutMs;
    void this.#fetch();
  }

  /** The cached key set; undefined until a fetch succeeds. */
  get keys(): KeySet | undefined {
    return this.#keys;
  }

  /**
   * For a token whose key is not cached: fetches the key set again unless the cooldown forbids it (or
   * joins the fetch in flight). Resolves to whether the provider answered the last fetch.
   */
  async refetchForUnknownKey(now: number): Promise<boolean> {
    if (this.#inFlight === undefined && now - this.#lastAttemptAt >= this.#cooldownMs) void this.#fetch();
    if (this.#inFlight !== undefined) await this.#inFlight;
    return this.#reachable === true;
  }

  /** Seconds until an unknown key may be fetched again: the Retry-After of a 503. */
  retryAfterSeconds(now: number): number {
    return Math.max(1, Math.ceil((this.#lastAttemptAt + this.#cooldownMs - now) / 1000));
  }

  close(): void {
    this.#stop.abort();
    clearTimeout(this.#timer);
  }

  #fetch(): Promise<void> {
    this.#lastAttemptAt = Date.now();
    clearTimeout(this.#timer);
    const attempt = this.#load().then(
      (refreshMs) => this.#succeeded(refreshMs),
      (error: unknown) => this.#failed(error),
    ).finally(() => {
      if (this.#inFlight === attempt) this.#inFlight = undefined;
    });
    this.#inFlight = attempt;
    return attempt;
  }

  /** Discovery (when needed), then the key set; answers the refresh period its headers ask for. */
  async #load(): Promise<number> {
    if (this.#jwksUrl === null && this.#issuer !== null) this.#jwksUrl = await this.#discover(this.#issuer);
    if (this.#jwksUrl === null) throw new FetchFailure('no key set URL');
    const url = this.#jwksUrl;
    const { json, cacheControl } = await fetchJson(url, this.#stop.signal, this.#fetchTimeoutMs);
    const screened = await screenKeys(publicSignatureKeys(json, url).keys, this.#algorithms);
    const unusable = new Set(screened.unusable.keys());
    for (const [kid, reason] of screened.unusable) {
      // Once per key: the next fetches of the same set say nothing more.
      if (!this.#keys?.unusable.has(kid)) {
        this.#log.warn({ jwks: shownUrl(url), kid, reason }, 'identity provider key skipped: it cannot be used, and JWTs naming it are refused (401)');
      }
    }
    if (screened.usable === 0 && this.#keys?.usable !== 0) {
      this.#log.warn({ jwks: shownUrl(url) }, 'identity provider publishes no key this server can use: JWTs are answered 503 until it does');
    } else if (screened.usable > 0 && this.#keys?.usable === 0) {
      this.#log.info({ jwks: shownUrl(url) }, 'identity provider publishes a usable key again');
    }
    this.#keys = { lookup: createLocalJWKSet(screened.set), usable: screened.usable, unusable };
    return refreshPeriodOf(cacheControl);
  }

  async #discover(issuer: string): Promise<string> {
    const url = discoveryUrl(issuer);
    const { json } = await fetchJson(url, this.#stop.signal, this.#fetchTimeoutMs);
    const where = shownUrl(url);
    const doc = (json ?? {}) as { issuer?: unknown; jwks_uri?: unknown };
    // OpenID Connect Discovery §4.3: the document must name the issuer it was fetched for.
    if (doc.issuer !== issuer) throw new FetchFailure(`${where}: its issuer is ${JSON.stringify(doc.issuer)}, not JWT_ISSUER`);
    if (typeof doc.jwks_uri !== 'string') throw new FetchFailure(`${where}: no jwks_uri`);
    const problem = providerUrlProblem(doc.jwks_uri);
    if (problem) throw new FetchFailure(`${where}: jwks_uri ${problem}`);
    return doc.jwks_uri;
  }

  #succeeded(refreshMs: number): void {
    if (this.#reachable !== true) {
      this.#log.info({ jwks: this.#jwksUrl === null ? null : shownUrl(this.#jwksUrl) }, this.#reachable === false ? 'identity provider reachable again; keys refreshed' : 'identity provider keys loaded');
    }
    this.#reachable = true;
    this.#failures = 0;
    this.#schedule(refreshMs);
  }

  #failed(error: unknown): void {
    if (this.#stop.signal.aborted) return;
    if (this.#reachable !== false) {
      this.#log.warn(
        { err: error instanceof FetchFailure ? error.message : String(error), cachedKeys: this.#keys !== undefined },
        'identity provider cannot be reached: JWTs signed with keys already fetched keep working, others are answered 503',
      );
    }
    this.#reachable = false;
    if (this.#configuredJwksUrl === null) this.#jwksUrl = null;
    this.#failures += 1;
    this.#schedule(Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** (this.#failures - 1)));
  }

  #schedule(ms: number): void {
    if (this.#stop.signal.aborted) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#fetch(), ms);
    this.#timer.unref();
  }
}

/**
 * The key set without symmetric keys: a `kty: "oct"` entry would be an HMAC secret published to the
 * world, and must never verify anything (JWT_ALGORITHMS refuses HMAC too).
 */
function publicSignatureKeys(json: unknown, url: string): JSONWebKeySet {
  const keys = (json as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) throw new FetchFailure(`${shownUrl(url)}: not a JSON Web Key Set`);
  return { keys: keys.filter((k): k is JSONWebKeySet['keys'][number] => typeof k === 'object' && k !== null && (k as { kty?: unknown }).kty !== 'oct') };
}
