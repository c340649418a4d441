import { Type, type Static } from 'typebox';
import { SCOPES, USER_MAX_CHARS, type Scope } from '../../../domain/principal.js';
import { DURATION } from '../../../domain/duration.js';
import { TOKEN_ID_MAX } from '../../../domain/token.js';

/**
 * The schemas of the /tokens routes, published under components.schemas (see schemas.ts). Responses are
 * closed (additionalProperties: false), so that the serializer never lets a field through that the
 * document does not name: a token's hash, above all.
 */

/** The fields a token request may carry; any other is refused (see NewTokenSchema). */
export const NEW_TOKEN_FIELDS = ['user', 'scopes', 'admin', 'expiresIn', 'name'] as const;

/**
 * A user's or a token's name, as far as a schema says it: its length (code points, as userNameProblem
 * counts them). Its characters are in the description only: the rule is Unicode's (general categories
 * Cc, Cf, Cs, Zl, Zp, with joiners kept where scripts need them), which a pattern could say only with
 * property escapes and lookbehind, read differently or not at all outside a regular expression's
 * Unicode mode; and the server's refusal names the character it found, which a schema refusal cannot.
 */
const NAME_LENGTH = { minLength: 1, maxLength: USER_MAX_CHARS };
const NAME_CHARACTERS =
  'no control characters, invisible format characters (bidirectional controls, zero-width characters) or line separators; ' +
  'no leading or trailing whitespace (the server checks these: 400, 40007)';

const ScopeSchema = Type.Unsafe<Scope>(Type.String({ enum: [...SCOPES] }));

export const NewTokenSchema = Type.Object(
  {
    user: Type.String({
      ...NAME_LENGTH,
      description: `The user the token acts for: 1 to ${USER_MAX_CHARS} characters; ${NAME_CHARACTERS}`,
    }),
    scopes: Type.Optional(
      Type.Array(ScopeSchema, {
        minItems: 1,
        maxItems: 16,
        description: `What the token may do; default: all of ${SCOPES.join(', ')}. Repeats count once; an empty list is refused`,
      }),
    ),
    admin: Type.Optional(
      Type.Boolean({
        default: false,
        description: 'An admin token (as `token create --admin`): lists every user\'s plants and webhook endpoints, and manages every token',
      }),
    ),
    expiresIn: Type.Optional(
      Type.String({
        pattern: DURATION.source,
        description:
          'Lifetime, as for `token create --expires-in`: a whole number 0–999999 and s, m, h or d (90s, 15m, 12h, 30d), or 0 ' +
          '(a token expired from the start). Default: no expiry',
      }),
    ),
    name: Type.Optional(
      Type.String({ ...NAME_LENGTH, description: `A label shown in listings; the same rules as a user name: 1 to ${USER_MAX_CHARS} characters; ${NAME_CHARACTERS}` }),
    ),
  },
  {
    $id: 'NewToken',
    description:
      'A token to create. Unlike a NewPlant, unknown fields are refused (400, 40007): a misspelt `scopes` must not make a token with every scope',
  },
);
export type NewTokenBody = Static<typeof NewTokenSchema>;

const DateTime = (description: string) => Type.String({ format: 'date-time', description });

const TOKEN_FIELDS = {
  id: Type.Integer({ minimum: 1, maximum: TOKEN_ID_MAX, description: 'The token id, as `token list` shows it and DELETE /tokens/{id} takes it; at most 2^53 - 1, so a JSON number holds it exactly' }),
  user: Type.String({ description: 'The user it acts for' }),
  scopes: Type.Array(ScopeSchema),
  admin: Type.Boolean(),
  name: Type.Optional(Type.String({ description: 'Its label; absent when it has none' })),
  createdAt: DateTime('When it was created'),
  expiresAt: Type.Optional(DateTime('When it expires; absent when it never does')),
  revokedAt: Type.Optional(DateTime('When it was revoked; absent while not revoked')),
  status: Type.Unsafe<TokenStatusName>(
    Type.String({ enum: ['active', 'expired', 'revoked'], description: 'As `token list` shows it, at the time of the answer' }),
  ),
};
type TokenStatusName = 'active' | 'expired' | 'revoked';

export const TokenSchema = Type.Object(TOKEN_FIELDS, {
  $id: 'Token',
  additionalProperties: false,
  description: 'A token\'s record: never its secret, nor its hash',
});
export type TokenView = Static<typeof TokenSchema>;

export const CreatedTokenSchema = Type.Object(
  {
    ...TOKEN_FIELDS,
    secret: Type.String({ description: 'The bearer token (pst_ + 256 random bits, base64url). Shown in this answer only; the store keeps its SHA-256 hash' }),
  },
  { $id: 'CreatedToken', additionalProperties: false, description: 'A new token\'s record with its secret (shown once)' },
);
export type CreatedTokenView = Static<typeof CreatedTokenSchema>;

/** The schemas the token routes add in their scope (index.ts), in the order /openapi.json lists them. */
export const TOKEN_SCHEMAS = [NewTokenSchema, CreatedTokenSchema, TokenSchema];
