import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

export type SigningAlg = 'RS256' | 'PS256' | 'ES256' | 'EdDSA' | 'ES384';

export interface SigningKey {
  readonly kid: string;
  readonly alg: SigningAlg;
  readonly privateKey: CryptoKey;
  readonly jwk: JWK;
}

export async function signingKey(alg: SigningAlg, kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/**
 * An OpenID provider stand-in on loopback: the discovery document at
 * `<issuer>/.well-known/openid-configuration` and a key set at `<origin>/jwks`, from keys made by jose.
 * It counts key-set requests, can rotate keys, and can go "down" (connections are reset, as when the
 * provider cannot be reached).
 */
export class TestProvider {
  readonly #server: Server;
  /** Keys published in the key set. */
  published: SigningKey[] = [];
  /** How many times the key set was asked for (discovery not counted). */
  jwksRequests = 0;
  down = false;
  cacheControl = 'public, max-age=300';
  origin = '';

  private constructor() {
    this.#server = createServer((request, response) => {
      if (this.down) {
        request.socket.destroy();
        return;
      }
      if (request.url === '/realms/test/.well-known/openid-configuration') {
        response.setHeader('content-type', 'application/json');
        response.end(JSON.stringify({ issuer: this.issuer, jwks_uri: this.jwksUrl, id_token_signing_alg_values_supported: ['RS256'] }));
      } else if (request.url === '/jwks') {
        this.jwksRequests += 1;
        response.setHeader('content-type', 'application/jwk-set+json');
        response.setHeader('cache-control', this.cacheControl);
        response.end(JSON.stringify({ keys: this.published.map((k) => k.jwk) }));
      } else {
        response.statusCode = 404;
        response.end();
      }
    });
  }

  static async start(t: TestContext, keys: SigningKey[]): Promise<TestProvider> {
    const provider = new TestProvider();
    provider.published = keys;
    provider.#server.listen(0, '127.0.0.1');
    await once(provider.#server, 'listening');
    provider.origin = `http://127.0.0.1:${(provider.#server.address() as AddressInfo).port}`;
    t.after(() => {
      provider.#server.closeAllConnections();
      provider.#server.close();
    });
    return provider;
  }

  get issuer(): string {
    return `${this.origin}/realms/test`;
  }

  get jwksUrl(): string {
    return `${this.origin}/jwks`;
  }
}

export const AUDIENCE = 'plantstore-api';

export interface SignOptions {
  readonly key: SigningKey;
  /** Header alg, when it should differ from the key's. */
  readonly alg?: string;
  readonly kid?: string | null;
  /** Seconds from now; null: no exp claim. */
  readonly expiresIn?: number | null;
  readonly notBefore?: number;
  readonly issuer?: string;
  readonly audience?: string | string[];
}

/** A JWT as the provider would issue it: `claims` plus iss, aud, iat, exp (10 minutes) by default. */
export async function sign(provider: TestProvider, claims: JWTPayload, o: SignOptions): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const header: { alg: string; kid?: string; typ: string } = { alg: o.alg ?? o.key.alg, typ: 'JWT' };
  if (o.kid !== null) header.kid = o.kid ?? o.key.kid;
  const jwt = new SignJWT({ ...claims })
    .setProtectedHeader(header)
    .setIssuer(o.issuer ?? provider.issuer)
    .setAudience(o.audience ?? AUDIENCE)
    .setIssuedAt(now);
  if (o.expiresIn !== null) jwt.setExpirationTime(now + (o.expiresIn ?? 600));
  if (o.notBefore !== undefined) jwt.setNotBefore(now + o.notBefore);
  return jwt.sign(o.key.privateKey);
}

/** A loopback port nothing listens on (a provider that is down from the start). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}
