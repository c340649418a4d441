import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { DURATION_RULE, parseDuration } from '../../../domain/duration.js';
import type { Principal } from '../../../domain/principal.js';
import { newToken, parseTokenId, tokenCreateFailure, TokenRequestError, tokenView } from '../../../domain/token.js';
import type { Store } from '../../../store/store.js';
import { REALM, type AuthSteps } from '../../auth/index.js';
import type { Hook } from '../../auth/verifier.js';
import { ApiError, ERRORS } from '../../errors.js';
import { AUTHENTICATION_ERRORS, BODY_ERRORS, errorResponses, ref, SECURITY, TAG } from '../../schemas.js';
import {
  CreatedTokenSchema, NEW_TOKEN_FIELDS, NewTokenSchema, TOKEN_SCHEMAS, TokenSchema, type CreatedTokenView, type NewTokenBody,
} from './schemas.js';

const TokenParams = Type.Object({
  // No constraint here: a schema failure on a path parameter would be answered 40004 (a plant id); an id
  // that cannot exist is simply not found (404 40403), as for webhook endpoints.
  id: Type.String({ description: 'The token id, as POST /tokens, GET /tokens or `token list` gave it' }),
});

/**
 * Which errors the /tokens routes can answer about the caller's token: those of any route behind a token
 * (a JWT whose key cannot be fetched included: 50302), but no 40300, since no route here needs a scope.
 */
const TOKEN_AUTH_ERRORS = AUTHENTICATION_ERRORS.filter((row) => row !== ERRORS.insufficientScope);

/**
 * POST /tokens' step after `authenticate`: only an admin token (`token create --admin`, or a JWT with
 * plants:admin) makes tokens. A 403 with the RFC 6750 challenge, naming plants:admin: the scope a JWT needs
 * (for an opaque token, the flag that --admin sets).
 */
const requireAdmin: Hook = function checkAdmin(request, _reply, done) {
  if (request.principal.admin) return done();
  done(new ApiError(ERRORS.adminRequired, ERRORS.adminRequired.message, {
    'www-authenticate': `Bearer realm="${REALM}", error="insufficient_scope", scope="plants:admin"`,
  }));
};

/** Whose tokens a caller sees and revokes: its user's, or, for an admin token, everyone's (undefined). */
const ownerOf = (principal: Principal): string | undefined => (principal.admin ? undefined : principal.user);

const invalid = (detail: string): ApiError =>
  new ApiError(ERRORS.invalidTokenRequest, `${ERRORS.invalidTokenRequest.message}: ${detail}`);

/**
 * The request's token, checked beyond its schema: no unknown field (Fastify's ajv would drop them
 * silently under additionalProperties: false, and a misspelt "scopes" would then make a token with every
 * scope) and a duration that parses.
 */
function tokenRequest(body: NewTokenBody) {
  const unknown = Object.keys(body).find((key) => !(NEW_TOKEN_FIELDS as readonly string[]).includes(key));
  if (unknown !== undefined) throw invalid(`unknown field ${JSON.stringify(unknown.slice(0, 64))}`);
  const expiresInMs = body.expiresIn === undefined ? undefined : parseDuration(body.expiresIn);
  // The schema's pattern is the duration's, so this cannot happen; kept so that the two cannot drift apart.
  if (expiresInMs === null) throw invalid(`expiresIn ${DURATION_RULE}`);
  return { user: body.user, scopes: body.scopes, admin: body.admin ?? false, name: body.name, expiresInMs };
}

/** The token the request asks for: its secret and the record to store; a request no token can be made for is 40007. */
function requestedToken(body: NewTokenBody): ReturnType<typeof newToken> {
  try {
    return newToken(tokenRequest(body));
  } catch (error) {
    throw error instanceof TokenRequestError ? invalid(error.message) : error;
  }
}

export interface TokenRoutesOptions {
  readonly store: Store;
  /** The app's authentication steps (shared with the other routes: one token cache). */
  readonly auth: AuthSteps;
}

