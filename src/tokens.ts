import { hash, randomBytes } from 'node:crypto';
import { SCOPES, userNameProblem, type Scope } from './domain/principal.js';
import type { Store, TokenRecord } from './store/store.js';

/** A recognisable prefix lets secret scanners (and people) tell a plantstore token at a glance. */
export const TOKEN_PREFIX = 'pst_';
const TOKEN_BYTES = 32; // 256 bits of entropy
/**
 * What the README and `plantstore token revoke` promise: a revoked (or expired) token is refused by
 * every running server within this time. The servers' token cache (http/auth/opaque.ts) is bounded by it.
 */
export const REVOCATION_WITHIN_MS = 5000;

export function generateToken(): string {
  return TOKEN_PREFIX + randomBytes(TOKEN_BYTES).toString('base64url');
}

/** `pst_` and 43 base64url characters: every token plantstore has issued, since the first version. */
const TOKEN_LENGTH = TOKEN_PREFIX.length + Math.ceil((TOKEN_BYTES * 4) / 3);

/**
 * Whether a bearer string has the shape of a token this service issues (its characters are checked by
 * the Authorization header's syntax already). Anything else is no token of ours, though it is still
 * looked up (and refused) like any unknown one.
 */
export function looksLikeToken(bearer: string): boolean {
  return bearer.length === TOKEN_LENGTH && bearer.startsWith(TOKEN_PREFIX);
}

/**
 * Tokens carry 256 random bits, so a single fast hash is enough to make a stolen database useless:
 * there is nothing to brute-force. (A slow KDF is for low-entropy passwords, and would cost every request.)
 */
export function hashToken(token: string): string {
  // The one-shot crypto.hash (Node 20.12+) makes no Hash object: about half the CPU of createHash for
  // a token, and every request that carries one pays it.
  return hash('sha256', token, 'hex');
}

export interface TokenRequest {
  readonly user: string;
  readonly scopes?: readonly Scope[] | undefined;
  readonly admin?: boolean | undefined;
  readonly name?: string | undefined;
  readonly expiresInMs?: number | undefined;
}

export class TokenRequestError extends Error {}

export type TokenStatus = 'active' | 'expired' | 'revoked';

/** What `token list` and GET /tokens show: revoked wins over expired. */
export function tokenStatus(t: TokenRecord, now = Date.now()): TokenStatus {
  if (t.revokedAt !== null) return 'revoked';
  return t.expiresAt !== null && t.expiresAt.getTime() <= now ? 'expired' : 'active';
}

/** Creates a token; the secret is returned once and only its hash is stored. */
export async function issueToken(store: Store, req: TokenRequest): Promise<{ secret: string; record: TokenRecord }> {
  const problem = userNameProblem(req.user);
  if (problem) throw new TokenRequestError(`user name ${problem}`);
  const nameProblem = req.name === undefined ? null : userNameProblem(req.name);
  if (nameProblem) throw new TokenRequestError(`token name ${nameProblem}`);
  const scopes = req.scopes === undefined || req.scopes.length === 0 ? [...SCOPES] : [...new Set(req.scopes)];
  const secret = generateToken();
  const now = Date.now();
  const record = await store.createToken({
    hash: hashToken(secret),
    user: req.user,
    scopes,
    admin: req.admin ?? false,
    name: req.name ?? null,
    // One instant for both, so that expiresAt - createdAt is exactly the lifetime asked for.
    createdAt: new Date(now),
    expiresAt: req.expiresInMs === undefined ? null : new Date(now + req.expiresInMs),
  });
  return { secret, record };
}
