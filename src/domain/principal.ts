export const SCOPES = ['plants:read', 'plants:write', 'webhooks:manage'] as const;
export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/**
 * The `tokenId` of a principal established from a JWT: a JWT has no record in this store (`token list`
 * does not show it), so it has no id; real ids start at 1.
 */
export const NO_TOKEN_ID = -1;

/** Who is calling, as established from a bearer token. */
export interface Principal {
  /** The opaque token's id, as `token list` shows it; NO_TOKEN_ID for a JWT. */
  readonly tokenId: number;
  readonly user: string;
  readonly scopes: readonly Scope[];
  /**
   * An admin lists every user's plants; it still creates and deletes only its own. `token create --admin`,
   * or a JWT with the `plants:admin` scope.
   */
  readonly admin: boolean;
}

const USER_MAX_CHARS = 128;
// No control characters (they would garble `token list` and logs), no unpaired surrogates, no
// surrounding whitespace: a user name is typed on a command line and shown in tables.
const USER_NAME = /^(?![\s])[^\p{Cc}\p{Cs}]*(?<![\s])$/u;

/** Why a user name is unacceptable, or null when it is fine. */
export function userNameProblem(name: string): string | null {
  if (name.length === 0) return 'must not be empty';
  if ([...name].length > USER_MAX_CHARS) return `must be at most ${USER_MAX_CHARS} characters`;
  if (!USER_NAME.test(name)) return 'must not contain control characters or start or end with whitespace';
  return null;
}
