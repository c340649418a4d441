import { hash, randomBytes } from 'node:crypto';
import { SCOPES, userNameProblem, type Scope } from './principal.js';

/** A recognisable prefix lets secret scanners (and people) tell a plantstore token at a glance. */
export const TOKEN_PREFIX = 'pst_';
const TOKEN_BYTES = 32; // 256 bits of entropy
/**
 * What docs/tokens.md and `plantstore token revoke` promise: a revoked (or expired) token is refused by
 * every running server within this time. The servers' token cache (http/auth/opaque.ts) is bounded by it.
 */
export const REVOCATION_WITHIN_MS = 5000;

/**
 * Token ids are 1 to 2^53 - 1: every JSON reader (a JavaScript number above all) holds each exactly, so
 * `token list`, GET /tokens and the rate-limit key never show two tokens as one, and a revoke names one
 * token. The store refuses to give a token an id past it (the migration token_id_bound); a revoke naming a larger id
 * finds no token, since rounding it would name another.
 */
export const TOKEN_ID_MAX = Number.MAX_SAFE_INTEGER;

/**
 * The largest token id an import keeps (2^52): new tokens are numbered after the imported ones, so an
 * imported id near TOKEN_ID_MAX would leave the store unable to create any. 2^52 ids remain above it.
 */
export const TOKEN_ID_IMPORT_MAX = 2 ** 52;

const TOKEN_ID = /^[1-9]\d{0,15}$/;

/**
 * The token id `text` (decimal, as `token list` shows it) names, or null when it names none: not an id,
 * or past TOKEN_ID_MAX, which as a number would round to another token's id (2^53 + 1 is 2^53).
 */
export function parseTokenId(text: string): number | null {
  if (!TOKEN_ID.test(text) || BigInt(text) > BigInt(TOKEN_ID_MAX)) return null;
  return Number(text);
}

/** Names the store's refusal to pass TOKEN_ID_MAX (the SQLite trigger's message, the PostgreSQL constraint). */
const ID_GUARD = 'tokens_id_at_most_9007199254740991';

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
  // The one-shot crypto.hash (Node 20.12+) makes no Hash object, which createHash would for every
  // request that carries a token.
  return hash('sha256', token, 'hex');
}

/** A token as the store gives it back: neither its secret (never stored) nor its hash. */
export interface TokenRecord {
  readonly id: number;
  readonly user: string;
  readonly scopes: Scope[];
  readonly admin: boolean;
  readonly name: string | null;
  readonly createdAt: Date;
  readonly expiresAt: Date | null;
  readonly revokedAt: Date | null;
}

export interface NewTokenRecord {
  readonly hash: string;
  readonly user: string;
  readonly scopes: readonly Scope[];
  readonly admin: boolean;
  readonly name: string | null;
  readonly expiresAt: Date | null;
  /** When it is created, if the caller derived `expiresAt` from it (so that the lifetime is exact); else now. */
  readonly createdAt?: Date;
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

/** A token as GET /tokens and `token list --json` show it: absent values are left out, never null. */
export interface TokenView {
  id: number;
  user: string;
  scopes: Scope[];
  admin: boolean;
  createdAt: string;
  status: TokenStatus;
  name?: string;
  expiresAt?: string;
  revokedAt?: string;
}

/** The one view of a token for both: never its secret (which the store does not have) nor its hash. */
export function tokenView(record: TokenRecord, now = Date.now()): TokenView {
  const view: TokenView = {
    id: record.id,
    user: record.user,
    scopes: record.scopes,
    admin: record.admin,
    createdAt: record.createdAt.toISOString(),
    status: tokenStatus(record, now),
  };
  if (record.name !== null) view.name = record.name;
  if (record.expiresAt !== null) view.expiresAt = record.expiresAt.toISOString();
  if (record.revokedAt !== null) view.revokedAt = record.revokedAt.toISOString();
  return view;
}

/**
 * A new token: its secret, to be shown once, and the record to store, which holds only the secret's
 * hash. The caller stores the record (`store.createToken(record).catch(tokenCreateFailure)`), so the
 * secret never reaches the store. Throws TokenRequestError for a request no token can be made for.
 */
export function newToken(req: TokenRequest, now = Date.now()): { secret: string; record: NewTokenRecord } {
  const problem = userNameProblem(req.user);
  if (problem) throw new TokenRequestError(`user name ${problem}`);
  const nameProblem = req.name === undefined ? null : userNameProblem(req.name);
  if (nameProblem) throw new TokenRequestError(`token name ${nameProblem}`);
  const scopes = req.scopes === undefined || req.scopes.length === 0 ? [...SCOPES] : [...new Set(req.scopes)];
  const secret = generateToken();
  const record: NewTokenRecord = {
    hash: hashToken(secret),
    user: req.user,
    scopes,
    admin: req.admin ?? false,
    name: req.name ?? null,
    // One instant for both, so that expiresAt - createdAt is exactly the lifetime asked for.
    createdAt: new Date(now),
    expiresAt: req.expiresInMs === undefined ? null : new Date(now + req.expiresInMs),
  };
  return { secret, record };
}

/**
 * Rethrows why the store refused a new token: its refusal to pass TOKEN_ID_MAX in words a user can act
 * on, anything else as it is. For `.catch` after `store.createToken`.
 */
export function tokenCreateFailure(error: unknown): never {
  if (!(error instanceof Error) || !error.message.includes(ID_GUARD)) throw error;
  throw new Error(
    `no token id is left: token ids end at ${TOKEN_ID_MAX} (2^53 - 1, so that every client reads them exactly), and this ` +
      'store has given out the last one (an import of a very large id, by an earlier version, can lead there)',
    { cause: error },
  );
}
