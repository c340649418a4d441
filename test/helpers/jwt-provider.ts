import { once } from 'node:events';
import { generateKeyPairSync, sign as signBytes, type KeyObject } from 'node:crypto';
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

/** What a key set publishes: a key of ours (SigningKey) or one the server cannot use (below). */
export interface PublishedKey {
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
  published: PublishedKey[] = [];
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

  static async start(t: TestContext, keys: PublishedKey[]): Promise<TestProvider> {
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

/**
 * An RSA key of 1024 bits, as some providers still publish: jose refuses to sign or verify with it
 * (RFC 7518 §3.3 asks for 2048 bits), so it is made by node:crypto and its tokens signed by hand.
 */
export interface WeakRsaKey extends PublishedKey {
  readonly kid: string;
  readonly privateKey: KeyObject;
}

export function weakRsaKey(kid: string): WeakRsaKey {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
  return { kid, privateKey, jwk: { ...publicKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' } };
}

/** An RS256 JWT signed with a key jose would not sign with: iss, aud, iat and exp as `sign` sets them. */
export function signWithWeakKey(provider: TestProvider, claims: JWTPayload, key: WeakRsaKey): string {
  const now = Math.floor(Date.now() / 1000);
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const input = `${part({ alg: 'RS256', kid: key.kid, typ: 'JWT' })}.${part({ iss: provider.issuer, aud: AUDIENCE, iat: now, exp: now + 600, ...claims })}`;
  return `${input}.${signBytes('sha256', Buffer.from(input), key.privateKey).toString('base64url')}`;
}

/**
 * An ES256 key whose published point is not on the curve (its `y` changed in one bit): WebCrypto refuses
 * to import it. `signer` still holds the private key of the point before the change, so that its tokens
 * are well-formed ES256 JWTs naming this kid.
 */
export async function badEcKey(kid: string): Promise<{ jwk: JWK; signer: SigningKey }> {
  const signer = await signingKey('ES256', kid);
  const y = Buffer.from(signer.jwk.y as string, 'base64url');
  y[5] = (y[5] as number) ^ 1;
  return { signer, jwk: { ...signer.jwk, y: y.toString('base64url') } };
}