/**
 * Token management over HTTP, as the `token` commands do it from a shell: an admin token creates
 * tokens; every token lists and revokes its own user's (an admin's, everyone's). Revocation reaches the
 * token caches of every instance within REVOCATION_WITHIN_MS, as from the CLI: they re-read a token
 * from the store at least every TOKEN_CACHE_TTL_MS.
 */
export const tokenRoutes: FastifyPluginAsyncTypebox<TokenRoutesOptions> = async (app, { store, auth }) => {
  // This scope's schemas, before its routes name them.
  for (const schema of TOKEN_SCHEMAS) app.addSchema(schema);
  const guard = [...auth.identify, ...auth.throttle];

  app.post(
    '/tokens',
    {
      // The admin check comes before the body is read: a caller that may not create tokens learns
      // nothing about what a valid request would be.
      onRequest: [...auth.identify, requireAdmin, ...auth.throttle],
      config: { invalidBody: ERRORS.invalidTokenRequest },
      schema: {
        summary: 'Create a token',
        operationId: 'createToken',
        tags: [TAG.tokens],
        description:
          'Admin tokens only (`token create --admin`, or a JWT with `plants:admin`); no scope is needed beyond that. Creates an opaque ' +
          'token for any user, with any scopes and admin or not, as `plantstore token create` does. The answer carries the secret, shown ' +
          'this once; the store keeps only its hash.',
        security: SECURITY,
        body: ref<NewTokenBody>(NewTokenSchema),
        response: {
          201: { description: 'Created; the secret is in this answer only', ...ref(CreatedTokenSchema) },
          ...errorResponses(...BODY_ERRORS, ERRORS.invalidTokenRequest, ...TOKEN_AUTH_ERRORS, ERRORS.adminRequired),
        },
      },
    },
    async (request, reply) => {
      const { secret, record: unsaved } = requestedToken(request.body);
      const record = await store.tokens.createToken(unsaved).catch(tokenCreateFailure);
      const created: CreatedTokenView = { ...tokenView(record, Date.now()), secret };
      return reply.code(201).send(created);
    },
  );

  app.get(
    '/tokens',
    {
      onRequest: guard,
      schema: {
        summary: 'List tokens',
        operationId: 'listTokens',
        tags: [TAG.tokens],
        description:
          'The tokens of the caller\'s user (an admin token: every user\'s), active, expired and revoked, in creation order; never a secret ' +
          'nor a hash. Any token may list its own user\'s: no scope is needed.',
        security: SECURITY,
        response: {
          200: { description: 'The tokens', ...Type.Array(ref(TokenSchema)) },
          ...errorResponses(...TOKEN_AUTH_ERRORS),
        },
      },
    },
    async (request) => {
      const now = Date.now();
      return (await store.tokens.listTokens(ownerOf(request.principal))).map((record) => tokenView(record, now));
    },
  );

  app.delete(
    '/tokens/:id',
    {
      onRequest: guard,
      schema: {
        summary: 'Revoke a token',
        operationId: 'revokeToken',
        tags: [TAG.tokens],
        description:
          'Revokes a token of the caller\'s user (an admin token: any user\'s), the caller\'s own included; no scope is needed. Every server ' +
          'refuses it within 5 seconds (REVOCATION_WITHIN_MS), as after `plantstore token revoke`. A token already revoked is not found ' +
          '(404), as `token revoke` says "no active token".',
        security: SECURITY,
        params: TokenParams,
        response: {
          204: { description: 'Revoked', type: 'null' },
          ...errorResponses(...TOKEN_AUTH_ERRORS, ERRORS.tokenNotFound, ...BODY_ERRORS),
        },
      },
    },
    async (request, reply) => {
      // Exactly, or not at all: an id past 2^53 - 1 would round to another token's.
      const id = parseTokenId(request.params.id);
      // One statement checks the owner and revokes: unknown, another user's and already revoked are alike.
      if (id === null || !(await store.tokens.revokeToken(id, ownerOf(request.principal)))) {
        throw new ApiError(ERRORS.tokenNotFound);
      }
      return reply.code(204).send(null);
    },
  );
};
