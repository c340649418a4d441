import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { Agent } from 'undici';
import type { ClaimedDelivery } from '../domain/webhook.js';
import { isForbiddenAddress, isLoopbackName, literalAddress } from './destination.js';
import { sign, signingKey } from './signature.js';

/**
 * A receiver's answer body is read (so that the connection can be reused) and thrown away; one that is
 * longer than this is cut off with its connection instead of being read to its end.
 */
const MAX_RESPONSE_BODY_BYTES = 64 * 1024;

/** How one attempt ended: the receiver's status when it answered, and a short text when it failed. */
export interface SendResult {
  readonly status: number | null;
  readonly error: string | null;
  /**
   * Set when nothing was sent because the destination is not allowed (a private address, literal or
   * resolved): trying again on the retry schedule would only repeat the refusal, so the event fails now.
   */
  readonly forbidden?: true;
}

export interface SenderOptions {
  /** The whole attempt — connecting, the request, the answer's headers and body — within this. */
  readonly timeoutMs: number;
  /** WEBHOOK_ALLOW_PRIVATE: skip the destination checks (local development and tests). */
  readonly allowPrivate: boolean;
  /** The User-Agent header: `plantstore/<version>`. */
  readonly userAgent: string;
  /** Connections kept per origin: as many as the attempts one endpoint may have in flight. */
  readonly connectionsPerOrigin: number;
  /** Resolves host names (dns.lookup when absent); tests give one that answers what they need. */
  readonly resolve?: Resolver | undefined;
}

/** The destination resolved (or is) an address webhooks are not sent to; its message is the attempt's error. */
export class ForbiddenDestinationError extends Error {
  readonly code = 'WEBHOOK_FORBIDDEN_DESTINATION';
  constructor(address: string) {
    super(`destination not allowed: ${address} is a private address`);
  }
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A name resolver with dns.lookup's `all: true` form: the sender's is dns.lookup unless a test gives one. */
export type Resolver = (
  hostname: string,
  options: { family: number; hints: number; all: true },
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/**
 * A lookup for the connection, refusing a name that is loopback by definition (`localhost`, `foo.localhost.`:
 * the rule registration applies, whatever this machine's resolver makes of such a name) and any name
 * that resolves to a forbidden address: the check happens on the resolution the connection then uses,
 * every time a connection is made, so a name that resolves to a public address at registration and to
 * 127.0.0.1 later (DNS rebinding) is not called. All addresses are checked, not just the first: the
 * connection may try each in turn (happy eyeballs).
 */
function checkedLookup(resolve: Resolver) {
  return (hostname: string, options: { all?: boolean; family?: number; hints?: number }, callback: LookupCallback): void => {
    if (isLoopbackName(hostname)) return callback(new ForbiddenDestinationError(hostname), []);
    resolve(hostname, { family: options.family ?? 0, hints: options.hints ?? 0, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const forbidden = addresses.find((a) => isForbiddenAddress(a.address));
      if (forbidden) return callback(new ForbiddenDestinationError(forbidden.address), []);
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), []);
      callback(null, first.address, first.family);
    });
  };
}

/** 10000 → "10s", 1500 → "1500ms": how timeouts are written in the configuration. */
function duration(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

const CONNECTION_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  UND_ERR_SOCKET: 'connection closed before the answer',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name could not be resolved',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_INFO: 'invalid answer',
  HPE_INVALID_CONSTANT: 'invalid HTTP answer',
};

/** The short text an attempt's error is shown as (GET /webhooks/{id}/deliveries): never a stack. */
function describe(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') {
    if (CONNECTION_ERRORS[code]) return CONNECTION_ERRORS[code];
    if (code.startsWith('HPE_')) return 'invalid HTTP answer';
    if (code.startsWith('ERR_TLS_') || code.includes('CERT') || code.startsWith('ERR_SSL_')) return `TLS error (${code})`;
    return `request failed (${code})`;
  }
  return 'request failed';
}

/**
 * The `webhook-signature` header: `v1,<new>`, and ` v1,<old>` while a rotated secret's overlap lasts
 * (Standard Webhooks: space-separated; a receiver accepts any one it can verify). The end of the overlap
 * is checked here, against this instance's clock, at the moment of signing: an attempt claimed during the
 * overlap and started after it carries the new signature only. Each secret is decoded here, at every
 * attempt: each attempt comes from its own claim, which carries the endpoint's secrets as they are then.
 */
