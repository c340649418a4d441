import { createHmac } from 'node:crypto';

/** What every Standard Webhooks secret starts with; the rest is the base64 of the key. */
const SECRET_PREFIX = 'whsec_';

/** The HMAC key of a `whsec_…` secret: the bytes its base64 part encodes. */
export function signingKey(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('a webhook secret starts with whsec_');
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
}

/**
 * The `webhook-signature` header of one attempt (Standard Webhooks, version 1): `v1,` and the base64
 * HMAC-SHA256, keyed by the secret's bytes, of `id.timestamp.body`, so that a receiver using the
 * `standardwebhooks` library (or the few lines docs/webhooks.md shows) verifies it. `secret` is the
 * `whsec_…` text, decoded here, or the key `signingKey(secret)` made already, for a caller that signs many
 * times with one secret. The sender decodes the key at each attempt (sender.ts, `signatures`).
 */
export function sign(secret: string | Buffer, id: string, timestampSeconds: number, body: string): string {
  const key = typeof secret === 'string' ? signingKey(secret) : secret;
  const mac = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}