export function signatures(delivery: ClaimedDelivery, timestamp: number, now: number): string {
  const current = sign(signingKey(delivery.secret), delivery.eventId, timestamp, delivery.body);
  const { previousSecret, previousSecretExpiresAt } = delivery;
  if (previousSecret === null || previousSecretExpiresAt === null || previousSecretExpiresAt.getTime() <= now) return current;
  return `${current} ${sign(signingKey(previousSecret), delivery.eventId, timestamp, delivery.body)}`;
}

/** Why the sender aborted an attempt itself. */
const TIMED_OUT = Symbol('timed out');

/**
 * Sends webhook attempts: one POST each, signed, on a shared keep-alive pool (one pool of at most
 * `connectionsPerOrigin` connections per origin), never following a redirect. `send` never rejects: every
 * way an attempt can end is a SendResult.
 */
export class Sender {
  /**
   * undici and the pool, made at the first attempt: a server whose users have no endpoint never loads
   * the HTTP client.
   */
  #client: Promise<{ readonly agent: Agent; readonly request: typeof import('undici').request }> | null = null;
  readonly #options: SenderOptions;
  readonly #timeoutText: string;

  constructor(options: SenderOptions) {
    this.#options = options;
    this.#timeoutText = `timed out after ${duration(options.timeoutMs)}`;
  }

  #http() {
    this.#client ??= import('undici').then(({ Agent, request }) => ({
      request,
      agent: new Agent({
        connections: this.#options.connectionsPerOrigin,
        headersTimeout: this.#options.timeoutMs,
        bodyTimeout: this.#options.timeoutMs,
        connect: {
          timeout: this.#options.timeoutMs,
          ...(this.#options.allowPrivate ? {} : { lookup: checkedLookup(this.#options.resolve ?? dnsLookup) }),
        },
      }),
    }));
    return this.#client;
  }

  /**
   * One attempt. `controller` lets the caller abort it (shutdown): it then ends with the error "aborted"
   * at once. A 2xx is success even when its body then fails to arrive: the receiver said it has the event.
   */
  async send(delivery: ClaimedDelivery, controller: AbortController = new AbortController()): Promise<SendResult> {
    const refused = this.#refusedLiteral(delivery.url);
    if (refused) return refused;
    const timer = setTimeout(() => controller.abort(TIMED_OUT), this.#options.timeoutMs);
    let status: number | null = null;
    try {
      const { agent, request } = await this.#http();
      const timestamp = Math.floor(Date.now() / 1000);
      const response = await request(delivery.url, {
        dispatcher: agent,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': this.#options.userAgent,
          'webhook-id': delivery.eventId,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signatures(delivery, timestamp, Date.now()),
          ...(delivery.test ? { 'webhook-test': 'true' } : {}),
        },
        body: delivery.body,
        signal: controller.signal,
      });
      status = response.statusCode;
      await response.body.dump({ limit: MAX_RESPONSE_BODY_BYTES, signal: controller.signal }).catch(() => undefined);
      if (status >= 200 && status < 300) return { status, error: null };
      if (status >= 300 && status < 400) return { status, error: 'redirect not followed' };
      return { status, error: `HTTP ${status}` };
    } catch (error) {
      if (status !== null && status >= 200 && status < 300) return { status, error: null };
      if (controller.signal.aborted) {
        return { status, error: controller.signal.reason === TIMED_OUT ? this.#timeoutText : 'aborted' };
      }
      if (error instanceof ForbiddenDestinationError) return { status: null, error: error.message, forbidden: true };
      return { status, error: describe(error) };
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * A URL whose host is an IP address connects without a lookup, so checkedLookup never sees it: it is
   * checked here, before anything is sent. (Registration refuses such URLs too; this catches an endpoint
   * registered while WEBHOOK_ALLOW_PRIVATE was on.)
   */
  #refusedLiteral(url: string): SendResult | null {
    if (this.#options.allowPrivate) return null;
    let address: string | null;
    try {
      address = literalAddress(new URL(url));
    } catch {
      return { status: null, error: 'invalid URL' };
    }
    if (address === null || !isForbiddenAddress(address)) return null;
    return { status: null, error: new ForbiddenDestinationError(address).message, forbidden: true };
  }

  /** Closes the pool's connections; attempts still in flight fail. */
  async close(): Promise<void> {
    if (this.#client !== null) await (await this.#client).agent.destroy();
  }
}
